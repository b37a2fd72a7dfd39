"""One probe of a Lustre client tree: read every client OSC's and llite's files into a snapshot.

:class:`Prober` finds the client devices under a root (``/`` on a real client, or a tree that
``pfstune sim serve`` keeps live), remembers where each of their files is, and on every
:meth:`Prober.probe` reads and parses them into a :class:`~pfstune.lustre.types.Snapshot`::

    prober = Prober(Path("/"), files=MINIMAL_FILES)   # what the agent needs, nothing more
    snapshot = prober.probe(time.monotonic())
    snapshot["osc"]["testfs-OST0000-osc-ffff8881234abcd0"]["rpc_stats"]["pages_per_rpc"]["write"]

A real client changes under the reader, so a probe never raises because of what it finds and
never fills in a value it did not read.  Each of these leaves something out of the snapshot and
logs a warning on the ``pfstune.lustre`` logger (once per file and kind of problem until the file
reads cleanly again, so a 0.5 s probe loop does not flood the log):

- a device whose directories vanished between discovery and the read (unmounted): left out of
  this snapshot, and the next probe re-discovers;
- a file that vanished, became a directory, cannot be read (permission, EIO, ENODEV): that key
  is left out; a vanished file also triggers a re-discovery;
- a file that is half-written or garbled (no final newline, NUL bytes inside a line, lines that
  do not fit its format, histogram rows missing): that key is left out.  Partial data is not
  kept because Lustre omits zero counters: a stats file missing a line would read as a zero;
- in a tree given as the root, a file that cannot be Lustre's: a pipe (it would block the probe
  at open) or a device is left out at discovery, a file longer than :data:`MAX_FILE_BYTES` (a
  link to ``/dev/zero`` would be read until memory runs out) at the read;
- a debugfs (``/sys/kernel/debug``) the user may not read (non-root): the debugfs files
  (``osc.*.stats``, ``llite.*.stats``, ``read_ahead_stats``, ``max_cached_mb``) are left out, with
  one warning for the life of the prober.

New devices (a new mount, an added OST) are picked up at the next discovery: every
``rediscover_every`` probes, or at once after a read found something gone.

:meth:`Prober.probe_table` is the agent's probe: the same discovery, but only the files the
features read, read and parsed by the Rust extension (``pfstune._pfsim.StatsReader``) straight
into a :class:`~pfstune.lustre.table.ProbeTable` (0.03 ms per OSC instead of 0.13 ms on the
machine of docs/performance.md).  Its parsers accept a strict subset of what the Python ones do,
with the same numbers (tested); a device with anything else in its files, or a file it could not
read, is read again by the per-device Python reader above, so every rule of this docstring holds
for it too.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import time as _time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from pfstune.lustre.layout import DEBUGFS_BASE, PARAM_BASES, discover
from pfstune.lustre.parse import (
    ParseError,
    parse_import,
    parse_key_values,
    parse_osc_stats,
    parse_rpc_stats,
    parse_scalar,
    parse_stats,
)
from pfstune.lustre.table import HIST_COLUMNS, RPC_LINES, TUNABLES, OscTable, ProbeTable, StatsTable, scalar_number
from pfstune.lustre.types import LliteSnapshot, OscSnapshot, Snapshot

try:  # the Rust extension reads the files for probe_table(); without it the Python parsers do
    from pfstune._pfsim import StatsReader
except ImportError:  # pragma: no cover - a source tree without the built extension
    StatsReader = None

log = logging.getLogger("pfstune.lustre")

#: The most a file a probe reads may hold.  Lustre's are a few KiB (``rpc_stats`` of a busy OSC
#: is about 5 KiB); a longer one is not Lustre's, such as a link to ``/dev/zero`` in a copied
#: tree, which would otherwise be read until memory runs out.  pfsim's fast reader has the same.
MAX_FILE_BYTES = 1 << 20


class _TooLong(Exception):
    """A file longer than :data:`MAX_FILE_BYTES`."""


def _read_small_file(path: str) -> bytes:
    """The whole file, read unbuffered until EOF (a seq_file may stop a read at a page boundary)."""
    chunks = []
    total = 0
    with open(path, "rb", buffering=0) as file:
        while chunk := file.read(65536):
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise _TooLong(path)
            chunks.append(chunk)
    return b"".join(chunks)


def _not_a_file(entry: os.DirEntry[str]) -> str | None:
    """Why ``entry`` is not a regular file, as every file of Lustre's trees is; None if it is one.

    The type comes with the directory listing (no stat), except for a link, which is followed.
    """
    try:
        if entry.is_file():
            return None
        return "is a directory, not a file" if entry.is_dir() else "not a regular file"
    except OSError:
        return None  # gone or unreadable: the read that follows says so


#: One-line OSC files read into ``tunables`` (those that exist: 2.10 has no ``short_io_bytes``).
OSC_SCALARS: tuple[str, ...] = (
    "max_pages_per_rpc",
    "max_rpcs_in_flight",
    "max_dirty_mb",
    "cur_dirty_bytes",
    "cur_grant_bytes",
    "cur_lost_grant_bytes",
    "cur_dirty_grant_bytes",
    "short_io_bytes",
    "checksums",
    "checksum_type",
    "resend_count",
    "grant_shrink_interval",
    "idle_timeout",
    "active",
)
#: Every OSC file a probe reads by default.
OSC_FILES: tuple[str, ...] = ("rpc_stats", "stats", "import", "osc_stats", *OSC_SCALARS)

#: One-line llite files read into ``tunables`` (``checksum_pages`` is the 2.10 name of ``checksums``).
LLITE_SCALARS: tuple[str, ...] = (
    "max_read_ahead_mb",
    "max_read_ahead_per_file_mb",
    "max_read_ahead_whole_mb",
    "read_ahead_async_file_threshold_mb",
    "read_ahead_range_kb",
    "max_read_ahead_async_active",
    "checksums",
    "checksum_pages",
    "fast_read",
    "statahead_max",
    "statahead_agl",
)
#: Every llite file a probe reads by default.
LLITE_FILES: tuple[str, ...] = ("stats", "read_ahead_stats", "max_cached_mb", *LLITE_SCALARS)

#: Everything: ``osc.<file>`` for :data:`OSC_FILES` and ``llite.<file>`` for :data:`LLITE_FILES`.
DEFAULT_FILES: frozenset[str] = frozenset(
    [f"osc.{name}" for name in OSC_FILES] + [f"llite.{name}" for name in LLITE_FILES]
)

#: What the tuning agent needs and nothing else (7 files per OSC, one per mount, no import):
#: the RPC histograms and counters, the two tuned parameters, the dirty-cache and grant state
#: that bound write RPCs, and the mount's ``stats`` for the application's request sizes (DIAL's
#: ``llite_stats_*`` features; without it the model would see NaN where it was trained on
#: values).  ``osc.stats`` and ``llite.stats`` are in debugfs, so they need root.
MINIMAL_FILES: frozenset[str] = frozenset(
    {
        "llite.stats",
        "osc.rpc_stats",
        "osc.stats",
        "osc.max_pages_per_rpc",
        "osc.max_rpcs_in_flight",
        "osc.max_dirty_mb",
        "osc.cur_dirty_bytes",
        "osc.cur_grant_bytes",
    }
)

#: Files whose text is not one line, and the snapshot keys their parser fills.
STRUCTURED_FILES: frozenset[str] = frozenset(
    {"rpc_stats", "stats", "read_ahead_stats", "import", "osc_stats", "max_cached_mb"}
)


def parse_param(param: str, text: str, problems: list[str]) -> dict[str, Any]:
    """Parse the text of the file ``param`` into the snapshot keys it fills.

    Routes by file name: ``rpc_stats``, ``stats`` and ``read_ahead_stats`` (with their
    ``*_header``), ``import`` (the mapping under its ``import:`` line), ``osc_stats``,
    ``max_cached_mb``; anything else is a one-line value, returned as ``{"tunables": {param:
    value}}``.  Damage is described in ``problems``; raises :class:`ParseError` if the text is
    not that format at all.
    """
    if param == "rpc_stats":
        return {"rpc_stats": parse_rpc_stats(text, problems)}
    if param in ("stats", "read_ahead_stats"):
        header, counters = parse_stats(text, problems)
        return {param: counters, f"{param}_header": header} if header else {param: counters}
    if param == "import":
        parsed = parse_import(text, problems)
        # The file is one mapping under "import:"; the snapshot keeps what is inside it.
        inner = parsed.get("import")
        return {"import": inner if len(parsed) == 1 and isinstance(inner, dict) else parsed}
    if param == "osc_stats":
        header, values = parse_osc_stats(text, problems)
        return {"osc_stats": values, "osc_stats_header": header} if header else {"osc_stats": values}
    if param == "max_cached_mb":
        return {"max_cached_mb": parse_key_values(text, problems)}
    return {"tunables": {param: parse_scalar(text)}}


def merge_param(entry: dict[str, Any], parts: dict[str, Any]) -> None:
    """Add what :func:`parse_param` returned to a device's snapshot entry."""
    for key, value in parts.items():
        if key == "tunables":
            entry.setdefault("tunables", {}).update(value)
        else:
            entry[key] = value


@dataclass
class _Device:
    """A device found at discovery: its directories and where each wanted file of it is."""

    kind: str
    name: str
    dirs: list[str]
    files: dict[str, str] = field(default_factory=dict)  # param -> path, first base in lctl order


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK | os.X_OK)


class Prober:
    """Reads a Lustre client tree into snapshots, tolerating a client that changes underneath.

    Lifecycle: construct (nothing is read yet), then call :meth:`probe` on every tick.  The
    first probe discovers the devices; later probes reuse what was found (one ``open``/``read``
    per file, no directory search) and discover again every ``rediscover_every`` probes, after
    a read found a device or file gone, or when :meth:`rediscover` is called.

    ``files`` names what to read as ``osc.<file>`` / ``llite.<file>`` (default
    :data:`DEFAULT_FILES`, everything; :data:`MINIMAL_FILES` is what the agent needs).  A name
    outside :data:`OSC_FILES`/:data:`LLITE_FILES` is read as a one-line value.  ``osc_glob``
    selects OSC devices by name (``"*"``: all client OSCs; server ``-osc-MDT0000`` devices are
    never included).  After each probe, :attr:`issues` lists what was left out and why.
    """

    def __init__(
        self,
        root: Path | str = "/",
        osc_glob: str = "*",
        *,
        files: Iterable[str] | None = None,
        rediscover_every: int = 20,
    ) -> None:
        """Prepare to probe the client tree under ``root``; raises ValueError for a bad ``files`` name."""
        self.root = Path(root)
        self.osc_glob = osc_glob
        self.files = DEFAULT_FILES if files is None else frozenset(files)
        osc_params: list[str] = []
        llite_params: list[str] = []
        order = {
            name: i for i, name in enumerate([f"osc.{p}" for p in OSC_FILES] + [f"llite.{p}" for p in LLITE_FILES])
        }
        for name in sorted(self.files, key=lambda name: (order.get(name, len(order)), name)):
            kind, _, param = name.partition(".")
            if kind not in ("osc", "llite") or not param or "." in param or "/" in param:
                raise ValueError(f"{name!r} is not osc.<file> or llite.<file> (e.g. osc.rpc_stats)")
            (osc_params if kind == "osc" else llite_params).append(param)
        self._params = {"osc": tuple(osc_params), "llite": tuple(llite_params)}
        self.rediscover_every = max(1, rediscover_every)
        self.issues: list[str] = []
        self._oscs: list[_Device] = []
        self._llites: list[_Device] = []
        self._llite_of: dict[str, str] = {}  # OSC name -> llite name
        self._probes_since_discovery = 0
        self._stale = True
        self._warned: dict[str, str] = {}  # what was warned about -> kind of problem
        self._list_failures: set[str] = set()  # trees ("<base>/<kind>") that could not be listed
        self._reader: Any = None  # the extension's reader of the devices found at the last discovery
        self._fast_fallbacks = 0  # devices the extension left to the Python parsers (warned once)

    # --- discovery ---------------------------------------------------------------------------

    def rediscover(self) -> None:
        """Make the next probe find the devices again."""
        self._stale = True

    def _discover(self) -> None:
        found = discover(self.root)
        bases = list(PARAM_BASES)
        debugfs = self.root / DEBUGFS_BASE
        if debugfs.parent.exists() and not _readable(debugfs.parent):
            bases.remove(DEBUGFS_BASE)
            self._warn(
                "debugfs",
                "unreadable",
                f"{debugfs.parent} is not readable (debugfs needs root): osc.*.stats, llite.*.stats, "
                "read_ahead_stats and max_cached_mb are left out",
            )
        else:
            self._clear("debugfs")
        for warning in found.warnings:
            if "debug" not in warning:  # the debugfs warning was given above, once
                self._warn(f"discovery:{warning}", "discovery", warning)
        self._list_failures.clear()
        self._oscs = [
            self._device("osc", osc.name, bases) for osc in found.oscs if fnmatch.fnmatchcase(osc.name, self.osc_glob)
        ]
        self._llite_of = {osc.name: osc.llite for osc in found.oscs}
        self._llites = [self._device("llite", llite.name, bases) for llite in found.llites]
        for key, kind in list(self._warned.items()):
            if kind == "list" and key not in self._list_failures:
                del self._warned[key]  # listable again: warn anew if it fails later
        self._probes_since_discovery = 0
        self._stale = False
        self._reader = None  # built for these devices at the next probe_table()

    def _device(self, kind: str, name: str, bases: list[str]) -> _Device:
        device = _Device(kind, name, [])
        wanted = set(self._params[kind])
        for base in bases:
            directory = self.root / base / kind / name
            try:
                # scandir, not listdir: each entry's type comes with the listing (d_type), free
                with os.scandir(directory) as listing:
                    entries = {entry.name: entry for entry in listing if entry.name in wanted}
            except FileNotFoundError:
                continue
            except OSError as err:
                # One warning per tree, not per device: 1,000 OSCs would otherwise give 1,000 lines.
                message = (
                    f"{directory}: cannot list ({err.strerror}); its files are left out "
                    f"(other devices under {base}/{kind} that cannot be listed are not named)"
                )
                self._warn(f"{base}/{kind}", "list", message)
                self._list_failures.add(f"{base}/{kind}")
                continue
            device.dirs.append(str(directory))
            for param, entry in entries.items():
                path = str(directory / param)
                problem = None if param in device.files else _not_a_file(entry)
                if problem:
                    # a pipe would block the probe at open; Lustre's own files are regular files
                    self._warn(path, "special", f"{path}: {problem}; left out")
                    continue
                device.files.setdefault(param, path)
        # Keep the order of the parameter list, so snapshots list keys the same way every time.
        device.files = {param: device.files[param] for param in self._params[kind] if param in device.files}
        return device

    # --- probing -----------------------------------------------------------------------------

    def probe(self, time: float | None = None) -> Snapshot:
        """Read every selected file of every device into a snapshot taken at ``time``.

        ``time`` is the probe clock's reading (default: ``time.time()``); it is stored as the
        snapshot's ``time``.  Never raises for what it finds in the tree; see the module docstring.
        """
        when = _time.time() if time is None else time
        self._start_probe()
        return self._read_all(when)

    def _start_probe(self) -> None:
        self.issues = []
        if self._stale or self._probes_since_discovery >= self.rediscover_every:
            self._discover()
        self._probes_since_discovery += 1

    def _read_all(self, when: float) -> Snapshot:
        oscs: dict[str, OscSnapshot] = {}
        for device in self._oscs:
            entry = self._read_device(device)
            if entry is not None:
                oscs[device.name] = cast(OscSnapshot, entry)
        llites: dict[str, LliteSnapshot] = {}
        for device in self._llites:
            entry = self._read_device(device)
            if entry is not None:
                entry["osc"] = [osc for osc in oscs if self._llite_of.get(osc) == device.name]
                llites[device.name] = cast(LliteSnapshot, entry)
        return {"time": when, "osc": oscs, "llite": llites}

    # --- probing into a table ----------------------------------------------------------------

    def probe_table(self, time: float | None = None) -> ProbeTable:
        """What stage 1 of the features needs of every OSC, read at ``time``: a :class:`ProbeTable`.

        The same numbers as ``ProbeTable.from_snapshot(self.probe(time))`` (tested), for a
        fraction of the cost: the Rust extension reads and parses every OSC's ``rpc_stats``,
        ``stats`` and one-line files and every mount's ``stats`` in one call.  Other selected
        files (``import``, ...) are not read: the table does not hold them.  A device whose
        files the extension could not read or did not accept is read the usual way
        (:meth:`probe`'s per-device reader: its warnings, its rediscovery of vanished devices)
        and packed; the first such fallback is logged as a warning, later ones at debug level.
        Never raises for what it finds in the tree.
        """
        when = _time.time() if time is None else time
        self._start_probe()
        if self._reader is None and StatsReader is not None:
            self._reader = StatsReader(
                [(device.kind == "osc", list(self._table_files(device).items())) for device in self._devices()],
                list(TUNABLES),
            )
        if self._reader is None:
            return ProbeTable.from_snapshot(self._read_all(when))
        return self._table_from(self._reader.read(), when)

    def _devices(self) -> list[_Device]:
        return [*self._oscs, *self._llites]

    def _table_files(self, device: _Device) -> dict[str, str]:
        """The files of ``device`` a table needs: the OSCs' rpc_stats, stats and one-line files, the mounts' stats."""
        if device.kind == "llite":
            return {param: path for param, path in device.files.items() if param == "stats"}
        return {
            param: path
            for param, path in device.files.items()
            if param in ("rpc_stats", "stats") or param not in STRUCTURED_FILES
        }

    def _table_from(self, got: Mapping[str, Any], when: float) -> ProbeTable:
        oscs, llites = self._oscs, self._llites
        rows = len(oscs)
        status, scalars, table, mounts = unpack_reading(got, rows, len(llites))
        self._note_refusals(got["refused"], status)

        # Devices the extension left to Python: read them as probe() does, then pack them.
        gone: list[int] = []
        redo_rows: list[int] = []
        redo: list[OscSnapshot] = []
        for k in np.flatnonzero(status[:rows]).tolist():
            entry = self._read_device(oscs[k])
            if entry is None:
                gone.append(k)
                continue
            redo_rows.append(k)
            redo.append(cast(OscSnapshot, entry))
            scalars[k] = entry.get("tunables", {})
        if redo:
            table = _assign(table, redo_rows, OscTable.from_snapshots(redo, [None] * len(redo)))
        mount_rows: list[int] = []
        mount_files: list[tuple[Any, Any]] = []
        for k in np.flatnonzero(status[rows:]).tolist():
            entry = self._read_device(llites[k])
            mount_rows.append(k)
            mount_files.append((entry.get("stats"), entry.get("stats_header")) if entry is not None else (None, None))
        if mount_rows:
            mounts = mounts.assign(mount_rows, StatsTable.from_parsed(mount_files))
        if self._warned:  # what the extension read cleanly reads cleanly again
            for device, state in zip(self._devices(), status.tolist(), strict=True):
                if state == 0:
                    for path in self._table_files(device).values():
                        self._clear(path)
                    self._clear(device.name)

        # each OSC's mount (one more row, never read, for an OSC without one)
        mount_of = {device.name: k for k, device in enumerate(llites)}
        at = [mount_of.get(self._llite_of.get(device.name, ""), len(llites)) for device in oscs]
        table = with_mounts(table, mounts, at)
        kept = list(range(rows))
        if gone:
            vanished = set(gone)
            kept = [k for k in kept if k not in vanished]
            table = table.take(kept)
        return ProbeTable(
            when,
            tuple(oscs[k].name for k in kept),
            tuple(scalars[k] or {} for k in kept),
            table,
        )

    def _note_refusals(self, refused: list[tuple[int, str, str]], status: Any) -> None:
        devices = self._devices()
        for index, param, why in refused:
            if status[index] != 1:
                continue  # unreadable: the Python reader says why when it reads the device again
            path = devices[index].files.get(param, param)
            message = f"fast reader did not accept {path} ({why}); that device is read with the Python parsers"
            if self._fast_fallbacks == 0:
                log.warning("%s (further such fallbacks are logged at debug level)", message)
            else:
                log.debug("%s", message)
            self._fast_fallbacks += 1

    def _read_device(self, device: _Device) -> dict[str, Any] | None:
        entry: dict[str, Any] = {}
        for param, path in device.files.items():
            try:
                data = _read_small_file(path)
            except _TooLong:
                self._warn(path, "long", f"{path}: longer than {MAX_FILE_BYTES} bytes, not a Lustre file; left out")
                continue
            except (FileNotFoundError, NotADirectoryError):
                self._stale = True
                if not any(os.path.isdir(directory) for directory in device.dirs):
                    message = f"{device.kind} {device.name} disappeared; left out of this snapshot"
                    self._warn(device.name, "gone", message)
                    return None
                self._warn(path, "gone", f"{path}: disappeared; left out")
                continue
            except IsADirectoryError:
                self._warn(path, "directory", f"{path}: is a directory, not a file; left out")
                continue
            except OSError as err:
                self._warn(path, "read", f"{path}: cannot read ({err.strerror or err}); left out")
                continue
            problems: list[str] = []
            try:
                if param in STRUCTURED_FILES:
                    parts = parse_param(param, data.decode("utf-8", "replace"), problems)
                else:  # a one-line value (most files): what parse_param and merge_param would do
                    value = parse_scalar(data.decode("utf-8", "replace"))
            except ParseError as err:
                self._warn(path, "parse", f"{path}: {err}; left out")
                continue
            if problems:
                self._warn(path, "garbled", f"{path}: damaged ({problems[0]}); left out")
                continue
            if self._warned:
                self._clear(path)
            if param in STRUCTURED_FILES:
                merge_param(entry, parts)
            elif "tunables" in entry:
                entry["tunables"][param] = value
            else:
                entry["tunables"] = {param: value}
        if self._warned:
            self._clear(device.name)
        return entry

    # --- warnings ----------------------------------------------------------------------------

    def _warn(self, key: str, kind: str, message: str) -> None:
        # Warn the first time; repeats of the same problem go to debug until it clears.
        self.issues.append(message)
        if self._warned.get(key) == kind:
            log.debug("%s", message)
            return
        self._warned[key] = kind
        log.warning("%s", message)

    def _clear(self, key: str) -> None:
        self._warned.pop(key, None)


def unpack_reading(
    got: Mapping[str, Any], rows: int, mounts: int
) -> tuple[Any, list[Mapping[str, int | str] | None], OscTable, StatsTable]:
    """One reading of ``StatsReader`` (``rows`` OSC devices, then ``mounts`` llite devices) as
    (status per device, one-line files per device, the OSCs' table without their mounts' stats,
    the mounts' stats).  A device whose status is not 0 holds nothing: the caller reads it again."""
    status = np.frombuffer(got["status"], dtype=np.uint8)
    scalars: list[Mapping[str, int | str] | None] = got["scalars"]
    tunables = np.frombuffer(got["tunables"], dtype=np.float64).reshape(rows, len(TUNABLES)).copy()
    for row, column in got["text_cells"]:  # text in a numeric file: Python's reading of it
        found = scalars[row]
        tunables[row, column] = scalar_number(found.get(TUNABLES[column]) if found is not None else None)
    table = OscTable(
        tunables,
        np.frombuffer(got["rpc_present"], dtype=np.bool_).copy(),
        np.frombuffer(got["rpc_start"], dtype=np.float64).copy(),
        np.frombuffer(got["rpc_lines"], dtype=np.float64).reshape(rows, len(RPC_LINES)).copy(),
        np.frombuffer(got["hist"], dtype=np.float64).reshape(rows, HIST_COLUMNS).copy(),
        {},
        _stats_table(got["osc_names"], got["osc_stats"], rows),
        StatsTable.empty(rows),
    )
    return status, scalars, table, _stats_table(got["llite_names"], got["llite_stats"], mounts)


def with_mounts(table: OscTable, mounts: StatsTable, at: list[int]) -> OscTable:
    """``table`` with OSC k's mount stats taken from row ``at[k]`` of ``mounts`` (``len(mounts)``:
    no mount, a row never read)."""
    return replace(table, llite=StatsTable.concat([mounts, StatsTable.empty(1)]).take(at))


def _stats_table(names: list[str], parts: tuple[bytes, ...], rows: int) -> StatsTable:
    """A :class:`StatsTable` from the extension's (present, start, line, samples, valued, min, max, sum)."""
    present, start, line, samples, valued, low, high, total = parts
    shape = (rows, len(names))

    def grid(data: bytes, dtype: type) -> Any:
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    valued_grid = grid(valued, np.bool_)
    return StatsTable(
        tuple(names),
        np.frombuffer(present, dtype=np.bool_).copy(),
        np.frombuffer(start, dtype=np.float64).copy(),
        grid(line, np.bool_),
        grid(samples, np.int64),
        valued_grid.copy(),  # the extension takes min, max and sum together: summed == valued
        valued_grid,
        grid(low, np.int64),
        grid(high, np.int64),
        grid(total, np.int64),
    )


def _assign(table: OscTable, rows: list[int], packed: OscTable) -> OscTable:
    """``table`` with the OSCs at ``rows`` replaced by those of ``packed`` (in order)."""
    for array in ("tunables", "rpc", "rpc_start", "rpc_lines", "hist"):
        getattr(table, array)[rows] = getattr(packed, array)
    unfolded = {**table.unfolded, **{rows[i]: columns for i, columns in packed.unfolded.items()}}
    return replace(table, unfolded=unfolded, stats=table.stats.assign(rows, packed.stats))
