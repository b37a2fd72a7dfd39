"""The virtual client tree: one simulated client's Lustre files laid out under a directory.

:class:`VirtualTree` writes every parameter file of a client at the relative path the core
gives (``sys/fs/lustre/osc/<dev>/max_rpcs_in_flight``, ``proc/fs/lustre/osc/<dev>/rpc_stats``,
``sys/kernel/debug/lustre/osc/<dev>/stats``, ...), so that a tool written for a real client's
``/`` reads it unchanged when pointed at the tree's root.  It is what ``pfstune sim serve``
keeps live.

Files are replaced atomically (a temporary file, then :func:`os.replace`), so a reader sees
either the old or the new text, never half a file.  Writable files are 0644 and the others
0444, as in sysfs.  A value written into a writable file is applied to the simulation by
:meth:`VirtualTree.apply_writes`, with the text as written (the simulated ``kstrto*`` take one
trailing newline and nothing else, as the kernel's do: ``"13 "`` is EINVAL).  A value the
simulated kernel refuses is logged and the file reverts to the current value, which is what
a real ``write(2)`` failure leaves behind (until the next simulation step a reader may still
see the text it wrote).  An accepted value stays
as written (``lctl set_param`` writes no newline, where the kernel would print one): rewriting
the file could undo a newer write made in between, such as the agent restoring an original.  A
write into a read-only file (root can write a 0444 file here, where sysfs answers EACCES) is
logged and undone.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from pathlib import Path

from pfstune.sim.engine import Engine

#: Seconds a writable file may stay empty (a writer between truncating and writing) before it
#: shows its value again.
EMPTY_GRACE_S = 1.0


def write_atomically(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` so that concurrent readers never see a partial file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(mode)
    os.replace(tmp, path)


class VirtualTree:
    """The files of one simulated client under ``root``, synchronised with an :class:`Engine`.

    Call :meth:`refresh` after every simulation step to rewrite the files whose text changed,
    and :meth:`apply_writes` before the next step to apply what was written into them.
    """

    def __init__(self, engine: Engine, client: int, root: Path, log: Callable[[str], None]) -> None:
        """Prepare the tree of ``client`` under ``root``; ``log`` receives one line per refused write."""
        self.engine = engine
        self.client = client
        self.root = root
        self.log = log
        self.params = engine.list_params(client)
        self._written: dict[str, str] = {}  # relative path -> text last written there
        self._stamps: dict[str, tuple[int, int, int] | None] = {}  # read-only files: _stamp after our write
        self._empty: dict[str, float] = {}  # writable file found empty -> when it was first seen so
        for param in self.params:
            (root / param.path).parent.mkdir(parents=True, exist_ok=True)

    def refresh(self) -> int:
        """Rewrite every file whose text changed since it was last written; return how many.

        A writable file that holds the current value, give or take white space (``lctl
        set_param`` writes no newline), is left as it is.
        """
        changed = 0
        for param in self.params:
            text = self.engine.get_param(self.client, param.name)
            last = self._written.get(param.path)
            if last == text or (param.writable and last is not None and last.strip() == text.strip()):
                continue  # a written value stays as written: rewriting could undo a newer write
            self._write(param.path, text, param.writable)
            changed += 1
        return changed

    def apply_writes(self) -> None:
        """Apply the values written into writable files since :meth:`refresh` last wrote them.

        A value the simulation refuses (OSError) is logged as ``set_param NAME=VALUE: reason``
        and the file is rewritten with the current value.  An empty file is most likely a write
        in progress (truncated, not yet written) and is left alone; still empty a second later,
        it shows the value again, as a real file does after an empty write.  A read-only file
        that changed is logged and rewritten.
        """
        now = time.monotonic()
        for param in self.params:
            path = self.root / param.path
            if not param.writable:
                if self._stamps.get(param.path) != _stamp(path):
                    self.log(f"write to read-only {param.name}: {os.strerror(errno.EACCES)}")
                    self._write(param.path, self.engine.get_param(self.client, param.name), writable=False)
                continue
            content = _read(path)
            if content is None:  # removed or garbled: the next refresh rewrites it
                self._written.pop(param.path, None)
                continue
            if content == self._written.get(param.path):
                continue
            if not content:
                since = self._empty.setdefault(param.path, now)
                if now - since >= EMPTY_GRACE_S:
                    del self._empty[param.path]
                    self._write(param.path, self.engine.get_param(self.client, param.name), writable=True)
                continue
            self._empty.pop(param.path, None)
            value = content[:-1] if content.endswith("\n") else content
            try:
                # as written: the simulated kstrto*() accept one trailing newline, as the kernel's do
                self.engine.set_param(self.client, param.name, content)
            except OSError as err:
                self.log(f"set_param {param.name}={value}: {err.strerror or err}")
            current = self.engine.get_param(self.client, param.name)
            if current.strip() == value:
                # the file already says it; rewriting it here could undo a write made since
                # it was read (a real sysfs file has no such window)
                self._written[param.path] = content
            else:
                self._write(param.path, current, writable=True)

    def _write(self, relative: str, text: str, writable: bool) -> None:
        path = self.root / relative
        write_atomically(path, text, 0o644 if writable else 0o444)
        self._written[relative] = text
        if not writable:
            self._stamps[relative] = _stamp(path)


def _read(path: Path) -> str | None:
    """The file's text, or None if it cannot be read as text."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a file was written since: inode, size and modification time (None if it is gone)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
