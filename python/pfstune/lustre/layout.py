"""Where a Lustre client's files live, what its devices are called, and how lctl names them.

Lustre moved its files between releases: 2.10 keeps nearly everything under ``/proc/fs/lustre``;
2.15 splits an OSC across sysfs (``/sys/fs/lustre/osc/<dev>/max_rpcs_in_flight``), procfs
(``/proc/fs/lustre/osc/<dev>/rpc_stats``) and debugfs (``/sys/kernel/debug/lustre/osc/<dev>/stats``)
(lustre-client.md §2.1).  Rather than a table per version, a parameter is found the way
``lctl get_param`` finds it (``cfs_get_param_paths()``): the first of the :data:`PARAM_BASES`
under which ``<kind>/<device>/<param>`` exists.  That handles both layouts, and vendor trees that
moved a file, with one rule.

Client devices are recognised by name (§2.3): an OSC is ``<fs>-OST<4 hex>-osc-<instance hex>``
and an llite instance ``<fs>-<instance hex>``; the OSCs of a mount share its instance hex.  A
server's ``<fs>-OST0000-osc-MDT0000`` devices never match.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

#: The directories lctl searches, in its order, relative to the client root.
PARAM_BASES: tuple[str, ...] = (
    "sys/fs/lustre",
    "sys/kernel/debug/lustre",
    "proc/fs/lustre",
    "proc/sys/lustre",
)

#: The debugfs base; unreadable for non-root users on a real client.
DEBUGFS_BASE = "sys/kernel/debug/lustre"

#: An fsname is 1 to 8 letters, digits, '_' or '-' (mkfs.lustre's check), so it may contain
#: '-' and even '-OST': the device name is read from its end.
_FSNAME = r"(?P<fsname>[A-Za-z0-9_-]{1,8})"
# OST%04x: four hex digits at least, more past 0xffff (an OST index goes up to 0xfffffffe)
_OSC_NAME = re.compile(rf"^{_FSNAME}-OST(?P<index>[0-9a-fA-F]{{4,8}})-osc-(?P<instance>[0-9a-f]{{1,16}})$")
_LLITE_NAME = re.compile(rf"^{_FSNAME}-(?P<instance>[0-9a-f]{{1,16}})$")


@dataclass(frozen=True)
class OscDevice:
    """A client OSC device, e.g. ``testfs-OST0003-osc-ffff88105db50000``."""

    name: str
    fsname: str
    ost_index: int
    instance: str

    @property
    def llite(self) -> str:
        """Name of the llite instance (mount) this OSC belongs to."""
        return f"{self.fsname}-{self.instance}"


@dataclass(frozen=True)
class LliteInstance:
    """A client mount's llite instance, e.g. ``testfs-ffff88105db50000``."""

    name: str
    fsname: str
    instance: str


def parse_osc_name(name: str) -> OscDevice | None:
    """The client OSC named ``name``, or None if it is not one (a server's ``-osc-MDT0000``, junk)."""
    match = _OSC_NAME.match(name)
    if match is None:
        return None
    return OscDevice(name, match["fsname"], int(match["index"], 16), match["instance"])


def parse_llite_name(name: str) -> LliteInstance | None:
    """The llite instance named ``name``, or None if the name is not ``<fs>-<instance hex>``."""
    match = _LLITE_NAME.match(name)
    if match is None:
        return None
    return LliteInstance(name, match["fsname"], match["instance"])


def lctl_name(kind: str, device: str, param: str) -> str:
    """The lctl name of a parameter: ``lctl_name("osc", dev, "max_rpcs_in_flight")``."""
    return f"{kind}.{device}.{param}"


def split_lctl_name(name: str) -> tuple[str, str, str]:
    """``"osc.<dev>.max_rpcs_in_flight"`` -> ``("osc", "<dev>", "max_rpcs_in_flight")``.

    The device is the second dot-separated part (device names have no dots); everything after it
    is the parameter.  Raises ValueError if there are fewer than three parts.
    """
    kind, sep1, rest = name.partition(".")
    device, sep2, param = rest.partition(".")
    if not (sep1 and sep2 and kind and device and param):
        raise ValueError(f"{name!r} is not an lctl name KIND.DEVICE.PARAM")
    return kind, device, param


def param_path(root: Path, kind: str, device: str, param: str) -> Path | None:
    """The file holding ``kind.device.param`` under ``root``, searched as lctl does; None if absent."""
    # Joined as text: the actuator asks several times per write, and pathlib's joins cost more
    # than the lstat itself (about 10 us each; 1,800 writes a tick at 1,000 OSCs).
    top = os.fspath(root).rstrip("/")  # "/" -> "", so that paths start with one slash
    for base in PARAM_BASES:
        path = f"{top}/{base}/{kind}/{device}/{param}"
        if os.path.lexists(path):
            return Path(path)
    return None


def _list_dir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


@dataclass
class Discovery:
    """The client devices found under a root, and what could not be read while looking."""

    oscs: list[OscDevice] = field(default_factory=list)
    llites: list[LliteInstance] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def oscs_of(self, llite: str) -> list[OscDevice]:
        """The OSCs of the mount ``llite``, in OST index order."""
        return [osc for osc in self.oscs if osc.llite == llite]


def discover(root: Path) -> Discovery:
    """Find the client OSC devices and llite instances under ``root`` (``/`` on a real client).

    Looks in every base of :data:`PARAM_BASES` (a 2.15 OSC appears in three of them), keeps the
    names that parse as client devices, and notes a debugfs it cannot list (not root) as a
    warning rather than an error: the sysfs and procfs files are still readable.
    """
    found = Discovery()
    osc_names: set[str] = set()
    llite_names: set[str] = set()
    for base in PARAM_BASES:
        base_dir = root / base
        if base == DEBUGFS_BASE and base_dir.parent.exists() and not os.access(base_dir.parent, os.R_OK | os.X_OK):
            found.warnings.append(f"{base_dir.parent}: not readable (debugfs needs root); stats files are skipped")
            continue
        osc_names.update(_list_dir(base_dir / "osc"))
        llite_names.update(_list_dir(base_dir / "llite"))
    found.oscs = sorted(
        (osc for osc in map(parse_osc_name, osc_names) if osc is not None),
        key=lambda osc: (osc.fsname, osc.instance, osc.ost_index),
    )
    found.llites = sorted(
        (llite for llite in map(parse_llite_name, llite_names) if llite is not None),
        key=lambda llite: llite.name,
    )
    return found
