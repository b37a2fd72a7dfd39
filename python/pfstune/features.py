"""The features a model sees: the only place they are computed (design rule 1).

Every feature comes from parsed Lustre statistics, whatever their source: a real client, pfsim's
text, or the recorded real dataset (``../shared/data/dial-lustre``, DIAL's CSV columns).  Training
and serving therefore share this module, and the DIAL column names and definitions are kept
*exactly* so that rows computed here and rows of the dataset mean the same thing.

Two stages
==========

**Stage 1, interval counters** -- :func:`interval_counters` turns two snapshots of one OSC (and of
its llite mount) taken ``seconds`` apart into DIAL's raw columns (:data:`RAW_COLUMNS`, the names
of the dataset's ``columns.csv``) plus live-only extras (:data:`LIVE_COLUMNS`).  It is one
implementation, over arrays: :func:`interval_columns` differences two probes of many OSCs held
as :class:`~pfstune.lustre.table.OscTable` (the numbers stage 1 reads of a snapshot, one row per
OSC).  Snapshots are packed into such tables (:func:`interval_counters_many`, and
:func:`interval_counters`, its batch of one); the agent gets its tables straight from the
backend (:meth:`~pfstune.backends._base.Backend.probe_table`; on a real client the Rust
extension reads the files into them, with the numbers the Python parsers give, tested).
:func:`osc_features_many` and :func:`osc_feature_columns` run both stages.

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
    flags such intervals so that a caller can drop them (the agent drops them and the interval
    after: a file read cut at a line boundary looks the same, and the next interval's delta
    from it would hold the missing counters' whole history).  A clear that is followed by more
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
  ``x_{read,write}_rif_at_send``, ``x_stats_cleared``, ``x_prev_write_rif_bytes`` (below) and
  ``x_prev_dirty_bytes``, ``cur_dirty_bytes`` read at ``prev``: the dirty level the interval
  began with (DIAL's tuner reads it from the snapshot before, to tell writes the cache absorbed
  from writes its RPCs carried, :mod:`pfstune.tuners.dial`).

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # imported where a frame is made (training); the agent's per-row path has no use for it,
    # and it is most of a command's start-up time (0.3 s of 1 s)
    import pandas as pd

from pfstune.lustre.table import (
    PPR_LABELS,
    RIF_LABELS,
    RPC_LINES,
    TUNABLES,
    OscTable,
    StatsTable,
)
from pfstune.lustre.types import LliteSnapshot, OscSnapshot

__all__ = [
    "DERIVED_COLUMNS",
    "EXTRA_COLUMNS",
    "FEATURE_COLUMNS",
    "LIVE_COLUMNS",
    "PREV_INTERVAL_COLUMNS",
    "RAW_COLUMNS",
    "FeatureRow",
    "FeatureTable",
    "OscInterval",
    "columns_to_rows",
    "derive",
    "derive_many",
    "dominant_op",
    "feature_matrix",
    "from_dataset",
    "interval_columns",
    "interval_counters",
    "interval_counters_many",
    "osc_feature_columns",
    "osc_features",
    "osc_features_many",
    "osc_throughput_mbps",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

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
    "x_prev_dirty_bytes",
    *_HIST_COLUMNS,
)

#: What stage 1 reads of ``prev_interval`` (the OSC's previous row): a caller may keep just these.
PREV_INTERVAL_COLUMNS: tuple[str, ...] = (
    "ost_write_rpc_bytes_data.samples_sum",
    "ost_write_rpc_bytes_data.no_of_samples",
)


# --------------------------------------------------------------------------------------------
# Stage 1: one implementation over tables (pfstune.lustre.table), for one OSC and for many
# --------------------------------------------------------------------------------------------

#: Beyond this, a float64 no longer holds every integer: such counter deltas are done in Python ints.
_EXACT = 1 << 53
#: Beyond this, an int64 difference of two counter values could overflow.
_SAFE = 1 << 62


def _moved(prev: FloatArray, cur: FloatArray) -> BoolArray:
    """Where both headers carry ``start_time`` and it changed (a clear or a remount)."""
    with np.errstate(invalid="ignore"):
        moved: BoolArray = ~np.isnan(prev) & ~np.isnan(cur) & (prev != cur)
    return moved


def _counter_interval(
    before: StatsTable, after: StatsTable, name: str, cleared: BoolArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """The interval's count, min, max and sum of counter ``name`` (module docstring, stage 1).

    ``before`` and ``after`` have the same columns.  Rows whose file is missing on either side
    are the caller's to blank.
    """
    rows = len(after)
    zero = np.zeros(rows)
    j = after.column(name)
    if j is None:  # no device printed the line: no sample since the (last) clear
        return zero, zero.copy(), zero.copy(), zero.copy()
    a_samples, b_samples = after.samples[:, j], before.samples[:, j]
    # A previous value counts only if the file was not cleared since and it had samples.
    use_before = ~cleared & before.line[:, j] & (b_samples != 0)
    samples = a_samples - np.where(use_before, b_samples, 0)
    active = after.line[:, j] & (samples > 0)  # else no sample in the interval: 0, 0, 0, 0
    count = np.where(active, samples.astype(np.float64), 0.0)
    a_lo, a_hi, a_sum = after.minimum[:, j], after.maximum[:, j], after.total[:, j]
    b_lo, b_hi, b_sum = before.minimum[:, j], before.maximum[:, j], before.total[:, j]
    a_valued, b_valued = after.valued[:, j], before.valued[:, j]
    unknown = active & (~a_valued | (use_before & ~b_valued))  # count-only lines
    fresh = active & a_valued & ~use_before  # after a clear or on first appearance: its own values
    delta = active & a_valued & use_before & b_valued
    total = np.where(delta, a_sum - b_sum, 0)
    lo_f, hi_f = a_lo.astype(np.float64), a_hi.astype(np.float64)
    total_f = total.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        # The interval's extremes lie between the cumulative extreme and the interval mean.
        mean = np.minimum(np.maximum(total_f / count, lo_f), hi_f)
    one = delta & (samples == 1)
    high = np.where(one, total_f, np.where(a_hi > b_hi, hi_f, mean))
    low = np.where(one, total_f, np.where(a_lo < b_lo, lo_f, mean))
    low = np.where(fresh, lo_f, np.where(delta, low, 0.0))
    high = np.where(fresh, hi_f, np.where(delta, high, 0.0))
    out_sum = np.where(fresh, a_sum.astype(np.float64), np.where(delta, total_f, 0.0))
    low[unknown] = high[unknown] = out_sum[unknown] = NAN
    big = delta & (
        (a_sum >= _SAFE) | (a_sum <= -_SAFE) | (b_sum >= _SAFE) | (b_sum <= -_SAFE) | (np.abs(total) > _EXACT)
    )
    big |= delta & (samples > _EXACT)
    for i in np.flatnonzero(big).tolist():
        # Python ints: an exact difference and a correctly rounded mean, as float64 could not give.
        n, exact = int(samples[i]), int(a_sum[i]) - int(b_sum[i])
        if n == 1:
            low[i] = high[i] = out_sum[i] = float(exact)
            continue
        estimate = min(max(exact / n, float(a_lo[i])), float(a_hi[i]))
        high[i] = float(a_hi[i]) if a_hi[i] > b_hi[i] else estimate
        low[i] = float(a_lo[i]) if a_lo[i] < b_lo[i] else estimate
        out_sum[i] = float(exact)
    return count, low, high, out_sum


def _stats_columns(
    prefixes: Mapping[str, str], prev: StatsTable, cur: StatsTable
) -> tuple[dict[str, FloatArray], BoolArray, BoolArray]:
    """DIAL's counter columns of one kind of ``stats`` file, whether it was cleared, and where that is known."""
    names = prev.names + tuple(name for name in cur.names if prev.column(name) is None)
    before, after = prev.reindex(names), cur.reindex(names)
    known = before.present & after.present
    # Cleared since prev: start_time moved, or any counter's count or sum went down (a line
    # that vanished has count 0 now).
    went_down = (after.samples < before.samples) | (before.summed & after.summed & (after.total < before.total))
    cleared = known & (_moved(before.start_time, after.start_time) | went_down.any(axis=1))
    out: dict[str, FloatArray] = {}
    for prefix, name in prefixes.items():
        values = _counter_interval(before, after, name, cleared)
        for column, value in zip(_COUNTER_COLUMNS[prefix], values, strict=True):
            out[column] = np.where(known, value, NAN)
    return out, cleared, known


def _went_down(before: Mapping[int, int], after: Mapping[int, int]) -> bool:
    """Whether any bucket of ``before`` is larger than the same bucket of ``after`` (absent: 0)."""
    return any(map(operator.gt, before.values(), map(after.get, before, itertools.repeat(0))))


#: What :func:`_rpc_histograms` gives per OSC, in this order.
_HIST_OUT: tuple[str, ...] = (*_HIST_COLUMNS, "x_read_rif_at_send", "x_write_rif_at_send")
#: Where each op's rpcs-in-flight column lies among :data:`_HIST_COLUMNS`.
_RIF_SPANS = tuple(
    slice(start, start + len(RIF_LABELS))
    for start in (_HIST_COLUMNS.index("x_hist_rif_read_0"), _HIST_COLUMNS.index("x_hist_rif_write_0"))
)
_RIF_WEIGHTS = np.array(RIF_LABELS, dtype=np.float64)


def _rpc_histograms(prev: OscTable, cur: OscTable) -> tuple[FloatArray, BoolArray, BoolArray]:
    """The values of :data:`_HIST_OUT` per OSC (columns), whether ``rpc_stats`` was cleared, where known.

    The histogram deltas ``x_hist_*`` (the current counts where the file was cleared) and the
    ``x_*_rif_at_send`` means; NaN where either side is missing.  Counts are exact in float64
    below 2^53.  A label of ``prev`` missing from ``cur`` had a count that went to 0 (a clear)
    or was 0 all along, so differencing the counts at the kept labels is the same as
    differencing label by label -- unless labels were folded into a kept one, where a clear
    is looked for label by label.
    """
    known = prev.rpc & cur.rpc
    moved = _moved(prev.rpc_start, cur.rpc_start)
    for i in sorted(set(prev.unfolded) | set(cur.unfolded)):
        if known[i] and not moved[i]:
            before, after = prev.full_histograms(i), cur.full_histograms(i)
            moved[i] = any(_went_down(b, a) for b, a in zip(before, after, strict=True))
    was_cleared = known & (moved | (prev.hist > cur.hist).any(axis=1))
    delta = np.where(was_cleared[:, None], cur.hist, cur.hist - prev.hist)
    columns = [delta]
    for span in _RIF_SPANS:
        rows = delta[:, span]
        total = rows.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (rows * _RIF_WEIGHTS).sum(axis=1) / total
        columns.append(np.where(total != 0, mean, NAN)[:, None])
    values = np.concatenate(columns, axis=1)
    values[~known] = NAN
    return values, was_cleared, known


def _mean0(total: FloatArray, count: FloatArray) -> FloatArray:
    """DIAL's ``get_average`` per row: sum / count, 0 without samples (NaN stays NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isnan(total) | np.isnan(count), NAN, np.where(count != 0, total / count, 0.0))


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


def interval_columns(
    prev: OscTable,
    cur: OscTable,
    seconds: FloatArray | float,
    prev_intervals: Sequence[Mapping[str, float] | None] | None = None,
) -> dict[str, FloatArray]:
    """Stage 1 over tables: row i of ``prev`` and of ``cur`` are two probes of one OSC ``seconds`` apart.

    Returns one array per column of :data:`RAW_COLUMNS` and :data:`LIVE_COLUMNS` (in the order
    of :func:`interval_counters`' rows).  ``prev_intervals[i]`` is the previous result for OSC i,
    if any (a row of these columns, e.g. from :func:`columns_to_rows`).  This is the one
    implementation of stage 1: :func:`interval_counters_many` packs snapshots into tables and
    calls it.
    """
    rows = len(cur)
    out: dict[str, FloatArray] = {}
    for j, column in enumerate(_OSC_TUNABLES):
        out[column] = cur.tunables[:, j]  # the configuration in force during the interval
    llite_cols, llite_cleared, llite_known = _stats_columns(_LLITE_COUNTERS, prev.llite, cur.llite)
    osc_cols, osc_cleared, osc_known = _stats_columns(_OSC_COUNTERS, prev.stats, cur.stats)
    out |= llite_cols
    out |= osc_cols
    lines = cur.rpc_lines  # NaN where rpc_stats or the line is missing
    with np.errstate(invalid="ignore"):
        for j, column in enumerate(_RPC_LINES):
            out[column] = np.remainder(lines[:, j], 10)  # DIAL's last-digit parse, see the module docstring
    for j, column in enumerate(_TRUE_RPC_LINES):
        out[column] = lines[:, j]
    out["actual_record_duration"] = np.broadcast_to(np.asarray(seconds, dtype=np.float64), (rows,)).copy()
    hist, rpc_cleared, rpc_known = _rpc_histograms(prev, cur)

    any_known = llite_known | osc_known | rpc_known
    any_cleared = (llite_known & llite_cleared) | (osc_known & osc_cleared) | (rpc_known & rpc_cleared)
    out["x_stats_cleared"] = np.where(any_known, any_cleared.astype(np.float64), NAN)

    # DIAL: prev.cur_write_rif * avg(write bytes of the interval that ended at prev).
    with np.errstate(invalid="ignore"):
        prev_rif = np.remainder(prev.rpc_lines[:, RPC_LINES.index("write_rpcs_in_flight")], 10)
    total = out["ost_write_rpc_bytes_data.samples_sum"].copy()
    count = out["ost_write_rpc_bytes_data.no_of_samples"].copy()
    sum_name, count_name = PREV_INTERVAL_COLUMNS
    for i, previous in enumerate(prev_intervals or ()):
        if previous is not None:  # else the RPCs in flight at prev are like the interval's own
            total[i] = previous.get(sum_name, NAN)
            count[i] = previous.get(count_name, NAN)
    out["x_prev_write_rif_bytes"] = prev_rif * _mean0(total, count)
    out["x_prev_dirty_bytes"] = prev.tunables[:, TUNABLES.index("cur_dirty_bytes")].copy()
    for j, column in enumerate(_HIST_OUT):
        out[column] = hist[:, j]
    return out


def _tables(intervals: Sequence[OscInterval]) -> tuple[OscTable, OscTable]:
    prev = OscTable.from_snapshots([i.prev for i in intervals], [i.prev_llite for i in intervals])
    cur = OscTable.from_snapshots([i.cur for i in intervals], [i.cur_llite for i in intervals])
    return prev, cur


def columns_to_rows(columns: Mapping[str, FloatArray]) -> list[dict[str, float]]:
    """Column arrays of equal length -> one ``{name: value}`` dict per row, in column order."""
    names = list(columns)
    if not names:
        return []
    table = np.column_stack([columns[name] for name in names]).tolist()
    return [dict(zip(names, values, strict=True)) for values in table]


class FeatureTable:
    """Feature columns of many OSCs as one matrix, handed out as one read-only row view per OSC.

    The agent gives each OSC's row to its tuner as a mapping; building a dict of ~190 names per
    OSC cost more than computing the features (1,000 OSCs per tick), so a :class:`FeatureRow`
    reads from the shared matrix instead, and :func:`feature_matrix` takes many rows' columns
    back out at once (a model's input).  The values are those of the columns, as floats.
    """

    def __init__(self, columns: Mapping[str, FloatArray]) -> None:
        """Hold ``columns`` (equal-length arrays, e.g. :func:`osc_feature_columns`) as rows."""
        self.names: tuple[str, ...] = tuple(columns)
        self.index: dict[str, int] = {name: j for j, name in enumerate(self.names)}
        size = len(next(iter(columns.values()))) if columns else 0
        self.matrix: FloatArray = (
            np.column_stack([columns[name] for name in self.names]) if columns else np.zeros((size, 0))
        )

    def __len__(self) -> int:
        return len(self.matrix)

    def rows(self) -> list[FeatureRow]:
        """One mapping per row, in order."""
        return [FeatureRow(self, i) for i in range(len(self.matrix))]


class FeatureRow(Mapping[str, float]):
    """One row of a :class:`FeatureTable`: ``{name: value}`` without a dict of its own.

    Equal to the dict :func:`osc_features` gives for the same OSC (same names, order, values).
    """

    __slots__ = ("_row", "_table")

    def __init__(self, table: FeatureTable, row: int) -> None:
        """Row ``row`` of ``table``."""
        self._table = table
        self._row = row

    def __getitem__(self, name: str) -> float:
        value: float = self._table.matrix.item(self._row, self._table.index[name])
        return value

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``, ``default`` if the row has no such column."""
        j = self._table.index.get(name)
        return default if j is None else self._table.matrix.item(self._row, j)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table.names)

    def __len__(self) -> int:
        return len(self._table.names)

    def __contains__(self, name: object) -> bool:
        return name in self._table.index

    def __repr__(self) -> str:
        return f"FeatureRow({dict(self)!r})"


def feature_matrix(rows: Sequence[Mapping[str, float]], names: Sequence[str]) -> FloatArray:
    """The columns ``names`` of ``rows`` as an (rows, names) float matrix, NaN where a row lacks one.

    Rows of one :class:`FeatureTable` (the agent's) are taken from its matrix in one step.
    """
    views = [row for row in rows if isinstance(row, FeatureRow)]
    if views and len(views) == len(rows) and all(view._table is views[0]._table for view in views):
        table = views[0]._table
        at = [table.index.get(name, -1) for name in names]
        picked: FloatArray = table.matrix[np.array([view._row for view in views])][:, at]
        missing = [j for j, column in enumerate(at) if column < 0]
        if missing:
            picked[:, missing] = NAN
        return picked
    unknown = [NAN] * len(names)
    return np.array([list(map(row.get, names, unknown)) for row in rows], dtype=np.float64).reshape(
        len(rows), len(names)
    )


def interval_counters_many(intervals: Sequence[OscInterval]) -> list[dict[str, float]]:
    """Stage 1 for many OSCs (e.g. every OSC of one probe): :func:`interval_counters` of each.

    The snapshots are packed into tables (:class:`~pfstune.lustre.table.OscTable`) and
    :func:`interval_columns` does every OSC at once.
    """
    if not intervals:
        return []
    prev, cur = _tables(intervals)
    seconds = np.array([float(i.seconds) for i in intervals])
    return columns_to_rows(interval_columns(prev, cur, seconds, [i.prev_interval for i in intervals]))


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
    """Both stages for many OSCs: the snapshots packed into tables, then :func:`osc_feature_columns`."""
    if not intervals:
        return []
    prev, cur = _tables(intervals)
    seconds = np.array([float(i.seconds) for i in intervals])
    return columns_to_rows(osc_feature_columns(prev, cur, seconds, [i.prev_interval for i in intervals]))


def osc_feature_columns(
    prev: OscTable,
    cur: OscTable,
    seconds: FloatArray | float,
    prev_intervals: Sequence[Mapping[str, float] | None] | None = None,
) -> dict[str, FloatArray]:
    """Both stages over tables: :func:`interval_columns`, then :func:`derive`'s columns from them.

    One array per name of :data:`FEATURE_COLUMNS` and :data:`LIVE_COLUMNS`, in the order of
    :func:`osc_features`' rows (:func:`columns_to_rows` makes those rows).
    """
    raw = interval_columns(prev, cur, seconds, prev_intervals)
    unknown = np.full(len(cur), NAN)
    derived = _derive_arrays(lambda name: raw.get(name, unknown))
    return raw | derived  # the derived names are not raw names: the row is {**raw, **derived}


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
_SERIES_KEYS = ("workload", "iteration", "client", "osc")  # client: in pfstune collect files


def _prev_write_rif_bytes(df: pd.DataFrame) -> FloatArray:
    """DIAL's ``prev.cur_write_rif * avg(prev write bytes)`` from the preceding row of each series.

    NaN for a series' first row and after a gap in ``observation_no``.
    """
    import pandas as pd

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
    import pandas as pd

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
