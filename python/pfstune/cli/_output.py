"""Output for people and for machines: aligned tables, JSON, and a progress bar on stderr.

The progress bar is written here rather than taken from ``tqdm``: it needs a dozen lines, and
keeping it in the package keeps the runtime dependencies to what the computations need.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO


def print_json(data: Any, stream: TextIO | None = None) -> None:
    """Print ``data`` as indented JSON with a trailing newline (``--json`` output)."""
    print(json.dumps(data, indent=2), file=stream or sys.stdout)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Format rows as an aligned text table; numbers are right-aligned, floats get one decimal.

    >>> print(format_table(["config", "MB/s"], [["default", 310.04], ["(8, 128)", 401.5]]))
    config     MB/s
    --------  -----
    default   310.0
    (8, 128)  401.5
    """
    cells = [[f"{v:.1f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(row) for row in cells)])


class ProgressBar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal.

    Use as a context manager; :meth:`update` redraws, leaving the block erases the line.
    """

    def __init__(self, total: float, label: str, unit: str = "", enabled: bool = True) -> None:
        """Show progress towards ``total`` (in ``unit``); ``enabled=False`` turns it off (``--json``)."""
        self.total = total
        self.label = label
        self.unit = unit
        self.stream = sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self._shown = ""

    def update(self, done: float) -> None:
        """Redraw the bar for ``done`` out of ``total``."""
        if not self.enabled:
            return
        fraction = min(1.0, done / self.total) if self.total else 1.0
        filled = int(30 * fraction)
        text = (
            f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done:g}/{self.total:g}{self.unit} {fraction:4.0%}"
        )
        if text != self._shown:
            self.stream.write(text)
            self.stream.flush()
            self._shown = text

    def __enter__(self) -> ProgressBar:
        self.update(0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * len(self._shown) + "\r")
            self.stream.flush()
