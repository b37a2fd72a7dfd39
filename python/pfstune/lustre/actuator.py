"""The only code in pfstune that changes a Lustre client: allow-listed, range-checked, verified, restorable.

Design rule 4 lives here, so that no tuner has to be careful: whatever a tuner suggests, the
actuator writes only allow-listed parameters (:mod:`pfstune.lustre.limits`) within Lustre's
ranges, on client devices only, saves each original value before its first write
(:mod:`pfstune.lustre.state`), reads every write back, and puts everything back at the end.

Lifecycle::

    with Actuator(Path("/"), Path("/run/pfstune")) as actuator:
        # __enter__: take the node's agent lock (UserError naming the holder's pid if another
        #   agent runs), then restore the originals a crashed agent left in originals.json.
        actuator.apply("testfs-OST0000-osc-ffff88105db50000", {"max_rpcs_in_flight": 16})
        # apply: validate every value (LimitError: nothing written), save the originals of the
        #   parameters and of what the kernel may change with them, write each changed value
        #   (as lctl does: open O_WRONLY, the ASCII value, no newline), read it back.
        ...
    # __exit__ (normal exit or exception): restore() writes every original back, in an order
    #   that undoes the coupling (tunables first, max_dirty_mb last), verifies it, removes
    #   originals.json, then releases the lock.

A value changed by someone else is left alone.  The actuator remembers what each of its writes
left in force.  When a file no longer holds that value (an administrator's ``lctl set_param``, a
reconnect that lowered ``max_pages_per_rpc``), it logs a warning, stops writing that device until
the agent restarts, and drops the changed parameter's original: the new value is kept at exit,
not overwritten by the one pfstune found.

Signals are the agent's business: it turns SIGTERM/SIGINT into a normal exit, so ``__exit__``
runs.  SIGKILL or a power cut leave ``originals.json`` behind; the next agent restores it at
start.  :meth:`Actuator.restore` is idempotent and may be called at any time (the next
:meth:`~Actuator.apply` saves fresh originals).

Errors: :class:`~pfstune.lustre.limits.ActuatorError` (and its subclasses
:class:`~pfstune.lustre.limits.LimitError` for a refused value and :class:`WriteError` for a
write the kernel refused or that did not stick) concern one apply: the agent logs them and goes
on.  :class:`ActuatorPermissionError` means the agent cannot write at all; it is a
:class:`~pfstune.errors.UserError` and ends the agent with a one-line message.

``dry_run=True`` takes no lock, creates no state file and writes nothing anywhere: each change
is printed once as the ``lctl set_param`` line that would make it, and remembered as a virtual
value so that the next tick does not print it again.  Never ``lctl set_param -P`` (persistent,
cluster-wide): pfstune's changes are runtime, client-local and undone at exit.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from pfstune.errors import UserError
from pfstune.lustre.layout import lctl_name, param_path, parse_llite_name, parse_osc_name, split_lctl_name
from pfstune.lustre.limits import (
    DEFAULT_BRW_PAGES,
    PAGE_SIZE,
    ActuatorError,
    DeviceContext,
    LimitError,
    dirty_mb_after,
    rule,
    write_order,
)
from pfstune.lustre.state import (
    DEFAULT_STATE_DIR,
    AgentLock,
    Original,
    OriginalsFile,
    load_originals,
    recover,
    restore_originals,
    running_agent,
)

__all__ = [
    "Actuator",
    "ActuatorError",
    "ActuatorPermissionError",
    "LimitError",
    "WriteError",
    "brw_pages_from_import",
    "host_ram_bytes",
    "read_param",
    "write_param",
]

#: errno values that mean "you may not write here", as opposed to "the kernel refused the value".
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)
_BRW_SIZE = re.compile(r"^\s*max_brw_size:\s*(\d+)\s*$", re.MULTILINE)
_GRANT_BLOCK = re.compile(r"^\s*grant_block_size:\s*(\d+)\s*$", re.MULTILINE)


def brw_pages_from_import(text: str) -> int | None:
    """The largest RPC the server accepts (``max_brw_size`` of an OSC's ``import``), in pages; None if absent."""
    match = _BRW_SIZE.search(text)
    return int(match[1]) // PAGE_SIZE if match and int(match[1]) >= PAGE_SIZE else None


@dataclass(frozen=True)
class _Plan:
    """What :meth:`Actuator.apply` will do on one device: the values now, the targets, what changes."""

    current: dict[str, int]
    targets: dict[str, int]
    changes: list[str]  # in write order; empty when nothing changes or the device is left alone


class ActuatorPermissionError(UserError):
    """The agent may not write the parameter files (or its state directory): it needs root.

    Not an :class:`~pfstune.lustre.limits.ActuatorError` on purpose: the agent must stop with
    this one-line message, not log it on every tick.
    """


class WriteError(ActuatorError):
    """One or more writes of an :meth:`Actuator.apply` were refused by the kernel or did not read back.

    Raised after every change of the apply was attempted.  ``in_force`` maps each requested
    parameter to the value now in force (the old value where the write failed);
    ``failures`` maps each failed parameter to the reason.
    """

    def __init__(self, message: str, in_force: dict[str, int], failures: dict[str, str]) -> None:
        """Carry what is in force and why each failure happened beside the one-line message."""
        super().__init__(message)
        self.in_force = in_force
        self.failures = failures


#: A parameter file is a few bytes; more than this is not one (the prober's limit is larger:
#: it reads statistics).
MAX_PARAM_BYTES = 64 * 1024


def _open_param(path: Path, flags: int) -> int:
    """Open a parameter file without blocking, refusing anything but a regular file.

    sysfs and procfs files are regular files. A FIFO put in a tunable's place would block the
    agent in ``open()`` (and SIGTERM with it), and ``/dev/zero`` would never end a read.
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a parameter file is one)", str(path))
    return fd


def read_param(path: Path) -> str:
    """The text of a parameter file, as ``lctl get_param`` reads it (at most 64 KiB)."""
    fd = _open_param(path, os.O_RDONLY)
    chunks: list[bytes] = []
    size = 0
    try:
        while size < MAX_PARAM_BYTES:  # seq_file hands out a large file in several reads
            chunk = os.read(fd, MAX_PARAM_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", errors="replace")


def write_param(path: Path, value: str) -> None:
    """Write ``value`` into a parameter file the way ``lctl set_param`` does (``write_param()``).

    ``open(O_WRONLY)``, one ``write()`` of the ASCII value without a newline, close.  The
    kernel's verdict (ERANGE, EINVAL, ...) comes back as the OSError of ``write()``.  O_TRUNC is
    added: sysfs and procfs ignore it (it is what ``echo 16 > file`` does), and a tree of plain
    files (tests, ``pfstune sim serve``) needs it or ``8`` written over ``1024`` reads ``8024``.
    Never O_CREAT: a parameter that does not exist must not be invented.
    """
    try:
        data = value.encode("ascii")
    except UnicodeEncodeError:
        raise OSError(errno.EINVAL, f"{value!r} is not ASCII", str(path)) from None
    fd = _open_param(path, os.O_WRONLY | os.O_TRUNC)
    try:
        written = os.write(fd, data)
    finally:
        os.close(fd)
    if written != len(data):
        raise OSError(errno.EIO, f"short write ({written} of {len(data)} bytes)", str(path))


def host_ram_bytes() -> int | None:
    """This node's physical memory in bytes, or None if the system does not say."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


def _print_line(line: str) -> None:
    print(line, flush=True)


class Actuator:
    """Writes Lustre client parameters safely; a context manager (see the module docstring).

    ``root`` is the client's ``/`` (or a tree laid out like one); ``state_dir`` holds the lock
    and ``originals.json``; ``echo`` receives the dry-run ``lctl set_param`` lines (default:
    stdout); ``ram_bytes`` is the node's RAM for the RAM-based bounds (default: this host's RAM
    when ``root`` is ``/``, else unknown: a tree served for another node does not have this
    host's RAM, and the kernel it emulates checks those bounds itself).

    One thread at a time.  Only devices the caller names are touched, and only client devices:
    a server's ``-osc-MDT0000`` is refused.
    """

    def __init__(
        self,
        root: Path = Path("/"),
        state_dir: Path = DEFAULT_STATE_DIR,
        dry_run: bool = False,
        echo: Callable[[str], None] | None = None,
        logger: logging.Logger | None = None,
        *,
        ram_bytes: int | None = None,
    ) -> None:
        """Prepare an actuator; nothing is read, locked or written until ``__enter__``."""
        # absolute: originals.json records paths under it, and the agent that restores them after
        # a crash may start from another working directory
        self.root = Path(root).absolute()
        self.state_dir = Path(state_dir)
        self.dry_run = dry_run
        self.echo = echo if echo is not None else _print_line
        self.log = logger if logger is not None else logging.getLogger(__name__)
        if ram_bytes is None and self.root.resolve() == Path("/"):
            ram_bytes = host_ram_bytes()
        self.ram_bytes = ram_bytes
        self._lock = AgentLock(self.state_dir)
        self._originals: OriginalsFile | None = None
        self._virtual: dict[str, int] = {}  # dry run: lctl name -> value "written"
        self._server: dict[str, tuple[int, int]] = {}  # OSC -> (brw pages, chunk pages); fixed until remount
        # (kind, device) -> {parameter: the value pfstune's last write of it left}, by device so that
        # checking one device does not look through all of them.  Not the coupled max_dirty_mb: a
        # served tree (`pfstune sim serve`) shows the kernel's coupling only at its next refresh.
        self._left: dict[tuple[str, str], dict[str, int]] = {}
        self._hands_off: set[tuple[str, str]] = set()  # (kind, device) changed outside pfstune: not written again
        self._active = False

    # ---- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> Actuator:
        """Take the lock and recover a crashed agent's originals (dry run: neither)."""
        if self._active:
            raise ActuatorError("this Actuator is already in use (enter it once)")
        if self.dry_run:
            with contextlib.suppress(UserError, OSError):
                if load_originals(self.state_dir) is not None:
                    pid = running_agent(self.state_dir)
                    if pid is not None:  # its own originals, which it restores when it stops
                        self.log.info(
                            "an agent%s is running on this node and has changed parameters (%s); "
                            "this dry run reads them as they are now",
                            f" (pid {pid})" if pid else "",
                            self.state_dir / "originals.json",
                        )
                    else:
                        self.log.warning(
                            "%s exists: a previous agent did not restore its changes; a real run (not --dry-run) "
                            "restores them at start",
                            self.state_dir / "originals.json",
                        )
            self._active = True
            return self
        try:
            self._lock.acquire()
            recover(self.state_dir, read=self._read, write=self._write, logger=self.log)
        except PermissionError as err:
            self._lock.release()
            raise ActuatorPermissionError(
                f"cannot write {err.filename or self.state_dir}: {err.strerror}; the pfstune agent needs root "
                f"(or write access to {self.state_dir} and to the Lustre parameter files under {self.root}); "
                "--dry-run needs neither and prints the lctl set_param lines instead"
            ) from None
        except BaseException:
            self._lock.release()
            raise
        self._originals = OriginalsFile(self.state_dir, self.root)
        self._active = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Restore every original (whatever ended the block), then release the lock."""
        self.close()

    def close(self) -> None:
        """:meth:`restore`, then release the lock; idempotent, never raises an OSError."""
        try:
            self.restore()
        finally:
            self._lock.release()
            self._active = False

    # ---- reading ----------------------------------------------------------------------------------

    def current(self, device: str, param: str, kind: str = "osc") -> int:
        """The value of ``kind.device.param`` now (in a dry run: the last value "written", if any)."""
        self._check_device(kind, device)
        rule(kind, param)
        return self._value(kind, device, param)

    def bounds(self, device: str, param: str, kind: str = "osc") -> tuple[int, int]:
        """The inclusive range ``param`` may take on ``device`` now (server brw_size, RAM, read-ahead chain)."""
        self._check_device(kind, device)
        found = rule(kind, param)
        return found.bounds(self.device_context(device, kind, [param]))

    def device_context(self, device: str, kind: str = "osc", params: list[str] | None = None) -> DeviceContext:
        """What the bounds of ``device`` depend on: brw_size and chunk (OSC ``import``), RAM, and the
        current values of the parameters that bound ``params``."""
        brw_pages, chunk_pages = self._server_limits(device) if kind == "osc" else (DEFAULT_BRW_PAGES, 1)
        values: dict[str, int] = {}
        for param in params or []:
            above = rule(kind, param).bound_by
            while above is not None:  # the read-ahead chain: whole <= per_file <= max
                with contextlib.suppress(ActuatorError):
                    values.setdefault(above, self._value(kind, device, above))
                above = rule(kind, above).bound_by
        return DeviceContext(brw_pages, chunk_pages, self.ram_bytes, values)

    @property
    def saved(self) -> dict[str, Original]:
        """The originals saved so far (lctl name -> file and value), empty in a dry run."""
        return self._originals.originals if self._originals is not None else {}

    @property
    def left_alone(self) -> frozenset[str]:
        """The devices whose values someone else changed since pfstune wrote them; not written again."""
        return frozenset(device for _, device in self._hands_off)

    # ---- writing ----------------------------------------------------------------------------------

    def apply(self, device: str, values: Mapping[str, int], kind: str = "osc") -> dict[str, int]:
        """Set ``values`` on ``device``; return the value now in force for each of them.

        All values are validated first: a parameter that is not allow-listed, a device that is
        not a client's, or a value out of range raises :class:`LimitError` and nothing is
        written.  Then each value that differs from the file is written in
        :func:`~pfstune.lustre.limits.write_order`, its original (and the original of what the
        kernel may change with it, ``max_dirty_mb``) saved to ``originals.json`` first, and read
        back.  A write the kernel refuses (ERANGE, EINVAL, ...) leaves the old value; a value
        that does not read back is undone (the old value written again).  Either is logged, the
        remaining changes are still made, and :class:`WriteError` is raised at the end with
        ``in_force``.  No write at all is possible without permission:
        :class:`ActuatorPermissionError`.

        In a dry run each change is printed once as ``lctl set_param kind.device.param=value``
        and the returned values are the ones that would be in force.
        """
        result = self.apply_many({device: values}, kind)[device]
        if isinstance(result, ActuatorError):
            raise result
        return result

    def apply_many(
        self, requests: Mapping[str, Mapping[str, int]], kind: str = "osc"
    ) -> dict[str, dict[str, int] | ActuatorError]:
        """:meth:`apply` on several devices, with one write of ``originals.json`` for all of them.

        The agent changes many OSCs per tick, and the originals file is rewritten (and synced)
        whenever it gains entries: one save per device would make a node's first tick quadratic
        in its OSCs.  Here every device is validated and planned first, the originals of all
        the planned changes are saved at once, and then the devices are written one by one.

        Returns, per device, what :meth:`apply` would return, or the :class:`ActuatorError` it
        would raise (a device's error does not stop the others).  :class:`ActuatorPermissionError`
        is raised: without permission nothing can be written.
        """
        self._check_active()
        results: dict[str, dict[str, int] | ActuatorError] = {}
        plans: dict[str, _Plan] = {}
        for device, values in requests.items():
            try:
                plan = self._plan(kind, device, values)
            except ActuatorError as err:
                results[device] = err
                continue
            if plan.changes:
                plans[device] = plan
            else:
                results[device] = dict(plan.current)
        if self.dry_run:
            for device, plan in plans.items():
                for name in plan.changes:
                    self._dry_write(kind, device, name, plan.targets[name])
                results[device] = {name: self._value(kind, device, name) for name in plan.current}
            return {device: results[device] for device in requests}
        unsaved = self._save_planned(kind, plans)
        for device, plan in plans.items():
            if unsaved is not None:
                results[device] = WriteError(unsaved, dict(plan.current), dict.fromkeys(plan.changes, unsaved))
                continue
            try:
                results[device] = self._execute(kind, device, plan)
            except ActuatorError as err:
                results[device] = err
        return {device: results[device] for device in requests}

    def restore(self) -> dict[str, str]:
        """Write every saved original back and remove ``originals.json``; return {lctl name: why} for failures.

        Idempotent and safe to call twice or after a failed ``__enter__``.  Never raises for a
        write: a failure is logged as an error and its entry stays in ``originals.json`` so the
        next agent tries again at start.  In a dry run only the virtual values are forgotten.
        """
        if self.dry_run:
            if self._virtual:
                self.log.info("dry run: nothing was written, so nothing is restored")
            self._virtual.clear()
            return {}
        if self._originals is None:
            return {}
        for kind, device in list(self._left):
            self._changed_outside(kind, device)  # drops the originals of what someone else has changed since
        originals = self._originals.originals
        if not originals:
            return {}
        try:
            done, failed = restore_originals(
                originals, root=str(self.root), read=self._read, write=self._write, logger=self.log
            )
        except PermissionError as err:
            self.log.error(
                "cannot restore the original values: %s: %s; they stay in %s for an agent run as root",
                err.filename, err.strerror, self._originals.path,
            )  # fmt: skip
            return dict.fromkeys(originals, f"permission denied: {err.filename}")
        for name in done:
            kind, device, param = split_lctl_name(name)
            self._left.get((kind, device), {}).pop(param, None)
        try:
            self._originals.forget(done)
        except OSError as err:
            self.log.error("cannot update %s: %s", self._originals.path, err)
        if failed:
            self.log.error(
                "%d original(s) not restored (%s); they stay in %s for the next agent",
                len(failed), ", ".join(sorted(failed)), self._originals.path,
            )  # fmt: skip
        return failed

    # ---- internals --------------------------------------------------------------------------------

    def _check_active(self) -> None:
        if not self._active:
            raise ActuatorError("the Actuator is not active: use it as `with Actuator(...) as actuator:`")

    @staticmethod
    def _check_device(kind: str, device: str) -> None:
        if kind == "osc":
            if parse_osc_name(device) is None:
                raise LimitError(
                    f"{device!r} is not a client OSC (<fsname>-OST<index>-osc-<instance>); "
                    "server devices such as -osc-MDT0000 are never tuned"
                )
        elif kind == "llite":
            if parse_llite_name(device) is None:
                raise LimitError(f"{device!r} is not an llite instance (<fsname>-<instance>)")
        else:
            raise LimitError(f"{kind}.{device}: pfstune writes only osc and llite parameters")

    # Module-level functions looked up at call time, so that tests can replace them.
    @staticmethod
    def _read(path: Path) -> str:
        return read_param(path)

    @staticmethod
    def _write(path: Path, value: str) -> None:
        write_param(path, value)

    def _path(self, kind: str, device: str, param: str) -> Path:
        path = param_path(self.root, kind, device, param)
        if path is None:
            raise ActuatorError(
                f"{lctl_name(kind, device, param)}: no such parameter file under {self.root} (device gone?)"
            )
        return path

    def _read_int(self, kind: str, device: str, param: str, path: Path) -> tuple[int, str]:
        name = lctl_name(kind, device, param)
        try:
            text = self._read(path).strip()
        except OSError as err:
            raise ActuatorError(f"cannot read {name} ({path}): {err.strerror or err}") from None
        try:
            return int(text, 10), text
        except ValueError:
            raise ActuatorError(f"{name} ({path}) holds {text!r}, not a number") from None

    def _value(self, kind: str, device: str, param: str) -> int:
        name = lctl_name(kind, device, param)
        if self.dry_run and name in self._virtual:
            return self._virtual[name]
        return self._read_int(kind, device, param, self._path(kind, device, param))[0]

    def _server_limits(self, device: str) -> tuple[int, int]:
        """(brw pages, chunk pages) from the OSC's ``import``; defaults when absent (checked by the kernel anyway)."""
        if device not in self._server:
            brw_pages, chunk_pages = DEFAULT_BRW_PAGES, 1
            path = param_path(self.root, "osc", device, "import")
            text = ""
            if path is not None:
                with contextlib.suppress(OSError):
                    text = self._read(path)
            brw_pages = brw_pages_from_import(text) or brw_pages
            if (match := _GRANT_BLOCK.search(text)) and int(match[1]) > PAGE_SIZE:
                chunk_pages = int(match[1]) // PAGE_SIZE
            self._server[device] = (brw_pages, chunk_pages)
        return self._server[device]

    def _dry_write(self, kind: str, device: str, param: str, value: int) -> None:
        name = lctl_name(kind, device, param)
        self.echo(f"lctl set_param {name}={value}")
        self._virtual[name] = value
        if kind == "osc" and "max_dirty_mb" in rule(kind, param).couples:
            # Mirror client_adjust_max_dirty(), so that a later max_dirty_mb decision sees what
            # the real run would see.
            try:
                dirty = self._value(kind, device, "max_dirty_mb")
                rif = self._value(kind, device, "max_rpcs_in_flight")
                mppr = self._value(kind, device, "max_pages_per_rpc")
            except ActuatorError:
                return
            after = dirty_mb_after(rif, mppr, dirty, self.ram_bytes)
            if after != dirty:
                self._virtual[lctl_name(kind, device, "max_dirty_mb")] = after
                self.log.info("dry run: the kernel would change %s.max_dirty_mb from %d to %d", device, dirty, after)

    def _plan(self, kind: str, device: str, values: Mapping[str, int]) -> _Plan:
        """Validate ``values`` for ``device`` (LimitError: nothing to write) and list what must change."""
        self._check_device(kind, device)
        rules = {name: rule(kind, name) for name in values}
        if not rules:
            return _Plan({}, {}, [])
        base = self.device_context(device, kind, list(rules))
        targets = {name: rules[name].normalise(value, base, device) for name, value in values.items()}
        # Bounds set by another parameter are checked against the value it will have after this apply.
        ctx = replace(base, values={**base.values, **targets})
        for name, value in values.items():
            rules[name].validate(value, ctx, device)
        current = {name: self._value(kind, device, name) for name in rules}
        if (kind, device) in self._hands_off or self._changed_outside(kind, device, current):
            return _Plan(current, targets, [])
        changes = [name for name in write_order(kind, rules) if current[name] != targets[name]]
        return _Plan(current, targets, changes)

    def _save_planned(self, kind: str, plans: Mapping[str, _Plan]) -> str | None:
        """Save the originals of every planned change in one write; None, or why they could not be saved."""
        assert self._originals is not None
        entries: dict[str, Original] = {}
        for device, plan in plans.items():
            for param in plan.changes:
                name = lctl_name(kind, device, param)
                if name in self._originals:
                    continue
                try:
                    path = self._path(kind, device, param)
                    text = self._read(path).strip()
                except (ActuatorError, OSError):
                    continue  # gone since planning: _write_verified finds out and reports it for this device alone
                entries.update(self._original_entries(kind, device, param, path, text))
        try:
            self._store_originals(entries)
        except OSError as err:
            reason = f"not writing: cannot save the original values to {self._originals.path}: {err}"
            self.log.error("%s", reason)
            return reason
        return None

    def _execute(self, kind: str, device: str, plan: _Plan) -> dict[str, int]:
        """Write one device's planned changes (verified); what is in force, or WriteError."""
        in_force = dict(plan.current)
        failures: dict[str, str] = {}
        for name in plan.changes:
            try:
                in_force[name] = self._write_verified(kind, device, name, plan.targets[name])
            except WriteError as err:
                failures.update(err.failures)
                in_force[name] = err.in_force.get(name, plan.current[name])
            except LimitError:
                raise
            except ActuatorError as err:  # the file vanished or became unreadable since validation
                failures[name] = str(err)
        if failures:
            raise WriteError("; ".join(failures[name] for name in write_order(kind, failures)), in_force, failures)
        return in_force

    def _save_originals(self, kind: str, device: str, param: str, path: Path, text: str) -> None:
        """Record the originals of ``param`` and of what the kernel may change with it, on disk, before writing."""
        self._store_originals(self._original_entries(kind, device, param, path, text))

    def _original_entries(self, kind: str, device: str, param: str, path: Path, text: str) -> dict[str, Original]:
        """The originals to save before writing ``param``: its own (``text``) and those of its couples."""
        assert self._originals is not None
        entries = {lctl_name(kind, device, param): Original(str(path), text)}
        for coupled in rule(kind, param).couples:
            name = lctl_name(kind, device, coupled)
            coupled_path = param_path(self.root, kind, device, coupled)
            if name in self._originals or coupled_path is None:
                continue
            try:
                entries[name] = Original(str(coupled_path), self._read(coupled_path).strip())
            except OSError as err:
                self.log.warning("cannot read %s to save it: %s", name, err)
        return entries

    def _store_originals(self, entries: Mapping[str, Original]) -> None:
        """Add the entries not yet saved to ``originals.json`` (one synced write, none if all are saved)."""
        assert self._originals is not None
        try:
            self._originals.save(entries)
        except PermissionError as err:
            raise ActuatorPermissionError(
                f"cannot write {err.filename}: {err.strerror}; the pfstune agent needs write access to "
                f"{self.state_dir} (root); use --dry-run to print the lctl set_param lines instead"
            ) from None

    def _write_verified(self, kind: str, device: str, param: str, target: int) -> int:
        """Write one value (original saved first) and read it back; the value in force, or WriteError."""
        name = lctl_name(kind, device, param)
        path = self._path(kind, device, param)
        old, old_text = self._read_int(kind, device, param, path)  # again: the coupling may have moved it
        if old == target:
            return old
        coupled_before = {c: self._quiet_value(kind, device, c) for c in rule(kind, param).couples}
        try:
            self._save_originals(kind, device, param, path, old_text)
        except OSError as err:
            reason = f"not writing {name}={target}: cannot save its original: {err}"
            self.log.error("%s", reason)
            raise WriteError(reason, {param: old}, {param: reason}) from None
        try:
            self._write(path, str(target))
        except OSError as err:
            if err.errno in _DENIED:
                raise ActuatorPermissionError(
                    f"cannot write {name} ({path}): {err.strerror}; the pfstune agent needs root (or write "
                    f"access to the Lustre parameter files under {self.root}); use --dry-run to print the "
                    "lctl set_param lines instead"
                ) from None
            reason = f"the kernel refused {name}={target}: {err.strerror or err}"
            self.log.warning("%s", reason)
            raise WriteError(reason, {param: self._value_or(kind, device, param, old)}, {param: reason}) from None
        got = self._quiet_value(kind, device, param)
        if got is not None and rule(kind, param).readback_ok(target, got, old):
            # The agent logs each change it asks for; here only what it cannot see from its side.
            if got != target:
                self.log.info("set %s=%d (was %d; the kernel adjusted %d)", name, got, old, target)
            else:
                self.log.debug("set %s=%d (was %d)", name, got, old)
            self._left.setdefault((kind, device), {})[param] = got
            for coupled, before in coupled_before.items():
                after = self._quiet_value(kind, device, coupled)
                if after != before:
                    self.log.info("the kernel changed %s.%s from %s to %s", device, coupled, before, after)
            return got
        shown = "nothing readable" if got is None else str(got)
        reason = f"wrote {name}={target} but it reads {shown}; putting {old} back"
        self.log.warning("%s", reason)
        try:
            self._write(path, old_text)
        except OSError as err:
            self.log.error("cannot put %s=%s back: %s", name, old_text, err.strerror or err)
        raise WriteError(reason, {param: self._value_or(kind, device, param, old)}, {param: reason})

    def _changed_outside(self, kind: str, device: str, known: Mapping[str, int] | None = None) -> bool:
        """Whether a value pfstune left on ``device`` has been changed by someone else since.

        If so, say which, keep the device's hands off from now on, and forget the originals of
        the changed parameters so that :meth:`restore` keeps their new values.  A file that
        cannot be read is not a change (the next probe or restore reports it).  ``known`` holds
        values of ``device`` just read (parameter -> value), which are not read again.
        """
        left_here = self._left.get((kind, device), {})
        changed: dict[str, tuple[int, int]] = {}  # lctl name -> (what pfstune left, what is there now)
        for param, left in left_here.items():
            now = known[param] if known is not None and param in known else self._quiet_value(kind, device, param)
            if now is not None and now != left:
                if self._coupling_explains(kind, device, param, left, now, known):
                    left_here[param] = now  # the kernel's answer to a later write of ours
                    continue
                changed[lctl_name(kind, device, param)] = (left, now)
        if not changed:
            return False
        self._hands_off.add((kind, device))
        for name in changed:  # the others stay watched: a later change of them is kept at exit too
            del left_here[split_lctl_name(name)[2]]
        if self._originals is not None:
            try:
                self._originals.forget(changed)
            except OSError as err:  # dropped here; the file keeps it until its next rewrite
                self.log.error("cannot update %s: %s", self._originals.path, err)
        self.log.warning(
            "%s changed outside pfstune (%s); leaving %s alone until the agent restarts, and keeping %s at exit",
            ", ".join(changed),
            ", ".join(f"pfstune left {left}, now {now}" for left, now in changed.values()),
            device,
            "that value" if len(changed) == 1 else "those values",
        )
        return True

    def _coupling_explains(
        self, kind: str, device: str, param: str, left: int, now: int, known: Mapping[str, int] | None
    ) -> bool:
        """Whether ``param`` went from ``left`` to ``now`` by the kernel's own coupling.

        A ``max_dirty_mb`` that pfstune wrote is raised by ``client_adjust_max_dirty()`` when pfstune
        later writes ``max_rpcs_in_flight`` or ``max_pages_per_rpc``; a served tree shows that
        only at its next refresh, so it is recognised by its value, not by when it appears.
        """
        if kind != "osc" or param != "max_dirty_mb":
            return False
        window: dict[str, int] = {}
        for name in ("max_rpcs_in_flight", "max_pages_per_rpc"):
            value = known[name] if known is not None and name in known else self._quiet_value(kind, device, name)
            if value is None:
                return False
            window[name] = value
        expected = dirty_mb_after(window["max_rpcs_in_flight"], window["max_pages_per_rpc"], left, self.ram_bytes)
        return now == expected

    def _quiet_value(self, kind: str, device: str, param: str) -> int | None:
        try:
            return self._value(kind, device, param)
        except ActuatorError:
            return None

    def _value_or(self, kind: str, device: str, param: str, default: int) -> int:
        value = self._quiet_value(kind, device, param)
        return default if value is None else value
