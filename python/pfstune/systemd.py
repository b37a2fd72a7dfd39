"""``sd_notify`` for ``Type=notify`` units: tell systemd the agent is ready, stopping, or its status.

Hand-written (a datagram to ``$NOTIFY_SOCKET``) rather than a dependency: the protocol is one
``sendto`` and the Python bindings (``systemd-python``) need libsystemd headers to build.
"""

from __future__ import annotations

import os
import socket


def notify(message: str) -> bool:
    """Send ``message`` (``READY=1``, ``STOPPING=1``, ``STATUS=...``); False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError:
        return False
    return True
