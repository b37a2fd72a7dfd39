"""The virtual client tree: one simulated client's Lustre files laid out under a directory.

:class:`VirtualTree` writes every parameter file of a client at the relative path the core
gives (``sys/fs/lustre/osc/<dev>/max_rpcs_in_flight``, ``proc/fs/lustre/osc/<dev>/rpc_stats``,
``sys/kernel/debug/lustre/osc/<dev>/stats``, ...), so that a tool written for a real client's
``/`` reads it unchanged when pointed at the tree's root.  It is what ``pfstune sim serve``
keeps live.

Files are replaced atomically (a temporary file, then :func:`os.replace`), so a reader sees
either the old or the new text, never half a file.  Writable files are 0644 and the others
0444, as in sysfs.  A value written into a writable file is applied to the simulation by
:meth:`VirtualTree.apply_writes`; a value the simulated kernel refuses is logged and the file
reverts to the current value, which is what a real ``write(2)`` failure leaves behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pfstune.sim.engine import Engine


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
        and the file is rewritten with the current value.  An empty file is left for the next
        call: it is most likely a write in progress (truncated, not yet written).
        """
        for param in self.params:
            if not param.writable:
                continue
            try:
                content = (self.root / param.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                content = ""  # removed or garbled: the next refresh rewrites it
                self._written.pop(param.path, None)
            if content == self._written.get(param.path) or not content:
                continue
            value = content.strip()
            try:
                self.engine.set_param(self.client, param.name, value)
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
        write_atomically(self.root / relative, text, 0o644 if writable else 0o444)
        self._written[relative] = text
