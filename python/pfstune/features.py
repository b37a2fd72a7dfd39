"""The features a model sees: the only place they are computed (design rule 1).

Every feature comes from parsed Lustre statistics, whatever their source: a real client, pfsim's
text, or the recorded real dataset (``shared/data/dial-lustre``, DIAL's CSV columns).  Training
and serving therefore share this module, and the DIAL column names and definitions are kept
*exactly* so that rows computed here and rows of the dataset mean the same thing.

Two stages
==========

**Stage 1, interval counters** -- :func:`interval_counters` turns two snapshots of one OSC (and of
its llite mount) taken ``seconds`` apart into DIAL's raw columns (:data:`RAW_COLUMNS`, the names
of the dataset's ``columns.csv``) plus live-only extras (:data:`LIVE_COLUMNS`).  It is one
implementation for a batch: :func:`interval_counters_many` does every OSC of a probe at once
(the histograms, most of the work, are differenced in numpy), and :func:`interval_counters` is
that batch of one.  :func:`osc_features_many` runs both stages.

* ``osc_rpc_configuration_current.{mppr,mrif,mdm}_value``: the tunables read at ``cur``, i.e. the
  configuration in force during the interval (a tuner writes right after a probe, as DIAL did).
* Counters (``llite_stats_*``, ``ost_*_rpc_*_data``, ``osc_req_*_data``; ``.no_of_samples``,
  ``.sample_min``, ``.sample_max``, ``.samples_sum``), from ``llite.*.stats`` read_bytes /
  write_bytes and ``osc.*.stats`` read_bytes / write_bytes (bytes), ost_read / ost_write /
  req_waittime (microseconds), req_active (RPCs).  DIAL's collector *cleared* the stats files
  after every probe, so its values are the interval's own.  pfstune does not clear (other
  monitoring reads the same counters), so:

  - counts and sums are ``cur - prev``;
  - a file counts as **cleared** since ``prev`` when its header ``start_time`` changed (a clear
    or a remount re-initialises it) or any counter, sum or histogram bucket went down (also
    catches files without ``start_time``: 2.10, 2.15.0-1).  Then ``cur`` *is* the interval's
    own value (from the clear on) and is used as the delta: never a negative count.  The interval
    then covers only clear..cur, so rates divided by ``seconds`` are low; ``x_stats_cleared``
    flags such intervals so that a caller can drop them.  A clear that is followed by more
    samples than ``prev`` held, in a file without ``start_time``, cannot be seen;
  - per-interval min / max are exact when they can be known: after a clear or when the counter
    first appears (its min / max are the interval's), with exactly one new sample
    (min = max = its value), ``max`` when the cumulative max rose (the new max happened in the
    interval), ``min`` when the cumulative min fell.  Otherwise the interval's extremes lie
    between the cumulative extreme and the interval mean, and we use the **interval mean
    sum/count clamped into [cumulative min, cumulative max]**: it is always inside the true
    range of possible values, it equals the exact answer when all samples of the interval are
    equal (the common case for RPC sizes: all RPCs at ``max_pages_per_rpc``), and it never
    invents an extreme that did not happen.  It errs towards the mean (true min <= estimate <=
    true max), so the min / max columns of a non-clearing agent are less spread than DIAL's;
  - no new sample: count, sum, min, max are 0 -- what DIAL recorded for an empty counter (Lustre
    prints no line for a counter without samples, and DIAL's parser returned zeros).
* ``cur_dirty_bytes``, ``cur_grant_bytes``: scalars read at ``cur``.
* ``cur_read_rif``, ``cur_write_rif``, ``pending_read_pages``, ``pending_write_pages``: from
  ``cur``'s ``rpc_stats`` **modulo 10**.  DIAL's parser used the regex ``:(\\s)+(\\d)+`` whose
  group keeps only the *last digit* (``write RPCs in flight: 257`` -> 7); the dataset shows it
  (all four columns lie in 0..9 and ``max_rpcs_in_flight`` = 8, 16, 128 rows pile up at 9, 7, 9
  = last digit of mrif + 1).  A model trained on the dataset has learned that quantity, so the
  DIAL names carry it here too; the true values are ``x_read_rpcs_in_flight``,
  ``x_write_rpcs_in_flight``, ``x_pending_read_pages``, ``x_pending_write_pages``.
* ``actual_record_duration``: ``seconds``.
* Live-only extras: the ``rpc_stats`` histogram deltas ``x_hist_ppr_{read,write}_{1..4096}``
  (pages per RPC; the rare larger labels are added to the 4096 row) and
  ``x_hist_rif_{read,write}_{0..31}`` (RPCs in flight when an RPC was sent), their means
  ``x_{read,write}_rif_at_send``, ``x_stats_cleared`` and ``x_prev_write_rif_bytes`` (below).

A file that is missing (unreadable) in either snapshot makes its columns NaN, never zero.

**Stage 2, derived metrics** -- :func:`derive` computes from a row of raw columns DIAL's derived
columns (:data:`DERIVED_COLUMNS`) and ours (:data:`EXTRA_COLUMNS`, prefixed ``x_``).  It is one
implementation over column arrays, so it serves a single row (a mapping) and the whole dataset
(:func:`from_dataset`) alike (:func:`derive_many` runs it once for many rows).  DIAL's
definitions, from its collector (DIR-LAB/VertoIO
``data_generation_scripts/random_config_stat_collection_script.py``, ``tuning_scripts/rpc_utils.py``
and ``tuning_scripts/osc_snapshot.py``), with ``avg(X) = X.sum / X.count`` or 0 when the count is
0 and ``int()`` = truncation toward zero; "pages" are 4096 bytes as in DIAL; the expressions keep
DIAL's order of operations so that the floats agree bit for bit:

``avg_pages_per_write_rpc``
    avg(ost_write bytes) / 4096.
``write_avg_xfer_speed``
    int(ost_write bytes.sum / ost_write usec.sum * 1e6), 0 without usec (B/s).
``write_max_xfer_speed``
    mrif * write_avg_xfer_speed.
``used_pct_dirty_cache``
    cur_dirty_bytes / 2^20 / mdm * 100.
``waittime_to_mrif_ratio``
    int(int(avg(req_waittime)) / mrif).
``avg_waittime``
    avg(req_waittime) (us).
``write_rpc_generation_rate``
    int((cur_write_rif * avg(write bytes) + write bytes.sum - x_prev_write_rif_bytes) / duration)
    (B/s); NaN for a duration <= 0.  ``x_prev_write_rif_bytes`` is DIAL's
    ``prev.cur_write_rif * avg(prev write bytes)``, the previous interval's in-flight write data
    (last-digit quirk included).  :func:`from_dataset` takes it from the preceding row of the
    same series (the dataset's write workloads were recorded that way; its read workloads by a
    collector version whose ``prev`` was a copy of ``cur``, which gives the same values there
    because they write nothing).  Live, :func:`interval_counters` uses the average write RPC of
    ``prev_interval`` (the previous result for the OSC) when given, else of the current interval
    (the RPCs in flight at ``prev`` complete during it).
``avg_write_rpc_latency_per_unit_data``
    avg(ost_write usec) / (avg_pages_per_write_rpc * avg(req_active)), 0 if either factor is 0
    (us per page).
``avg_write_rpc_waittime``
    avg(ost_write usec) (us).
``avg_rpcs_in_flight``
    avg(req_active).
``is_dist_centered``
    1 if no write RPC (avg pages 0, or an empty write column in the pages-per-RPC histogram);
    else 1 iff avg pages >= 0.9997 * mppr and the histogram row labelled mppr is printed (rows
    go up to the last non-empty one) with cum% - % <= 0.03, the integer percents Lustre prints,
    i.e. under about 1 % of write RPCs smaller than mppr; else 0.  DIAL's code gives 1/0 (its
    column description says +1/-1/0).  The dataset lacks the histogram: live the value is
    computed from the histogram delta as DIAL did; for a row without histogram columns,
    :func:`derive` keeps an ``is_dist_centered`` the row already carries (the dataset's, which
    DIAL computed from the real histogram), else NaN.  (A raw-only guess, avg pages >= 0.9997 *
    mppr, agrees with the dataset on only 92 % of the rows with write RPCs, so none is made.)

Checked on every row of ``dev.parquet`` (108 636): the ten computable columns are reproduced
exactly from each row's raw columns, except on the first row of each series (observation 0,
222 rows), which DIAL wrote before computing its features (zeros there; its duration is ~0).

Where DIAL's columns give 0 for "no samples", ours (``x_``) give NaN: a tree model then learns
"undefined" separately from a real zero.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

from pfstune.lustre.types import Counter, Header, LliteSnapshot, OscSnapshot, RpcStats

__all__ = [
    "DERIVED_COLUMNS",
    "EXTRA_COLUMNS",
    "FEATURE_COLUMNS",
    "LIVE_COLUMNS",
    "RAW_COLUMNS",
    "OscInterval",
    "derive",
    "derive_many",
    "dominant_op",
    "from_dataset",
    "interval_counters",
    "interval_counters_many",
    "osc_features",
    "osc_features_many",
    "osc_throughput_mbps",
]

FloatArray = npt.NDArray[np.float64]

NAN = float("nan")

#: DIAL's ``client_page_size_in_bytes``: "pages" in DIAL's columns are 4 KiB units.
PAGE_BYTES = 4096
#: DIAL's ``megabytes_to_bytes`` (used for ``max_dirty_mb``).
MIB = 1024 * 1024
#: Throughput unit of the dataset README and of ``pfstune sim run``: MB = 10^6 bytes.
MB = 1e6
#: DIAL's ``decentered_thrshld`` (percent).
_DECENTERED_PCT = 0.03

_CFG = "osc_rpc_configuration_current."
_FIELDS = ("no_of_samples", "sample_min", "sample_max", "samples_sum")

#: DIAL counter column prefix -> counter name in the ``stats`` file it comes from.
_LLITE_COUNTERS = {
    "llite_stats_read_bytes": "read_bytes",
    "llite_stats_write_bytes": "write_bytes",
}
_OSC_COUNTERS = {
    "ost_read_rpc_bytes_data": "read_bytes",
    "ost_read_rpc_usec_data": "ost_read",
    "ost_write_rpc_bytes_data": "write_bytes",
    "ost_write_rpc_usec_data": "ost_write",
    "osc_req_waittime_data": "req_waittime",
    "osc_req_active_data": "req_active",
}
#: DIAL column -> OSC scalar file read at ``cur``.
_OSC_SCALARS = {
    _CFG + "mppr_value": "max_pages_per_rpc",
    _CFG + "mrif_value": "max_rpcs_in_flight",
    _CFG + "mdm_value": "max_dirty_mb",
}
_OSC_LEVELS = {"cur_dirty_bytes": "cur_dirty_bytes", "cur_grant_bytes": "cur_grant_bytes"}
_OSC_TUNABLES = _OSC_SCALARS | _OSC_LEVELS
#: DIAL column -> rpc_stats line (DIAL kept the last decimal digit), in columns.csv order.
_RPC_LINES = {
    "cur_read_rif": "read_rpcs_in_flight",
    "pending_read_pages": "pending_read_pages",
    "cur_write_rif": "write_rpcs_in_flight",
    "pending_write_pages": "pending_write_pages",
}
_TRUE_RPC_LINES = {
    "x_read_rpcs_in_flight": "read_rpcs_in_flight",
    "x_pending_read_pages": "pending_read_pages",
    "x_write_rpcs_in_flight": "write_rpcs_in_flight",
    "x_pending_write_pages": "pending_write_pages",
}


def _counter_columns(prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}.{field}" for field in _FIELDS)


#: DIAL counter prefix -> its four column names (computed once: stage 1 runs per OSC per probe).
_COUNTER_COLUMNS = {prefix: _counter_columns(prefix) for prefix in (*_LLITE_COUNTERS, *_OSC_COUNTERS)}


#: DIAL's raw columns (stage 1), in the dataset's ``columns.csv`` order (without
#: ``observation_no``; ``actual_record_duration``, last in the CSV, is last here).
RAW_COLUMNS: tuple[str, ...] = (
    *_OSC_SCALARS,
    *(col for prefix in _LLITE_COUNTERS for col in _COUNTER_COLUMNS[prefix]),
    *(col for prefix in _OSC_COUNTERS for col in _COUNTER_COLUMNS[prefix]),
    *_OSC_LEVELS,
    *_RPC_LINES,
    "actual_record_duration",
)

#: DIAL's derived columns (stage 2), in ``columns.csv`` order.
DERIVED_COLUMNS: tuple[str, ...] = (
    "is_dist_centered",
    "avg_pages_per_write_rpc",
    "write_avg_xfer_speed",
    "write_max_xfer_speed",
    "used_pct_dirty_cache",
    "waittime_to_mrif_ratio",
    "avg_waittime",
    "write_rpc_generation_rate",
    "avg_write_rpc_latency_per_unit_data",
    "avg_write_rpc_waittime",
    "avg_rpcs_in_flight",
)

#: Our extras (stage 2), computed from DIAL's raw columns alone so the dataset has them too.
#: Rates in MB/s (10^6 B/s) or per second, sizes in 4 KiB pages or bytes, times in microseconds.
EXTRA_COLUMNS: tuple[str, ...] = (
    "x_mbps",  # OSC read + write bytes per second / 1e6: the dataset README's throughput
    "x_read_mbps",
    "x_write_mbps",
    "x_read_fraction",  # read bytes / (read + write bytes); NaN when idle
    "x_dominant_write",  # 1 write, 0 read (DIAL's choice of model), NaN when idle
    "x_read_rpc_pages",  # mean read RPC size in 4 KiB pages
    "x_write_rpc_pages",
    "x_read_rpcs_per_s",
    "x_write_rpcs_per_s",
    "x_read_rpc_usec",  # mean ost_read latency (send to reply)
    "x_write_rpc_usec",
    "x_rpc_usec",  # mean latency over all read and write RPCs
    "x_llite_mbps",  # application read + write bytes per second / 1e6
    "x_llite_read_bytes_mean",  # mean application read request size
    "x_llite_write_bytes_mean",
    "x_log2_mppr",
    "x_log2_mrif",
    "x_rpc_fill",  # mean data RPC pages / max_pages_per_rpc
    "x_rif_fill",  # mean RPCs in flight (req_active) / max_rpcs_in_flight
)

#: Every column a model may see, in a fixed order: DIAL's columns as in ``columns.csv``, then
#: ours.  All of them exist for live snapshots, pfsim and the dataset alike.
FEATURE_COLUMNS: tuple[str, ...] = (*RAW_COLUMNS[:-1], *DERIVED_COLUMNS, RAW_COLUMNS[-1], *EXTRA_COLUMNS)

#: Labels of the pages-per-RPC histogram rows kept (2.15 RPCs are at most 16 MiB = 4096 pages).
PPR_LABELS: tuple[int, ...] = tuple(1 << i for i in range(13))
#: Labels of the RPCs-in-flight histogram rows (Lustre caps the index at 31).
RIF_LABELS: tuple[int, ...] = tuple(range(32))

#: (block, op) -> the histogram's rows and their column names.
_HIST_ROWS: dict[tuple[str, str], tuple[tuple[int, ...], tuple[str, ...]]] = {
    (block, op): (labels, tuple(f"x_hist_{short}_{op}_{label}" for label in labels))
    for block, short, labels in (("pages_per_rpc", "ppr", PPR_LABELS), ("rpcs_in_flight", "rif", RIF_LABELS))
    for op in ("read", "write")
}
_HIST_COLUMNS: tuple[str, ...] = tuple(name for _, names in _HIST_ROWS.values() for name in names)

#: Stage-1 columns only a live snapshot (real or pfsim) provides; the dataset lacks them, so
#: they are not in :data:`FEATURE_COLUMNS`.  ``x_prev_write_rif_bytes`` is an input of
#: ``write_rpc_generation_rate`` that :func:`from_dataset` rebuilds from the preceding row.
LIVE_COLUMNS: tuple[str, ...] = (
    *_TRUE_RPC_LINES,
    "x_read_rif_at_send",
    "x_write_rif_at_send",
    "x_stats_cleared",
    "x_prev_write_rif_bytes",
    *_HIST_COLUMNS,
)


# --------------------------------------------------------------------------------------------
# Stage 1
# --------------------------------------------------------------------------------------------


#: One counter over one interval: DIAL's four numbers (count, min, max, sum).  A plain tuple:
#: twelve are built per OSC and probe.
_Interval = tuple[float, float, float, float]

_EMPTY: _Interval = (0.0, 0.0, 0.0, 0.0)


def _number(value: object) -> float:
    """A scalar file's value as a float, NaN if absent or not a number."""
    if isinstance(value, bool) or value is None:
        return NAN
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return NAN


def _start_moved(prev: Header | None, cur: Header | None) -> bool:
    """True when both headers carry ``start_time`` and it changed (a clear or a remount)."""
    if not prev or not cur or "start_time" not in prev or "start_time" not in cur:
        return False
    return prev["start_time"] != cur["start_time"]


def _stats_cleared(prev: Mapping[str, Counter], cur: Mapping[str, Counter], moved: bool) -> bool:
    """Whether a ``stats`` file was cleared between two reads (see the module docstring)."""
    if moved:
        return True
    for name, before in prev.items():
        after = cur.get(name)
        if after is None:  # the line vanished: its count went back to 0
            if before["samples"] > 0:
                return True
            continue
        if after["samples"] < before["samples"]:
            return True
        if before["sum"] is not None and after["sum"] is not None and after["sum"] < before["sum"]:
            return True
    return False


def _counter_interval(before: Counter | None, after: Counter | None, cleared: bool) -> _Interval:
    """The interval's count, min, max and sum of one counter (module docstring, stage 1)."""
    if after is None:  # no line: no sample since the (last) clear
        return _EMPTY
    if cleared or before is None or before["samples"] == 0:
        before = None
    samples = after["samples"] - (before["samples"] if before else 0)
    if samples <= 0:
        return _EMPTY
    if after["sum"] is None or after["min"] is None or after["max"] is None:
        return (float(samples), NAN, NAN, NAN)  # count-only line
    if before is None:
        return (float(samples), float(after["min"]), float(after["max"]), float(after["sum"]))
    if before["sum"] is None or before["min"] is None or before["max"] is None:
        return (float(samples), NAN, NAN, NAN)
    total = after["sum"] - before["sum"]  # exact: Python ints
    if samples == 1:
        return (1.0, float(total), float(total), float(total))
    mean = min(max(total / samples, float(after["min"])), float(after["max"]))
    high = float(after["max"]) if after["max"] > before["max"] else mean
    low = float(after["min"]) if after["min"] < before["min"] else mean
    return (float(samples), low, high, float(total))


def _stats_columns(
    prefixes: Mapping[str, str],
    prev_stats: Mapping[str, Counter] | None,
    prev_header: Header | None,
    cur_stats: Mapping[str, Counter] | None,
    cur_header: Header | None,
) -> tuple[dict[str, float], bool | None]:
    """DIAL's counter columns of one ``stats`` file, and whether it was cleared (None: unknown)."""
    out: dict[str, float] = {}
    if prev_stats is None or cur_stats is None:
        for prefix in prefixes:
            out.update(dict.fromkeys(_COUNTER_COLUMNS[prefix], NAN))
        return out, None
    cleared = _stats_cleared(prev_stats, cur_stats, _start_moved(prev_header, cur_header))
    for prefix, name in prefixes.items():
        interval = _counter_interval(prev_stats.get(name), cur_stats.get(name), cleared)
        out.update(zip(_COUNTER_COLUMNS[prefix], interval, strict=True))
    return out, cleared


def _histogram(stats: RpcStats, block: str, op: str) -> Mapping[int, int]:
    """One histogram column of ``rpc_stats`` with integer labels (JSON turns them into strings)."""
    pair = stats.get(block)
    if not isinstance(pair, dict):
        return {}
    column: Mapping[Any, int] = pair.get(op) or {}
    if type(next(iter(column), 0)) is int:  # as parsed (labels all ints): no copy, this runs 8 times per OSC
        return column
    return {int(label): int(count) for label, count in column.items()}


#: Each histogram column's row labels as a set, and a zero per label (for ``map``'s default).
_HIST_SETS = {key: (frozenset(labels), (0,) * len(labels)) for key, (labels, _) in _HIST_ROWS.items()}


def _went_down(before: Mapping[int, int], after: Mapping[int, int]) -> bool:
    """Whether any bucket of ``before`` is larger than the same bucket of ``after`` (absent: 0)."""
    return any(map(operator.gt, before.values(), map(after.get, before, itertools.repeat(0))))


#: What :func:`_rpc_histograms_many` gives per OSC, in this order.
_HIST_OUT: tuple[str, ...] = (*_HIST_COLUMNS, "x_read_rif_at_send", "x_write_rif_at_send")
#: Where each op's rpcs-in-flight column lies among :data:`_HIST_COLUMNS`.
_RIF_SPANS = tuple(
    slice(start, start + len(RIF_LABELS))
    for start in (_HIST_COLUMNS.index("x_hist_rif_read_0"), _HIST_COLUMNS.index("x_hist_rif_write_0"))
)


def _hist_counts(stats: RpcStats) -> tuple[list[int], bool]:
    """The count at each kept label of every histogram column (:data:`_HIST_COLUMNS` order).

    Rows above a column's last kept label (none in 2.15) are added to it (see PPR_LABELS); the
    flag says that happened, so that a clear must be looked for label by label.
    """
    counts: list[int] = []
    folded = False
    for key, (labels, _) in _HIST_ROWS.items():
        column = _histogram(stats, *key)
        label_set, zeros = _HIST_SETS[key]
        if column.keys() <= label_set:
            counts += map(column.get, labels, zeros)
            continue
        folded = True
        by_label = dict.fromkeys(labels, 0)
        for label, count in column.items():
            by_label[min(label, labels[-1])] += count
        counts += by_label.values()
    return counts, folded


def _rpc_histograms_many(
    pairs: Sequence[tuple[RpcStats | None, RpcStats | None]],
) -> tuple[list[list[float]], list[bool | None]]:
    """For each (prev, cur) ``rpc_stats`` pair: the values of :data:`_HIST_OUT`, and whether cleared.

    The histogram deltas ``x_hist_*`` (the current counts where the file was cleared) and the
    ``x_*_rif_at_send`` means; all NaN, and None for cleared, when either side is missing.  The
    arithmetic runs over all pairs at once (counts are exact in float64 below 2^53).  A label
    of ``prev`` missing from ``cur`` had a count that went to 0 (a clear) or was 0 all along, so
    differencing the counts at the kept labels is the same as differencing label by label.
    """
    values: list[list[float]] = [[NAN] * len(_HIST_OUT) for _ in pairs]
    cleared: list[bool | None] = [None] * len(pairs)
    known: list[int] = []
    befores: list[list[int]] = []
    afters: list[list[int]] = []
    seen: list[bool] = []  # a clear the kept counts do not show: start_time moved, or a folded label went down
    for i, (prev, cur) in enumerate(pairs):
        if prev is None or cur is None:
            continue
        before, folded_before = _hist_counts(prev)
        after, folded_after = _hist_counts(cur)
        moved = _start_moved(prev.get("header"), cur.get("header"))
        if folded_before or folded_after:
            moved = moved or any(_went_down(_histogram(prev, *key), _histogram(cur, *key)) for key in _HIST_ROWS)
        known.append(i)
        befores.append(before)
        afters.append(after)
        seen.append(moved)
    if not known:
        return values, cleared
    before_counts = np.array(befores, dtype=np.float64)
    after_counts = np.array(afters, dtype=np.float64)
    was_cleared = np.array(seen) | (before_counts > after_counts).any(axis=1)
    delta = np.where(was_cleared[:, None], after_counts, after_counts - before_counts)
    columns = [delta]
    for span in _RIF_SPANS:
        rows = delta[:, span]
        total = rows.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (rows * np.array(RIF_LABELS, dtype=np.float64)).sum(axis=1) / total
        columns.append(np.where(total != 0, mean, NAN)[:, None])
    table = np.concatenate(columns, axis=1).tolist()
    for i, row, flag in zip(known, table, was_cleared.tolist(), strict=True):
        values[i] = row
        cleared[i] = flag
    return values, cleared


def _mean0(total: float, count: float) -> float:
    """DIAL's ``get_average``: sum / count, 0 without samples (NaN stays NaN)."""
    if math.isnan(total) or math.isnan(count):
        return NAN
    return total / count if count else 0.0


class OscInterval(NamedTuple):
    """Stage 1's input for one OSC: two probes ``seconds`` apart, of the OSC and of its llite mount.

    ``prev_llite`` / ``cur_llite`` are None when not read.  ``prev_interval`` is the previous
    result of stage 1 for the same OSC, if any: it gives ``x_prev_write_rif_bytes`` DIAL's exact
    meaning (see the module docstring).
    """

    prev: OscSnapshot
    cur: OscSnapshot
    prev_llite: LliteSnapshot | None
    cur_llite: LliteSnapshot | None
    seconds: float
    prev_interval: Mapping[str, float] | None = None


def interval_counters(
    prev: OscSnapshot,
    cur: OscSnapshot,
    prev_llite: LliteSnapshot | None,
    cur_llite: LliteSnapshot | None,
    seconds: float,
    *,
    prev_interval: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Stage 1: DIAL's raw columns (:data:`RAW_COLUMNS`) and :data:`LIVE_COLUMNS` of one OSC.

    ``prev`` and ``cur`` are two probes of the same OSC ``seconds`` apart, ``prev_llite`` and
    ``cur_llite`` the same two probes of its llite mount (None: not read).  ``prev_interval`` is
    the previous result of this function for the same OSC, if any: it gives
    ``x_prev_write_rif_bytes`` DIAL's exact meaning (see the module docstring).  Columns whose
    file is missing from either snapshot are NaN.  :func:`interval_counters_many` is the same
    for many OSCs at once.
    """
    return interval_counters_many([OscInterval(prev, cur, prev_llite, cur_llite, seconds, prev_interval)])[0]


def _llite_columns(
    prev_llite: LliteSnapshot | None, cur_llite: LliteSnapshot | None
) -> tuple[dict[str, float], bool | None]:
    return _stats_columns(
        _LLITE_COUNTERS,
        prev_llite.get("stats") if prev_llite is not None else None,
        prev_llite.get("stats_header") if prev_llite is not None else None,
        cur_llite.get("stats") if cur_llite is not None else None,
        cur_llite.get("stats_header") if cur_llite is not None else None,
    )


def interval_counters_many(intervals: Sequence[OscInterval]) -> list[dict[str, float]]:
    """Stage 1 for many OSCs (e.g. every OSC of one probe): :func:`interval_counters` of each.

    The same rows for less: the histograms (most of the work) are differenced for all OSCs at
    once, and the columns of an llite mount that many OSCs share are computed once.
    """
    hist_values, hist_cleared = _rpc_histograms_many(
        [(interval.prev.get("rpc_stats"), interval.cur.get("rpc_stats")) for interval in intervals]
    )
    llites: dict[tuple[int, int], tuple[dict[str, float], bool | None]] = {}  # by the snapshots' ids
    rows = []
    for interval, hist, rpc_cleared in zip(intervals, hist_values, hist_cleared, strict=True):
        prev, cur = interval.prev, interval.cur
        out: dict[str, float] = {}
        tunables = cur.get("tunables")
        for column, name in _OSC_TUNABLES.items():
            out[column] = _number(tunables.get(name)) if tunables is not None else NAN

        mount = (id(interval.prev_llite), id(interval.cur_llite))  # alive in `intervals`: ids stay unique
        if mount not in llites:
            llites[mount] = _llite_columns(interval.prev_llite, interval.cur_llite)
        llite_cols, llite_cleared = llites[mount]
        osc_cols, osc_cleared = _stats_columns(
            _OSC_COUNTERS, prev.get("stats"), prev.get("stats_header"), cur.get("stats"), cur.get("stats_header")
        )
        out.update(llite_cols)
        out.update(osc_cols)

        rpc = cur.get("rpc_stats")
        for column, line in _RPC_LINES.items():
            value = _number(rpc.get(line)) if rpc is not None else NAN
            out[column] = value % 10  # DIAL's last-digit parse, see the module docstring
        for column, line in _TRUE_RPC_LINES.items():
            out[column] = _number(rpc.get(line)) if rpc is not None else NAN
        out["actual_record_duration"] = float(interval.seconds)

        flags = [flag for flag in (llite_cleared, osc_cleared, rpc_cleared) if flag is not None]
        out["x_stats_cleared"] = float(any(flags)) if flags else NAN

        # DIAL: prev.cur_write_rif * avg(write bytes of the interval that ended at prev).
        prev_rpc = prev.get("rpc_stats")
        prev_rif = _number(prev_rpc.get("write_rpcs_in_flight")) % 10 if prev_rpc is not None else NAN
        source: Mapping[str, float] = interval.prev_interval if interval.prev_interval is not None else out
        prev_avg = _mean0(
            source.get("ost_write_rpc_bytes_data.samples_sum", NAN),
            source.get("ost_write_rpc_bytes_data.no_of_samples", NAN),
        )
        out["x_prev_write_rif_bytes"] = prev_rif * prev_avg
        out.update(zip(_HIST_OUT, hist, strict=True))
        rows.append(out)
    return rows


# --------------------------------------------------------------------------------------------
# Stage 2: one implementation over column arrays, for a row and for a whole data frame
# --------------------------------------------------------------------------------------------


def _avg0(total: FloatArray, count: FloatArray) -> FloatArray:
    """DIAL's ``get_average`` per row: sum / count, 0 where count is 0, NaN where unknown."""
    return np.where(count == 0, 0.0, total / count)


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """num / den, NaN where den is 0 or unknown (our extras: undefined is not zero)."""
    return np.where(den > 0, num / den, NAN)


def _dist_centered(col: Callable[[str], FloatArray], avg_pages: FloatArray, mppr: FloatArray) -> FloatArray:
    """DIAL's ``is_distribution_centered`` on the write pages-per-RPC histogram (module docstring)."""
    write = np.stack([col(f"x_hist_ppr_write_{label}") for label in PPR_LABELS], axis=1)
    read = np.stack([col(f"x_hist_ppr_read_{label}") for label in PPR_LABELS], axis=1)
    known = ~(np.isnan(write).any(axis=1) | np.isnan(read).any(axis=1))
    write, read = np.nan_to_num(write), np.nan_to_num(read)
    total = write.sum(axis=1)
    # Rows are printed up to the last non-empty bucket of either column (at least one row).
    nonzero = (write > 0) | (read > 0)
    last = np.where(nonzero.any(axis=1), len(PPR_LABELS) - 1 - np.argmax(nonzero[:, ::-1], axis=1), 0)
    log2 = np.log2(mppr)
    is_label = np.isfinite(log2) & (log2 == np.round(log2)) & (log2 >= 0) & (log2 < len(PPR_LABELS))
    index = np.where(is_label, log2, 0).astype(np.int64)
    rows = np.arange(len(total))
    count = write[rows, index]
    cumulative = np.cumsum(write, axis=1)[rows, index]
    safe = np.where(total > 0, total, 1.0)
    # Lustre's pct(): integer a * 100 / b (exact in float64 for any realistic count).
    below = np.floor(cumulative * 100 / safe) - np.floor(count * 100 / safe)
    around = is_label & (index <= last) & (below <= _DECENTERED_PCT)
    threshold = ((100 - _DECENTERED_PCT) / 100) * mppr  # DIAL's expression, same rounding
    centered = (avg_pages == 0) | (total == 0) | ((avg_pages >= threshold) & around)
    computed = np.where(np.isnan(avg_pages) | np.isnan(mppr), NAN, centered.astype(np.float64))
    # Without a histogram, keep a value DIAL recorded from the real one (dataset rows), else NaN.
    return np.where(known, computed, col("is_dist_centered"))


def _derive_arrays(col: Callable[[str], FloatArray]) -> dict[str, FloatArray]:
    """Stage 2 over column arrays; ``col(name)`` returns a float column (NaN when absent)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 and NaN are handled explicitly
        return _derive_unchecked(col)


def _derive_unchecked(col: Callable[[str], FloatArray]) -> dict[str, FloatArray]:
    mppr, mrif, mdm = col(_CFG + "mppr_value"), col(_CFG + "mrif_value"), col(_CFG + "mdm_value")
    duration = col("actual_record_duration")
    rb_n, rb_sum = col("ost_read_rpc_bytes_data.no_of_samples"), col("ost_read_rpc_bytes_data.samples_sum")
    wb_n, wb_sum = col("ost_write_rpc_bytes_data.no_of_samples"), col("ost_write_rpc_bytes_data.samples_sum")
    ru_n, ru_sum = col("ost_read_rpc_usec_data.no_of_samples"), col("ost_read_rpc_usec_data.samples_sum")
    wu_n, wu_sum = col("ost_write_rpc_usec_data.no_of_samples"), col("ost_write_rpc_usec_data.samples_sum")
    wt_n, wt_sum = col("osc_req_waittime_data.no_of_samples"), col("osc_req_waittime_data.samples_sum")
    ra_n, ra_sum = col("osc_req_active_data.no_of_samples"), col("osc_req_active_data.samples_sum")
    lr_n, lr_sum = col("llite_stats_read_bytes.no_of_samples"), col("llite_stats_read_bytes.samples_sum")
    lw_n, lw_sum = col("llite_stats_write_bytes.no_of_samples"), col("llite_stats_write_bytes.samples_sum")

    # DIAL's columns: its expressions in its order of operations, so that floats match bit for bit.
    avg_write_bytes = _avg0(wb_sum, wb_n)
    avg_pages = avg_write_bytes / PAGE_BYTES
    avg_write_usec = _avg0(wu_sum, wu_n)
    avg_wait = _avg0(wt_sum, wt_n)
    avg_active = _avg0(ra_sum, ra_n)
    xfer = np.where(wu_sum == 0, 0.0, np.trunc((wb_sum / wu_sum) * 1000000))
    generated = (col("cur_write_rif") * avg_write_bytes) + wb_sum - col("x_prev_write_rif_bytes")
    out = {
        "is_dist_centered": _dist_centered(col, avg_pages, mppr),
        "avg_pages_per_write_rpc": avg_pages,
        "write_avg_xfer_speed": xfer,
        "write_max_xfer_speed": mrif * xfer,
        "used_pct_dirty_cache": ((col("cur_dirty_bytes") / MIB) / mdm) * 100,
        "waittime_to_mrif_ratio": np.trunc(np.trunc(avg_wait) / mrif),
        "avg_waittime": avg_wait,
        "write_rpc_generation_rate": np.where(duration > 0, np.trunc(generated / duration), NAN),
        "avg_write_rpc_latency_per_unit_data": np.where(
            (avg_pages == 0) | (avg_active == 0), 0.0, avg_write_usec / (avg_pages * avg_active)
        ),
        "avg_write_rpc_waittime": avg_write_usec,
        "avg_rpcs_in_flight": avg_active,
    }
    # DIAL's 0-for-empty columns must still say NaN when their inputs are unknown.
    unknown = {
        "avg_pages_per_write_rpc": wb_sum + wb_n,
        "write_avg_xfer_speed": wb_sum + wu_sum,
        "write_max_xfer_speed": wb_sum + wu_sum + mrif,
        "waittime_to_mrif_ratio": wt_sum + wt_n + mrif,
        "avg_waittime": wt_sum + wt_n,
        "avg_write_rpc_latency_per_unit_data": wb_sum + wb_n + wu_sum + wu_n + ra_sum + ra_n,
        "avg_write_rpc_waittime": wu_sum + wu_n,
        "avg_rpcs_in_flight": ra_sum + ra_n,
    }
    for name, inputs in unknown.items():
        out[name] = np.where(np.isnan(inputs), NAN, out[name])

    osc_bytes = rb_sum + wb_sum
    out |= {
        "x_mbps": _ratio(osc_bytes, duration) / MB,
        "x_read_mbps": _ratio(rb_sum, duration) / MB,
        "x_write_mbps": _ratio(wb_sum, duration) / MB,
        "x_read_fraction": _ratio(rb_sum, osc_bytes),
        # DIAL: the read model iff read bytes > write bytes.
        "x_dominant_write": np.where(osc_bytes > 0, (wb_sum >= rb_sum).astype(np.float64), NAN),
        "x_read_rpc_pages": _ratio(rb_sum, rb_n) / PAGE_BYTES,
        "x_write_rpc_pages": _ratio(wb_sum, wb_n) / PAGE_BYTES,
        "x_read_rpcs_per_s": _ratio(rb_n, duration),
        "x_write_rpcs_per_s": _ratio(wb_n, duration),
        "x_read_rpc_usec": _ratio(ru_sum, ru_n),
        "x_write_rpc_usec": _ratio(wu_sum, wu_n),
        "x_rpc_usec": _ratio(ru_sum + wu_sum, ru_n + wu_n),
        "x_llite_mbps": _ratio(lr_sum + lw_sum, duration) / MB,
        "x_llite_read_bytes_mean": _ratio(lr_sum, lr_n),
        "x_llite_write_bytes_mean": _ratio(lw_sum, lw_n),
        "x_log2_mppr": np.where(mppr > 0, np.log2(mppr), NAN),
        "x_log2_mrif": np.where(mrif > 0, np.log2(mrif), NAN),
        "x_rpc_fill": _ratio(osc_bytes, rb_n + wb_n) / PAGE_BYTES / mppr,
        "x_rif_fill": _ratio(ra_sum, ra_n) / mrif,
    }
    return out


def derive_many(rows: Sequence[Mapping[str, float]]) -> list[dict[str, float]]:
    """Stage 2 for many rows at once (e.g. every OSC of one probe): one :func:`derive` per row.

    Same values as calling :func:`derive` on each row, at about the cost of one call: the work is
    done once over column arrays.
    """
    if not rows:
        return []

    def col(name: str) -> FloatArray:
        # numpy reads None (an absent column) as NaN.
        return np.array([row.get(name) for row in rows], dtype=np.float64)

    derived = _derive_arrays(col)
    names = list(derived)
    columns = [derived[name].tolist() for name in names]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def derive(raw: Mapping[str, float]) -> dict[str, float]:
    """Stage 2 for one row: :data:`DERIVED_COLUMNS` and :data:`EXTRA_COLUMNS` from raw columns.

    ``raw`` holds :data:`RAW_COLUMNS` (and, live, :data:`LIVE_COLUMNS`); absent ones count as
    unknown (NaN).  Definitions: the module docstring.
    """
    return derive_many([raw])[0]


def osc_features(
    prev: OscSnapshot,
    cur: OscSnapshot,
    prev_llite: LliteSnapshot | None,
    cur_llite: LliteSnapshot | None,
    seconds: float,
    *,
    prev_interval: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Both stages for one OSC: :func:`interval_counters` followed by :func:`derive`.

    The result holds every name of :data:`FEATURE_COLUMNS` and of :data:`LIVE_COLUMNS`; pass it
    back as ``prev_interval`` on the next call for the same OSC.  For many OSCs per probe,
    :func:`osc_features_many` gives the same rows for much less.
    """
    return osc_features_many([OscInterval(prev, cur, prev_llite, cur_llite, seconds, prev_interval)])[0]


def osc_features_many(intervals: Sequence[OscInterval]) -> list[dict[str, float]]:
    """Both stages for many OSCs: :func:`interval_counters_many`, then one :func:`derive_many`."""
    raws = interval_counters_many(intervals)
    for raw, derived in zip(raws, derive_many(raws), strict=True):
        raw.update(derived)  # the derived names are not raw names: the row is {**raw, **derived}
    return raws


# --------------------------------------------------------------------------------------------
# Row helpers and the dataset
# --------------------------------------------------------------------------------------------


def _get(row: Mapping[str, Any] | pd.Series, name: str) -> float:
    value = row.get(name)
    return NAN if value is None else float(value)


def osc_throughput_mbps(row: Mapping[str, Any] | pd.Series) -> float:
    """OSC throughput of an interval in MB/s (10^6 B/s), as the dataset README defines it.

    (``ost_read_rpc_bytes_data.samples_sum`` + ``ost_write_rpc_bytes_data.samples_sum``) /
    ``actual_record_duration``; NaN when the duration is not positive or a value is unknown.

    >>> osc_throughput_mbps({"ost_read_rpc_bytes_data.samples_sum": 200_000_000,
    ...                      "ost_write_rpc_bytes_data.samples_sum": 0, "actual_record_duration": 0.5})
    400.0
    """
    moved = _get(row, "ost_read_rpc_bytes_data.samples_sum") + _get(row, "ost_write_rpc_bytes_data.samples_sum")
    duration = _get(row, "actual_record_duration")
    return moved / duration / MB if duration > 0 else NAN


def dominant_op(row: Mapping[str, Any] | pd.Series) -> Literal["read", "write"] | None:
    """DIAL's choice of model: "read" if more OSC bytes were read than written, else "write".

    None when the interval is idle (no OSC bytes moved) or the byte counts are unknown.

    >>> dominant_op({"ost_read_rpc_bytes_data.samples_sum": 8192, "ost_write_rpc_bytes_data.samples_sum": 0})
    'read'
    >>> dominant_op({"ost_read_rpc_bytes_data.samples_sum": 0, "ost_write_rpc_bytes_data.samples_sum": 0}) is None
    True
    """
    read = _get(row, "ost_read_rpc_bytes_data.samples_sum")
    write = _get(row, "ost_write_rpc_bytes_data.samples_sum")
    if math.isnan(read) or math.isnan(write) or read + write <= 0:
        return None
    # DIAL (tuning_rpc_param.py): read model iff read bytes > write bytes.
    return "read" if read > write else "write"


#: Columns that identify one OSC time series in the dataset.
_SERIES_KEYS = ("workload", "iteration", "osc")


def _prev_write_rif_bytes(df: pd.DataFrame) -> FloatArray:
    """DIAL's ``prev.cur_write_rif * avg(prev write bytes)`` from the preceding row of each series.

    NaN for a series' first row and after a gap in ``observation_no``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        per_row = df["cur_write_rif"].to_numpy(dtype=np.float64) * _avg0(
            df["ost_write_rpc_bytes_data.samples_sum"].to_numpy(dtype=np.float64),
            df["ost_write_rpc_bytes_data.no_of_samples"].to_numpy(dtype=np.float64),
        )
    keys = [key for key in _SERIES_KEYS if key in df.columns]
    order_by = [*keys, "observation_no"] if "observation_no" in df.columns else keys
    frame = pd.DataFrame({"value": per_row}, index=pd.RangeIndex(len(df)))
    for key in order_by:
        frame[key] = df[key].to_numpy()
    if order_by:
        frame = frame.sort_values(order_by, kind="stable")
    grouped = frame.groupby(keys, observed=True, sort=False) if keys else None
    previous = grouped["value"].shift(1) if grouped is not None else frame["value"].shift(1)
    if "observation_no" in frame.columns:
        step = grouped["observation_no"].diff() if grouped is not None else frame["observation_no"].diff()
        previous = previous.where(step == 1)
    result: FloatArray = previous.sort_index().to_numpy(dtype=np.float64)
    return result


def from_dataset(df: pd.DataFrame) -> pd.DataFrame:
    """Map rows of the shared dataset schema (``dev.parquet``) onto :data:`FEATURE_COLUMNS`.

    DIAL's raw columns are taken as they are (they are per-interval values: DIAL cleared the
    statistics after each probe), and :func:`derive`'s implementation computes the derived and
    extra columns from them, vectorised.  ``x_prev_write_rif_bytes`` comes from the preceding
    row of the same (workload, iteration, osc) series.  The result has ``df``'s index.  The
    first row of each series is an artefact of DIAL's collector (duration ~0, features never
    computed): skip it, and rows with ``actual_record_duration`` 0, when training.
    """
    missing = [name for name in RAW_COLUMNS if name not in df.columns]
    if missing:
        raise KeyError(f"dataset frame lacks DIAL raw columns: {', '.join(missing)}")
    rows = len(df)
    prev_rif = _prev_write_rif_bytes(df)

    def col(name: str) -> FloatArray:
        if name == "x_prev_write_rif_bytes":
            return prev_rif
        if name in df.columns:
            return df[name].to_numpy(dtype=np.float64)
        return np.full(rows, NAN)

    columns: dict[str, FloatArray] = {name: col(name) for name in RAW_COLUMNS}
    columns.update(_derive_arrays(col))
    mapped: pd.DataFrame = pd.DataFrame({name: columns[name] for name in FEATURE_COLUMNS}, index=df.index)
    return mapped
