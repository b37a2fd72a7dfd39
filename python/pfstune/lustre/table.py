"""Parsed client statistics as arrays, one row per device: exactly what stage 1 of the features reads.

A :class:`~pfstune.lustre.types.Snapshot` is nested dicts, convenient to print and to test but
costly in bulk: the agent reads 1,000 OSCs every 0.5 s, and building and then walking a few
hundred Python objects per OSC took most of a tick.  An :class:`OscTable` holds, for many OSCs
at once, only the numbers :mod:`pfstune.features` needs from one probe, in numpy arrays, so that
stage 1 differences two probes with array operations instead of a loop over devices:

- the five scalar files the features use (:data:`TUNABLES`), as floats;
- from ``rpc_stats``: the header's ``start_time``, the four instantaneous lines
  (:data:`RPC_LINES`) and the pages-per-RPC and RPCs-in-flight histograms at their kept labels
  (:data:`HIST_COLUMNS`; rarer larger labels folded into the last kept one);
- from ``osc.*.stats`` and the mount's ``llite.*.stats``: every counter line (a
  :class:`StatsTable`, one column per counter name, so that a clear is seen on any counter).

A file that was not read is marked absent (its values are then NaN in the features, never 0).

Two producers give the same table, and there is one consumer (stage 1):

- :meth:`OscTable.from_snapshots` packs parsed snapshots (the sim backend, the collector, tests,
  anything holding a :class:`~pfstune.lustre.types.Snapshot`): the reference;
- :meth:`pfstune.lustre.snapshot.Prober.probe_table` has the Rust extension read and parse the
  files of every device straight into these arrays (``pfstune._pfsim.StatsReader``); a device
  whose text it does not accept is read with the Python parsers and packed as above.  Tests
  (``tests/lustre/test_table.py``) check that both give the same arrays.

Integers stay exact: counter values are int64 (Lustre prints them as 64-bit integers; a counter
value outside int64 can only be garbage, and the file is then taken as not read), histogram
counts are float64 as stage 1 has always differenced them (exact below 2^53).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pfstune.lustre.types import Counter, Header, LliteSnapshot, OscSnapshot, RpcStats, Snapshot

__all__ = [
    "HIST_BLOCKS",
    "HIST_COLUMNS",
    "PPR_LABELS",
    "RIF_LABELS",
    "RPC_LINES",
    "TUNABLES",
    "OscTable",
    "ProbeTable",
    "StatsTable",
    "scalar_number",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NAN = float("nan")

#: The scalar files stage 1 reads (in this column order).
TUNABLES: tuple[str, ...] = (
    "max_pages_per_rpc",
    "max_rpcs_in_flight",
    "max_dirty_mb",
    "cur_dirty_bytes",
    "cur_grant_bytes",
)
#: The instantaneous lines of ``rpc_stats`` stage 1 reads (in this column order).
RPC_LINES: tuple[str, ...] = (
    "read_rpcs_in_flight",
    "pending_read_pages",
    "write_rpcs_in_flight",
    "pending_write_pages",
)
#: Labels of the pages-per-RPC histogram rows kept (2.15 RPCs are at most 16 MiB = 4096 pages).
PPR_LABELS: tuple[int, ...] = tuple(1 << i for i in range(13))
#: Labels of the RPCs-in-flight histogram rows (Lustre caps the index at 31).
RIF_LABELS: tuple[int, ...] = tuple(range(32))
#: The histogram columns kept, in the order of :attr:`OscTable.hist`: (block, op, labels).
HIST_BLOCKS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("pages_per_rpc", "read", PPR_LABELS),
    ("pages_per_rpc", "write", PPR_LABELS),
    ("rpcs_in_flight", "read", RIF_LABELS),
    ("rpcs_in_flight", "write", RIF_LABELS),
)
#: Where each histogram column lies in :attr:`OscTable.hist` (its slice).
HIST_SPANS: tuple[slice, ...] = tuple(
    slice(start, start + len(labels))
    for start, labels in zip(
        np.cumsum([0] + [len(labels) for _, _, labels in HIST_BLOCKS[:-1]]).tolist(),
        (labels for _, _, labels in HIST_BLOCKS),
        strict=True,
    )
)
#: Width of :attr:`OscTable.hist`.
HIST_COLUMNS = sum(len(labels) for _, _, labels in HIST_BLOCKS)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Each histogram column's labels as a set, and a zero per label (``map``'s default).
_LABEL_SETS = tuple((frozenset(labels), (0,) * len(labels)) for _, _, labels in HIST_BLOCKS)


def scalar_number(value: object) -> float:
    """A scalar file's value as a float, NaN if absent or not a number."""
    if isinstance(value, bool) or value is None:
        return NAN
    try:
        if isinstance(value, (int, float)):
            return float(value)
        return float(str(value).strip())
    except (ValueError, OverflowError):  # text, or an int beyond float's range
        return NAN


# --------------------------------------------------------------------------------------------
# stats files
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatsTable:
    """One kind of ``stats`` file (``osc.*.stats`` or ``llite.*.stats``) of n devices.

    Column j of the 2-d arrays is the counter ``names[j]``; a device without that line has
    ``line`` False and zeros.  ``summed`` says the line printed a sum, ``valued`` that it printed
    min, max and sum (count-only lines have neither).
    """

    names: tuple[str, ...]
    present: BoolArray  # (n,) the file was read
    start_time: FloatArray  # (n,) the header's start_time, NaN where not printed
    line: BoolArray  # (n, v)
    samples: IntArray  # (n, v)
    summed: BoolArray  # (n, v)
    valued: BoolArray  # (n, v)
    minimum: IntArray  # (n, v)
    maximum: IntArray  # (n, v)
    total: IntArray  # (n, v)
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update((name, j) for j, name in enumerate(self.names))

    def __len__(self) -> int:
        return len(self.present)

    def column(self, name: str) -> int | None:
        """The column of counter ``name``, None if no device printed it."""
        return self._index.get(name)

    @classmethod
    def empty(cls, rows: int, names: tuple[str, ...] = ()) -> StatsTable:
        """``rows`` devices whose file was not read."""
        width = len(names)
        zeros = np.zeros((rows, width), dtype=np.int64)
        no = np.zeros((rows, width), dtype=bool)
        return cls(
            names,
            np.zeros(rows, dtype=bool),
            np.full(rows, NAN),
            no,
            zeros,
            no.copy(),
            no.copy(),
            zeros.copy(),
            zeros.copy(),
            zeros.copy(),
        )

    def take(self, rows: IntArray | Sequence[int]) -> StatsTable:
        """The devices at ``rows``, in that order."""
        index = np.asarray(rows, dtype=np.intp)
        return StatsTable(
            self.names,
            self.present[index],
            self.start_time[index],
            self.line[index],
            self.samples[index],
            self.summed[index],
            self.valued[index],
            self.minimum[index],
            self.maximum[index],
            self.total[index],
        )

    def reindex(self, names: tuple[str, ...]) -> StatsTable:
        """The same devices with columns ``names`` (a name it lacks: no line)."""
        if names == self.names:
            return self
        rows = len(self)
        out = StatsTable.empty(rows, names)
        out.present[:] = self.present
        out.start_time[:] = self.start_time
        pairs = [(j, self._index[name]) for j, name in enumerate(names) if name in self._index]
        if pairs:
            dst, src = (list(side) for side in zip(*pairs, strict=True))
            for array in ("line", "samples", "summed", "valued", "minimum", "maximum", "total"):
                getattr(out, array)[:, dst] = getattr(self, array)[:, src]
        return out

    @classmethod
    def concat(cls, tables: Sequence[StatsTable]) -> StatsTable:
        """The devices of ``tables`` one after the other (columns: the union of theirs)."""
        names: dict[str, None] = {}
        for table in tables:
            names.update(dict.fromkeys(table.names))
        order = tuple(names)
        aligned = [table.reindex(order) for table in tables]
        if not aligned:
            return cls.empty(0, order)
        return cls(order, *(np.concatenate([getattr(t, array) for t in aligned]) for array in _ARRAYS))

    def assign(self, rows: Sequence[int], other: StatsTable) -> StatsTable:
        """A copy with the devices at ``rows`` replaced by the devices of ``other``, in order."""
        names = self.names + tuple(name for name in other.names if name not in self._index)
        out = self.reindex(names)
        if out is self:
            out = self.take(np.arange(len(self)))
        source = other.reindex(names)
        index = np.asarray(rows, dtype=np.intp)
        for array in _ARRAYS:
            getattr(out, array)[index] = getattr(source, array)
        return out

    @classmethod
    def from_parsed(cls, files: Sequence[tuple[Mapping[str, Counter] | None, Header | None]]) -> StatsTable:
        """Pack parsed ``stats`` files: (counters, header) per device, counters None if not read."""
        rows = len(files)
        index: dict[str, int] = {}
        present = np.zeros(rows, dtype=bool)
        start = np.full(rows, NAN)
        # (row, column, samples, summed, valued, min, max, sum) of every line
        cells: list[tuple[int, int, int, int, int, int, int, int]] = []
        for i, (counters, header) in enumerate(files):
            if counters is None:
                continue
            entries = _pack_counters(counters, index, i)
            if entries is None:
                continue  # a value no 64-bit counter can hold: garbage, not read (never a wrong number)
            present[i] = True
            cells += entries
            if header and "start_time" in header:
                start[i] = float(header["start_time"])
        table = cls.empty(rows, tuple(index))
        table.present[:] = present
        table.start_time[:] = start
        if cells:
            data = np.array(cells, dtype=np.int64)
            r, c = data[:, 0], data[:, 1]
            table.line[r, c] = True
            table.samples[r, c] = data[:, 2]
            table.summed[r, c] = data[:, 3].astype(bool)
            table.valued[r, c] = data[:, 4].astype(bool)
            table.minimum[r, c] = data[:, 5]
            table.maximum[r, c] = data[:, 6]
            table.total[r, c] = data[:, 7]
        return table


#: The arrays of a :class:`StatsTable`, in field order.
_ARRAYS = ("present", "start_time", "line", "samples", "summed", "valued", "minimum", "maximum", "total")


def _fits(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


def _pack_counters(
    counters: Mapping[str, Counter], index: dict[str, int], row: int
) -> list[tuple[int, int, int, int, int, int, int, int]] | None:
    entries = []
    for name, counter in counters.items():
        samples = counter["samples"]
        lo, hi, total = counter["min"], counter["max"], counter["sum"]
        valued = lo is not None and hi is not None and total is not None
        if not _fits(samples) or any(value is not None and not _fits(value) for value in (lo, hi, total)):
            return None
        column = index.setdefault(name, len(index))
        entries.append((row, column, samples, int(total is not None), int(valued), lo or 0, hi or 0, total or 0))
    return entries


# --------------------------------------------------------------------------------------------
# rpc_stats histograms
# --------------------------------------------------------------------------------------------


def histogram(stats: RpcStats, block: str, op: str) -> Mapping[int, int]:
    """One histogram column of ``rpc_stats`` with integer labels (JSON turns them into strings)."""
    pair = stats.get(block)
    if not isinstance(pair, dict):
        return {}
    column: Mapping[Any, int] = pair.get(op) or {}
    if type(next(iter(column), 0)) is int:  # as parsed (labels all ints): no copy, this runs 8 times per OSC
        return column
    return {int(label): int(count) for label, count in column.items()}


def _fold(column: Mapping[int, int], labels: tuple[int, ...]) -> list[int]:
    # A label outside the kept ones counts at the largest kept label not above it (the rare
    # larger RPCs of a > 16 MiB brw_size at 4096 pages); below the smallest, at the smallest.
    by_label = dict.fromkeys(labels, 0)
    for label, count in column.items():
        at = bisect.bisect_right(labels, label) - 1
        by_label[labels[max(at, 0)]] += count
    return list(by_label.values())


def _hist_row(stats: RpcStats) -> tuple[list[int], tuple[Mapping[int, int], ...] | None]:
    """The counts at each kept label of every histogram column, and the columns if any was folded."""
    counts: list[int] = []
    columns = []
    folded = False
    for (block, op, labels), (label_set, zeros) in zip(HIST_BLOCKS, _LABEL_SETS, strict=True):
        column = histogram(stats, block, op)
        columns.append(column)
        if column.keys() <= label_set:
            counts += map(column.get, labels, zeros)
        else:
            folded = True
            counts += _fold(column, labels)
    return counts, tuple(columns) if folded else None


# --------------------------------------------------------------------------------------------
# OSCs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OscTable:
    """What stage 1 reads from one probe of n OSCs (row i: one OSC), see the module docstring.

    ``unfolded`` keeps, for the rare rows whose histograms had a label outside the kept ones,
    the four histogram columns as printed: a clear must then be looked for label by label.
    """

    tunables: FloatArray  # (n, len(TUNABLES)), NaN where absent or not a number
    rpc: BoolArray  # (n,) rpc_stats was read
    rpc_start: FloatArray  # (n,) its header's start_time, NaN where not printed
    rpc_lines: FloatArray  # (n, len(RPC_LINES)), NaN where absent
    hist: FloatArray  # (n, HIST_COLUMNS) counts at the kept labels (HIST_BLOCKS order)
    unfolded: Mapping[int, tuple[Mapping[int, int], ...]]
    stats: StatsTable  # osc.*.stats
    llite: StatsTable  # llite.*.stats of each OSC's mount

    def __len__(self) -> int:
        return len(self.rpc)

    def take(self, rows: IntArray | Sequence[int]) -> OscTable:
        """The OSCs at ``rows``, in that order."""
        index = np.asarray(rows, dtype=np.intp)
        unfolded: dict[int, tuple[Mapping[int, int], ...]] = {}
        if self.unfolded:
            for new, old in enumerate(index.tolist()):
                if old in self.unfolded:
                    unfolded[new] = self.unfolded[old]
        return OscTable(
            self.tunables[index],
            self.rpc[index],
            self.rpc_start[index],
            self.rpc_lines[index],
            self.hist[index],
            unfolded,
            self.stats.take(index),
            self.llite.take(index),
        )

    def full_histograms(self, row: int) -> tuple[Mapping[int, int], ...]:
        """Row ``row``'s four histogram columns: as printed if folded, else at the kept labels."""
        if row in self.unfolded:
            return self.unfolded[row]
        counts = self.hist[row].tolist()
        return tuple(
            dict(zip(labels, (int(c) for c in counts[span]), strict=True))
            for (_, _, labels), span in zip(HIST_BLOCKS, HIST_SPANS, strict=True)
        )

    @classmethod
    def from_snapshots(cls, oscs: Sequence[OscSnapshot], llites: Sequence[LliteSnapshot | None]) -> OscTable:
        """Pack parsed OSC snapshots and their mounts' llite snapshots (None: not read), row by row."""
        rows = len(oscs)
        tunables = np.full((rows, len(TUNABLES)), NAN)
        rpc = np.zeros(rows, dtype=bool)
        rpc_start = np.full(rows, NAN)
        rpc_lines = np.full((rows, len(RPC_LINES)), NAN)
        hist = np.zeros((rows, HIST_COLUMNS))
        unfolded: dict[int, tuple[Mapping[int, int], ...]] = {}
        stats_files: list[tuple[Mapping[str, Counter] | None, Header | None]] = []
        for i, osc in enumerate(oscs):
            found = osc.get("tunables")
            if found is not None:
                tunables[i] = [scalar_number(found.get(name)) for name in TUNABLES]
            stats = osc.get("rpc_stats")
            if stats is not None:
                rpc[i] = True
                header = stats.get("header")
                if header and "start_time" in header:
                    rpc_start[i] = float(header["start_time"])
                rpc_lines[i] = [scalar_number(stats.get(line)) for line in RPC_LINES]
                counts, columns = _hist_row(stats)
                hist[i] = counts
                if columns is not None:
                    unfolded[i] = columns
            stats_files.append((osc.get("stats"), osc.get("stats_header")))
        llite_files = [
            (llite.get("stats"), llite.get("stats_header")) if llite is not None else (None, None) for llite in llites
        ]
        return cls(
            tunables,
            rpc,
            rpc_start,
            rpc_lines,
            hist,
            unfolded,
            StatsTable.from_parsed(stats_files),
            StatsTable.from_parsed(llite_files),
        )


# --------------------------------------------------------------------------------------------
# A whole probe
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeTable:
    """One probe of a client as the agent uses it: the OSCs, their scalar files, their table.

    ``tunables[i]`` is what a :class:`~pfstune.lustre.types.Snapshot` would hold under
    ``osc[oscs[i]]["tunables"]`` (empty if no scalar file could be read), ``table`` row i the
    same OSC's statistics with its mount's ``llite.*.stats``.
    """

    time: float
    oscs: tuple[str, ...]
    tunables: tuple[Mapping[str, int | str], ...]
    table: OscTable
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update((name, i) for i, name in enumerate(self.oscs))

    def row(self, osc: str) -> int | None:
        """The row of ``osc``, None if this probe did not return it."""
        return self._index.get(osc)

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> ProbeTable:
        """Pack a parsed snapshot (the reference producer; see the module docstring)."""
        mount = {osc: llite for llite in snapshot["llite"].values() for osc in llite.get("osc", [])}
        names = tuple(snapshot["osc"])
        oscs = [snapshot["osc"][name] for name in names]
        return cls(
            snapshot["time"],
            names,
            tuple(osc.get("tunables", {}) for osc in oscs),
            OscTable.from_snapshots(oscs, [mount.get(name) for name in names]),
        )
