"""The shape of a parsed client snapshot, shared by the parsers, the features and the CLI.

A snapshot is plain data (dicts, lists, ints, floats, strings), so ``json.dumps`` prints it as
``pfstune lustre snapshot --json`` and the design's command contract requires::

    {"time": 1510950459.78,                       # seconds (probe clock) when the probe began
     "osc":   {DEVICE: OscSnapshot, ...},         # client OSCs only, never "-osc-MDT0000"
     "llite": {INSTANCE: LliteSnapshot, ...}}

Every key of an :class:`OscSnapshot` or :class:`LliteSnapshot` is optional: a file that is
missing, unreadable (debugfs as non-root) or garbled is left out (and the probe logs why), never
filled with a made-up value.  Integers are Python ints of any size: a ``sumsq`` printed as an
unsigned 64-bit value above 2^63 stays exact.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Counter(TypedDict):
    """One line of a ``stats`` file: ``NAME COUNT samples [UNIT] MIN MAX SUM SUMSQ``.

    ``min``, ``max`` and ``sum`` are None on count-only lines (``[reqs]``, ``[pages]``);
    ``sumsq`` is None where the line has no sumsq (2.10 llite, some vendor lines).
    """

    samples: int
    unit: str
    min: int | None
    max: int | None
    sum: int | None
    sumsq: int | None


class Header(TypedDict, total=False):
    """The ``snapshot_time`` / ``start_time`` / ``elapsed_time`` lines, in seconds.

    2.10 and 2.15.0-1 files have only ``snapshot_time``; ``start_time`` is the time of the last
    clear (0.0 on a freshly mounted client for ``rpc_stats``).
    """

    snapshot_time: float
    start_time: float
    elapsed_time: float


#: A histogram column: row label (1, 2, 4, ... or 0) -> count.  JSON turns the labels into strings.
Histogram = dict[int, int]


class HistogramPair(TypedDict):
    """One histogram block of ``rpc_stats``: the read and the write column."""

    read: Histogram
    write: Histogram


class RpcStats(TypedDict, total=False):
    """``osc.*.rpc_stats``: the header, the instantaneous lines and the three histograms."""

    header: Header
    read_rpcs_in_flight: int
    write_rpcs_in_flight: int
    dio_rpcs_in_flight: int  # vendor (DDN 2.16) only
    pending_write_pages: int
    pending_read_pages: int
    pages_per_rpc: HistogramPair
    rpcs_in_flight: HistogramPair
    offset: HistogramPair


#: Everything read from one OSC device in one probe.
#:
#: ``tunables`` holds the scalar files by name (``max_pages_per_rpc``, ``max_rpcs_in_flight``,
#: ``max_dirty_mb``, ``cur_dirty_bytes``, ``cur_grant_bytes``, ``short_io_bytes``, ...) as ints
#: where the file is a number, else the stripped text.  ``import`` is the nested mapping of the
#: YAML-like ``import`` file (numbers as ints, lists as lists).  The functional syntax is needed
#: because ``import`` is a Python keyword.
OscSnapshot = TypedDict(
    "OscSnapshot",
    {
        "tunables": dict[str, int | str],
        "rpc_stats": RpcStats,
        "stats": dict[str, Counter],
        "stats_header": Header,
        "osc_stats": dict[str, int],
        "osc_stats_header": Header,
        "import": dict[str, Any],
    },
    total=False,
)


class LliteSnapshot(TypedDict, total=False):
    """Everything read from one llite (mount) instance in one probe.

    ``osc`` lists the client OSC devices of this mount (same fsname and instance hex).
    ``max_cached_mb`` holds the ``name: value`` lines of that file as ints.
    """

    tunables: dict[str, int | str]
    stats: dict[str, Counter]
    stats_header: Header
    read_ahead_stats: dict[str, Counter]
    read_ahead_stats_header: Header
    max_cached_mb: dict[str, int]
    osc: list[str]


class Snapshot(TypedDict):
    """One probe of a whole client."""

    time: float
    osc: dict[str, OscSnapshot]
    llite: dict[str, LliteSnapshot]
