"""Reading the small text files a user names (scenarios, the agent's config, saved ``lctl`` output).

One place refuses what is not a file: a directory, or a device such as ``/dev/zero`` or
``/dev/urandom``, which would otherwise be read until memory runs out.  A pipe (``<(lctl
get_param ...)``) is read as a file is, and so is ``/dev/null`` (empty).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pfstune.errors import UserError


def check_is_a_file(path: str | Path, what: str, error: type[UserError] = UserError) -> None:
    """Raise ``error`` naming ``path`` and ``what`` unless it is a regular file, a pipe, /dev/null or absent.

    An absent or unreadable path is left to the caller's own open, whose message says why.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode):
        raise error(f"{path}: is a directory, not {what}")
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or _is_dev_null(path):
        return  # /dev/null reads as an empty file: `--config /dev/null` is how one says "no config"
    raise error(f"{path}: is a device or socket, not {what}")


def _is_dev_null(path: str | Path) -> bool:
    try:
        return os.path.samefile(path, os.devnull)
    except OSError:
        return False
