"""The agent's state directory: the one-agent-per-node lock and the saved original values.

``state_dir`` (default ``/run/pfstune``: tmpfs, cleared at boot, like TuneD's ``/run/tuned``)
holds two files:

``agent.lock``
    ``fcntl.flock(LOCK_EX | LOCK_NB)`` on it is held for the agent's whole life and holds the
    holder's pid.  The kernel drops a flock when its holder dies, even by SIGKILL, so holding the
    lock also proves that no other agent is running: only then may a crashed agent's originals
    be restored.  The file is never removed (removing a locked file lets a third agent lock a
    new inode while the second still holds the old one).

``originals.json``
    ``{"version": 1, "pid", "root", "started", "originals": {LCTL_NAME: {"path", "value"}}}``:
    the value each parameter had before the agent first wrote it.  It is rewritten atomically
    (temporary file, fsync, rename, fsync of the directory) *before* the first write of each
    parameter, so a SIGKILL at any point leaves a complete file that names every parameter that
    may have changed.  It exists exactly while something may need restoring: the actuator
    removes it after a full restore, and :func:`recover` restores and removes one a crashed
    agent left behind.

Lifecycle, as the actuator drives it::

    lock = AgentLock(state_dir); lock.acquire()       # UserError naming the holder's pid if taken
    recover(state_dir, read=..., write=...)           # a previous agent died: put its originals back
    originals = OriginalsFile(state_dir, root)
    originals.save({name: Original(path, value)})     # before the first write of name
    ... writes ...
    restore_originals(originals.originals, ...)       # at exit: put them back
    originals.forget(restored_names)                  # file removed when nothing is left
    lock.release()
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pfstune.errors import UserError
from pfstune.lustre.layout import PARAM_BASES, parse_llite_name, parse_osc_name, split_lctl_name
from pfstune.lustre.limits import ALLOWED, write_order
from pfstune.outputs import PARTIAL_SUFFIX, fsync_directory, replacing

DEFAULT_STATE_DIR = Path("/run/pfstune")
LOCK_FILE = "agent.lock"
ORIGINALS_FILE = "originals.json"
STATE_VERSION = 1

log = logging.getLogger(__name__)

#: Reads a parameter file's text; raises OSError.
ReadFn = Callable[[Path], str]
#: Writes a value into a parameter file; raises OSError.
WriteFn = Callable[[Path, str], None]


class AgentLock:
    """The node-wide lock that lets one agent at a time change parameters.

    ``acquire()`` creates the state directory if needed and takes the lock or raises
    :class:`~pfstune.errors.UserError` naming the pid of the agent that holds it, or saying why the
    directory cannot be used.  Permission problems (a non-root user and ``/run/pfstune``) surface
    as :class:`PermissionError` for the caller to explain.  ``release()`` is idempotent.
    """

    def __init__(self, state_dir: Path) -> None:
        """Prepare the lock of ``state_dir``; nothing is touched until :meth:`acquire`."""
        self.path = state_dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (non-blocking) and write our pid into the lock file."""
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:
            raise
        except OSError as err:  # a missing parent in a read-only tree, a file where the directory should be, ...
            reason = "a file is in the way" if isinstance(err, FileExistsError) else err.strerror or str(err)
            raise UserError(
                f"cannot use {self.path.parent} as the agent's state directory ({reason}); "
                "give a writable one with --state-dir"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            pid = holder_pid(self.path)
            holder = f"pid {pid}" if pid is not None else "a process whose pid is not yet written"
            raise UserError(
                f"another pfstune agent ({holder}) is running on this node: it holds {self.path}; "
                "stop it first (one agent per node), or use --dry-run, which takes no lock"
            ) from None
        # Only the lock holder writes the pid, so a competitor reads either nothing or our pid.
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Release the lock (closing the descriptor drops the flock); safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)


def running_agent(state_dir: Path) -> int | None:
    """The pid of a live agent that holds ``state_dir``'s lock (0 if its pid is not written yet), or
    None when none holds it.  Creates nothing: a dry run looks without taking the lock."""
    path = state_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        return holder_pid(path) or 0
    finally:
        os.close(fd)  # drops the shared lock, if it was taken
    return None


def holder_pid(path: Path) -> int | None:
    """The pid written in a lock file, or None if it is empty or unreadable."""
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Original:
    """A parameter's file (absolute path) and its text before pfstune first wrote it (stripped)."""

    path: str
    value: str


@dataclass(frozen=True)
class SavedState:
    """The content of an ``originals.json``."""

    path: Path
    pid: int
    root: str
    started: str
    originals: dict[str, Original]


def write_json_atomically(path: Path, data: object) -> None:
    """Replace ``path`` with ``data`` as JSON so that it is complete on disk whatever happens next.

    :func:`pfstune.outputs.replacing`: a temporary file in the same directory, fsync, rename
    over ``path``, fsync of the directory (without the last step a power cut may bring back the
    old directory entry).
    """
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    with replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        # a buffered file object raises on a short write (a full /run), where os.write would
        # return a count that is easy to ignore, and a truncated file would replace a good one
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode())


def load_originals(state_dir: Path) -> SavedState | None:
    """The ``originals.json`` of ``state_dir``, or None if there is none.

    Raises :class:`~pfstune.errors.UserError` for a file that is not what pfstune writes: the
    writes are atomic, so a damaged file was edited by hand and a person must look at it.
    """
    path = state_dir / ORIGINALS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:  # a directory, unreadable, not text
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UserError(
            f"{path}: cannot read it as a pfstune originals file ({reason}); restore the values it "
            "lists by hand (lctl set_param NAME=VALUE), then remove it"
        ) from None
    try:
        data = json.loads(text)
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
        originals = {
            str(name): Original(path=str(entry["path"]), value=str(entry["value"]))
            for name, entry in data["originals"].items()
        }
        return SavedState(path, int(data["pid"]), str(data["root"]), str(data["started"]), originals)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise UserError(
            f"{path}: not a pfstune originals file ({err}); restore the values it lists by hand "
            "(lctl set_param NAME=VALUE), then remove it"
        ) from None


class OriginalsFile:
    """``originals.json`` of a running agent: the originals saved so far, and the file that holds them.

    :meth:`save` records a parameter the first time only (the value before pfstune's *first*
    write is the one to restore) and rewrites the file before returning; :meth:`forget` drops
    restored entries and removes the file when none are left.
    """

    def __init__(self, state_dir: Path, root: Path) -> None:
        """An empty record for an agent working on the client tree under ``root``."""
        self.path = state_dir / ORIGINALS_FILE
        self.root = root
        self.started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._originals: dict[str, Original] = {}

    @property
    def originals(self) -> dict[str, Original]:
        """The saved originals by lctl name (a copy)."""
        return dict(self._originals)

    def __contains__(self, name: object) -> bool:
        """Whether the original of lctl name ``name`` is saved."""
        return name in self._originals

    def save(self, entries: Mapping[str, Original]) -> list[str]:
        """Record the entries not yet recorded and write the file; return the names newly recorded."""
        new = [name for name in entries if name not in self._originals]
        if new:
            self._originals.update({name: entries[name] for name in new})
            try:
                self._write()
            except BaseException:
                # not on disk, so not saved: the next save must try them again, and the caller
                # must not write the parameters
                for name in new:
                    del self._originals[name]
                raise
        return new

    def forget(self, names: Iterable[str]) -> None:
        """Drop restored entries; remove the file when nothing is left to restore."""
        for name in names:
            self._originals.pop(name, None)
        if self._originals:
            self._write()
        else:
            self.remove()

    def remove(self) -> None:
        """Remove the file (and forget every entry)."""
        self._originals.clear()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
            fsync_directory(self.path.parent)

    def _write(self) -> None:
        write_json_atomically(
            self.path,
            {
                "version": STATE_VERSION,
                "pid": os.getpid(),
                "root": str(self.root),
                "started": self.started,
                "originals": {name: {"path": o.path, "value": o.value} for name, o in self._originals.items()},
            },
        )


#: What a parameter pfstune writes holds (ASCII digits: ``int()`` would take other scripts').
_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)


def _check_entry(name: str, original: Original, root: str) -> str | None:
    """Why an entry must not be written back (None if it may): allow-listed, and at lctl's place.

    A state file is input, so before writing anything as root check that the path is the file
    lctl would use for that allow-listed name under the recorded root, and nothing else.
    """
    try:
        kind, device, param = split_lctl_name(name)
    except ValueError as err:
        return str(err)
    if not Path(root).is_absolute():  # relative to a working directory that is gone with the agent
        return f"the saved root {root!r} is not an absolute path"
    if (kind, param) not in ALLOWED:
        return f"{kind}.*.{param} is not a parameter pfstune writes"
    client_device = parse_osc_name(device) if kind == "osc" else parse_llite_name(device)
    if client_device is None:
        return f"{device} is not a client {kind} device"
    expected = {str(Path(root) / base / kind / device / param) for base in PARAM_BASES}
    if original.path not in expected:
        return f"path {original.path} is not where lctl keeps {name} under {root}"
    if not _INTEGER.fullmatch(original.value.strip()):  # every parameter pfstune writes is one
        return f"value {original.value!r} is not an integer"
    return None


def _same(a: str, b: str) -> bool:
    a, b = a.strip(), b.strip()
    try:
        return int(a, 10) == int(b, 10)
    except ValueError:
        return a == b


def restore_originals(
    originals: Mapping[str, Original],
    *,
    root: str,
    read: ReadFn,
    write: WriteFn,
    logger: logging.Logger = log,
) -> tuple[list[str], dict[str, str]]:
    """Write each original back and read it again; return (names done, {name: why not} for failures).

    Per device, in :func:`~pfstune.lustre.limits.write_order` (tunables before the
    ``max_dirty_mb`` their restore may raise).  A parameter already at its original is not
    written.  A file that no longer exists (the device was unmounted: a remount resets it
    anyway) counts as done, with a warning.  A kernel error or a value that does not read back
    is a failure, logged; the others are still attempted.  :class:`PermissionError` propagates:
    nothing can be restored without the right to write.
    """
    done: list[str] = []
    failed: dict[str, str] = {}
    by_device: dict[tuple[str, str], list[str]] = {}
    for name, original in originals.items():
        problem = _check_entry(name, original, root)
        if problem is not None:
            logger.error("not restoring %s: %s", name, problem)
            failed[name] = problem
            continue
        kind, device, _ = split_lctl_name(name)
        by_device.setdefault((kind, device), []).append(name)
    for (kind, device), names in by_device.items():
        order = write_order(kind, [split_lctl_name(name)[2] for name in names])
        for param in order:
            name = f"{kind}.{device}.{param}"
            original = originals[name]
            path = Path(original.path)
            try:
                now = read(path)
                if _same(now, original.value):
                    logger.debug("%s is at its original value %s", name, original.value)
                    done.append(name)
                    continue
                write(path, original.value)
                back = read(path)
            except FileNotFoundError:
                logger.warning("%s: %s is gone (device unmounted?); nothing to restore", name, path)
                done.append(name)
                continue
            except PermissionError:
                raise
            except OSError as err:
                reason = f"writing {original.value} into {path}: {err.strerror or err}"
                logger.error("cannot restore %s: %s", name, reason)
                failed[name] = reason
                continue
            if _same(back, original.value):
                logger.info("restored %s=%s (was %s)", name, original.value, now.strip())
                done.append(name)
            else:
                reason = f"wrote {original.value} into {path} but it reads {back.strip()}"
                logger.error("cannot restore %s: %s", name, reason)
                failed[name] = reason
    return done, failed


def recover(state_dir: Path, *, read: ReadFn, write: WriteFn, logger: logging.Logger = log) -> list[str]:
    """Restore what a crashed agent left changed; return the lctl names restored.

    Call it holding :class:`AgentLock` (that is what proves the previous agent is gone).  If
    ``originals.json`` exists, every original in it is written back (each logged), failures are
    logged as errors, and the file is removed either way: it was the previous agent's record,
    and an entry that fails now would fail at every start.  :class:`PermissionError` propagates
    and leaves the file for an agent that has the right to write.
    """
    for stale in state_dir.glob(f".{ORIGINALS_FILE}.*{PARTIAL_SUFFIX}"):
        # A kill between writing the temporary file and the rename; the real file is intact.
        with contextlib.suppress(OSError):
            stale.unlink()
    saved = load_originals(state_dir)
    if saved is None:
        return []
    logger.warning(
        "a previous agent (pid %d, started %s) did not restore %d parameter(s); restoring them from %s",
        saved.pid, saved.started, len(saved.originals), saved.path,
    )  # fmt: skip
    done, failed = restore_originals(saved.originals, root=saved.root, read=read, write=write, logger=logger)
    if failed:
        # the file goes, so the log keeps what a person needs to restore them by hand
        by_hand = ", ".join(f"{name}={saved.originals[name].value!r}" for name in sorted(failed))
        logger.error(
            "%d original(s) could not be restored; restore them by hand (lctl set_param NAME=VALUE): %s",
            len(failed), by_hand,
        )  # fmt: skip
    saved.path.unlink()
    fsync_directory(state_dir)
    return done
