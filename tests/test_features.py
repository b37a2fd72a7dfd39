"""pfstune.features: stage 1 on hand-built snapshot pairs, stage 2 against DIAL's recorded columns,
and the same feature names, units and scale from pfsim's text and from the real dataset."""

from __future__ import annotations

import csv
import doctest
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pfstune import features
from pfstune.features import (
    DERIVED_COLUMNS,
    EXTRA_COLUMNS,
    FEATURE_COLUMNS,
    LIVE_COLUMNS,
    PPR_LABELS,
    RAW_COLUMNS,
    derive,
    dominant_op,
    from_dataset,
    interval_counters,
    osc_features,
    osc_throughput_mbps,
)
from pfstune.lustre import table
from pfstune.lustre.table import HIST_BLOCKS, RPC_LINES, TUNABLES
from pfstune.lustre.types import Counter, HistogramPair, LliteSnapshot, OscSnapshot, RpcStats
from tests.conftest import SHARED, SMALL_SCENARIO

DATASET = SHARED / "data" / "dial-lustre"
MIB = 1 << 20


# --------------------------------------------------------------------------------------------
# Builders for hand-made snapshots
# --------------------------------------------------------------------------------------------


def counter(samples: int, low: int | None, high: int | None, total: int | None, unit: str = "bytes") -> Counter:
    return Counter(samples=samples, unit=unit, min=low, max=high, sum=total, sumsq=None)


def hist_pair(read: Mapping[int, int] | None = None, write: Mapping[int, int] | None = None) -> HistogramPair:
    return HistogramPair(read=dict(read or {1: 0}), write=dict(write or {1: 0}))


def rpc_stats(
    *,
    start: float = 0.0,
    r_rif: int = 0,
    w_rif: int = 0,
    pending_w: int = 0,
    pending_r: int = 0,
    ppr: HistogramPair | None = None,
    rif: HistogramPair | None = None,
) -> RpcStats:
    return RpcStats(
        header={"snapshot_time": 1000.0, "start_time": start, "elapsed_time": 1000.0 - start},
        read_rpcs_in_flight=r_rif,
        write_rpcs_in_flight=w_rif,
        pending_write_pages=pending_w,
        pending_read_pages=pending_r,
        pages_per_rpc=ppr or hist_pair(),
        rpcs_in_flight=rif or hist_pair(),
        offset=hist_pair(),
    )


def osc(
    stats: dict[str, Counter],
    *,
    start: float = 100.0,
    mppr: int = 1024,
    mrif: int = 8,
    dirty: int = 0,
    rpc: RpcStats | None = None,
) -> OscSnapshot:
    return OscSnapshot(
        tunables={
            "max_pages_per_rpc": mppr,
            "max_rpcs_in_flight": mrif,
            "max_dirty_mb": 2000,
            "cur_dirty_bytes": dirty,
            "cur_grant_bytes": 8437760,
        },
        stats=stats,
        stats_header={"snapshot_time": 1000.0, "start_time": start, "elapsed_time": 1000.0 - start},
        rpc_stats=rpc if rpc is not None else rpc_stats(),
    )


def llite(stats: dict[str, Counter], start: float = 100.0) -> LliteSnapshot:
    return LliteSnapshot(stats=stats, stats_header={"snapshot_time": 1000.0, "start_time": start})


def four(row: Mapping[str, float], prefix: str) -> tuple[float, float, float, float]:
    n, lo, hi, s = (row[f"{prefix}.{f}"] for f in ("no_of_samples", "sample_min", "sample_max", "samples_sum"))
    return n, lo, hi, s


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


def test_dial_columns_are_the_dataset_columns_in_order() -> None:
    with (DATASET / "columns.csv").open(newline="") as handle:
        header = next(csv.reader(handle))
    dial = [c for c in FEATURE_COLUMNS if not c.startswith("x_")]
    assert dial == [c for c in header if c != "observation_no"]
    assert set(RAW_COLUMNS) | set(DERIVED_COLUMNS) == set(dial)
    assert all(c.startswith("x_") for c in (*EXTRA_COLUMNS, *LIVE_COLUMNS))
    assert len(set(FEATURE_COLUMNS) | set(LIVE_COLUMNS)) == len(FEATURE_COLUMNS) + len(LIVE_COLUMNS)


def test_the_table_columns_are_the_ones_stage_1_names() -> None:
    """pfstune.lustre.table lays its columns out in the order stage 1 reads them."""
    assert tuple(features._OSC_TUNABLES.values()) == TUNABLES
    assert tuple(features._RPC_LINES.values()) == RPC_LINES == tuple(features._TRUE_RPC_LINES.values())
    assert tuple(features._HIST_ROWS) == tuple((block, op) for block, op, _ in HIST_BLOCKS)
    assert PPR_LABELS is table.PPR_LABELS


def test_docstring_examples() -> None:
    result = doctest.testmod(features)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------------------------
# Stage 1
# --------------------------------------------------------------------------------------------


def test_counter_deltas_and_min_max_rules() -> None:
    prev = osc(
        {
            "read_bytes": counter(10, 4096, MIB, 10 * 65536),
            "write_bytes": counter(4, 8192, 8192, 4 * 8192),
            "ost_read": counter(10, 300, 9000, 20000, "usec"),
            "req_waittime": counter(12, 250, 9000, 22000, "usec"),
        }
    )
    cur = osc(
        {
            # 5 more reads of 4 MiB: the cumulative max rose (exact), the min did not (estimate).
            "read_bytes": counter(15, 4096, 4 * MIB, 10 * 65536 + 5 * 4 * MIB),
            # exactly one more write: its value is known.
            "write_bytes": counter(5, 4096, 8192, 4 * 8192 + 4096),
            # no new sample.
            "ost_read": counter(10, 300, 9000, 20000, "usec"),
            # a new minimum, max unchanged: min exact, max = mean clamped.
            "req_waittime": counter(14, 100, 9000, 22000 + 100 + 300, "usec"),
            # appeared during the interval: everything is the interval's own.
            "ost_write": counter(1, 700, 700, 700, "usec"),
        }
    )
    row = interval_counters(prev, cur, None, None, 0.5)
    assert four(row, "ost_read_rpc_bytes_data") == (5, 4 * MIB, 4 * MIB, 20 * MIB)
    assert four(row, "ost_write_rpc_bytes_data") == (1, 4096, 4096, 4096)
    assert four(row, "ost_read_rpc_usec_data") == (0, 0, 0, 0)
    assert four(row, "osc_req_waittime_data") == (2, 100, 200, 400)
    assert four(row, "ost_write_rpc_usec_data") == (1, 700, 700, 700)
    assert four(row, "osc_req_active_data") == (0, 0, 0, 0)  # no line in either: no sample
    assert row["x_stats_cleared"] == 0
    assert row["osc_rpc_configuration_current.mppr_value"] == 1024
    assert row["actual_record_duration"] == 0.5


def test_estimated_extremes_stay_inside_the_cumulative_range() -> None:
    prev = osc({"read_bytes": counter(2, 4096, 8 * MIB, 8 * MIB + 4096)})
    cur = osc({"read_bytes": counter(4, 4096, 8 * MIB, 8 * MIB + 4096 + 2 * 2048)})  # impossible mean 2048
    row = interval_counters(prev, cur, None, None, 0.5)
    assert four(row, "ost_read_rpc_bytes_data") == (2, 4096, 4096, 4096)


def test_counter_going_backwards_is_a_clear_not_a_negative() -> None:
    # Remount or a clear by someone else, in a file without start_time: counts went down.
    prev = osc({"read_bytes": counter(1000, 4096, MIB, 1000 * MIB), "ost_read": counter(1000, 1, 9, 5000, "usec")})
    cur = osc({"read_bytes": counter(3, MIB, MIB, 3 * MIB), "ost_read": counter(1003, 1, 9, 5010, "usec")})
    for snap in (prev, cur):
        snap["stats_header"] = {"snapshot_time": 1000.0}
    row = interval_counters(prev, cur, None, None, 0.5)
    assert four(row, "ost_read_rpc_bytes_data") == (3, MIB, MIB, 3 * MIB)
    # One counter going down means the whole file was cleared: the others are taken as they are.
    assert four(row, "ost_read_rpc_usec_data") == (1003, 1, 9, 5010)
    assert row["x_stats_cleared"] == 1
    assert all(row[c] >= 0 for c in RAW_COLUMNS if not c.startswith("llite_"))  # llite: not read, NaN


def test_cleared_header_takes_the_current_values_even_when_they_grew() -> None:
    prev = osc({"read_bytes": counter(10, 4096, 4096, 40960)}, start=100.0)
    grown = {"read_bytes": counter(50, MIB, MIB, 50 * MIB), "write_bytes": counter(2, 8192, 8192, 16384)}
    cur = osc(grown, start=900.0)
    row = interval_counters(prev, cur, None, None, 0.5)
    assert four(row, "ost_read_rpc_bytes_data") == (50, MIB, MIB, 50 * MIB)
    assert four(row, "ost_write_rpc_bytes_data") == (2, 8192, 8192, 16384)
    assert row["x_stats_cleared"] == 1


def test_line_vanishing_means_a_clear_with_no_sample_since() -> None:
    prev = osc({"read_bytes": counter(10, 4096, 4096, 40960)})
    cur = osc({})
    for snap in (prev, cur):
        snap["stats_header"] = {"snapshot_time": 1000.0}
    row = interval_counters(prev, cur, None, None, 0.5)
    assert four(row, "ost_read_rpc_bytes_data") == (0, 0, 0, 0)
    assert row["x_stats_cleared"] == 1


def test_llite_counters() -> None:
    before = llite({"read_bytes": counter(4, 16 * MIB, 16 * MIB, 64 * MIB)})
    after = llite({"read_bytes": counter(10, 16 * MIB, 16 * MIB, 160 * MIB)})
    row = interval_counters(osc({}), osc({}), before, after, 0.5)
    assert four(row, "llite_stats_read_bytes") == (6, 16 * MIB, 16 * MIB, 96 * MIB)
    assert four(row, "llite_stats_write_bytes") == (0, 0, 0, 0)
    assert derive(row)["x_llite_read_bytes_mean"] == 16 * MIB


def test_missing_files_give_nan_never_zero() -> None:
    prev, cur = osc({"read_bytes": counter(1, 1, 1, 1)}), osc({"read_bytes": counter(2, 1, 1, 2)})
    del prev["stats"], cur["tunables"], cur["rpc_stats"]
    row = osc_features(prev, cur, None, llite({}), 0.5)
    for prefix in ("ost_read_rpc_bytes_data", "osc_req_active_data", "llite_stats_read_bytes"):
        assert all(math.isnan(v) for v in four(row, prefix))
    for name in (
        "osc_rpc_configuration_current.mppr_value",
        "cur_dirty_bytes",
        "cur_write_rif",
        "x_write_rpcs_in_flight",
        "is_dist_centered",
        "used_pct_dirty_cache",
        "avg_pages_per_write_rpc",
        "write_max_xfer_speed",
        "waittime_to_mrif_ratio",
        "write_rpc_generation_rate",
        "x_mbps",
        "x_dominant_write",
        "x_stats_cleared",
        "x_hist_ppr_write_1024",
    ):
        assert math.isnan(row[name]), name
    assert dominant_op(row) is None
    assert math.isnan(osc_throughput_mbps(row))


def test_rpc_stats_lines_keep_dials_last_digit_and_the_true_value() -> None:
    snap = osc({}, rpc=rpc_stats(r_rif=3, w_rif=257, pending_w=1234, pending_r=0))
    row = interval_counters(osc({}), snap, None, None, 0.5)
    assert (row["cur_read_rif"], row["cur_write_rif"], row["pending_write_pages"]) == (3, 7, 4)
    assert (row["x_read_rpcs_in_flight"], row["x_write_rpcs_in_flight"], row["x_pending_write_pages"]) == (3, 257, 1234)


def test_histogram_deltas_and_clears() -> None:
    before = rpc_stats(ppr=hist_pair(read={1: 2, 2: 0, 4: 1}), rif=hist_pair(read={1: 2, 2: 1}))
    after = rpc_stats(ppr=hist_pair(read={1: 2, 2: 0, 4: 5}), rif=hist_pair(read={1: 4, 2: 3}))
    row = interval_counters(osc({}, rpc=before), osc({}, rpc=after), None, None, 0.5)
    assert (row["x_hist_ppr_read_4"], row["x_hist_ppr_read_1"]) == (4, 0)
    assert row["x_read_rif_at_send"] == pytest.approx((1 * 2 + 2 * 2) / 4)
    assert math.isnan(row["x_write_rif_at_send"])
    # A remount: buckets went down, so the current histogram is the interval's.
    again = rpc_stats(ppr=hist_pair(read={1: 1}))
    row = interval_counters(osc({}, rpc=after), osc({}, rpc=again), None, None, 0.5)
    assert (row["x_hist_ppr_read_1"], row["x_hist_ppr_read_4"]) == (1, 0)
    assert row["x_stats_cleared"] == 1
    # JSON snapshots carry the labels as strings; labels above 4096 pages land in the last row.
    loaded: Any = {"read": {"1": 0}, "write": {"8192": 3, "1024": 1}}
    row = interval_counters(osc({}), osc({}, rpc=rpc_stats(ppr=loaded)), None, None, 0.5)
    assert (row["x_hist_ppr_write_4096"], row["x_hist_ppr_write_1024"]) == (3, 1)


def test_prev_write_rif_bytes_uses_the_previous_interval_when_given() -> None:
    prev = osc({"write_bytes": counter(10, MIB, MIB, 10 * MIB)}, rpc=rpc_stats(w_rif=12))
    cur = osc({"write_bytes": counter(14, MIB, 4 * MIB, 10 * MIB + 4 * 2 * MIB)}, rpc=rpc_stats(w_rif=3))
    row = interval_counters(prev, cur, None, None, 0.5)
    assert row["x_prev_write_rif_bytes"] == 2 * (2 * MIB)  # last digit of 12, this interval's mean
    earlier = {"ost_write_rpc_bytes_data.samples_sum": 5.0 * MIB, "ost_write_rpc_bytes_data.no_of_samples": 5.0}
    row = osc_features(prev, cur, None, None, 0.5, prev_interval=earlier)
    assert row["x_prev_write_rif_bytes"] == 2 * MIB
    assert row["write_rpc_generation_rate"] == math.trunc((3 * 2 * MIB + 8 * MIB - 2 * MIB) / 0.5)


def test_the_dirty_level_the_interval_began_with_is_the_previous_probe_s() -> None:
    row = interval_counters(osc({}, dirty=3 * MIB), osc({}, dirty=7 * MIB), None, None, 0.5)
    assert (row["x_prev_dirty_bytes"], row["cur_dirty_bytes"]) == (3 * MIB, 7 * MIB)
    unread = osc({})
    del unread["tunables"]["cur_dirty_bytes"]  # the file could not be read at that probe
    assert math.isnan(interval_counters(unread, osc({}), None, None, 0.5)["x_prev_dirty_bytes"])


def test_a_batch_gives_each_osc_its_own_row() -> None:
    """Stage 1 over tables: a batch of unlike OSCs (different counters, files missing, clears,
    folded histogram labels) gives each the row it gets alone."""
    big = rpc_stats(ppr=hist_pair(write={1024: 3, 8192: 2}), w_rif=4)
    pairs = [
        (osc({"ost_write": counter(3, 5, 9, 20, "usec")}), osc({"ost_write": counter(5, 1, 9, 30, "usec")})),
        (osc({"read_bytes": counter(2, 4096, 4096, 8192)}), osc({"read_bytes": counter(1, 4096, 4096, 4096)})),
        (osc({}, rpc=big), osc({"req_active": counter(4, None, None, None, "reqs")}, rpc=big)),
        (OscSnapshot(tunables={"max_pages_per_rpc": 256}), osc({}, start=5.0)),
    ]
    mounts = [llite({"write_bytes": counter(1, 7, 7, 7)}), None, llite({}), llite({}, start=3.0)]
    intervals = [
        features.OscInterval(prev, cur, mounts[i], mounts[-1 - i], 0.25 * (i + 1))
        for i, (prev, cur) in enumerate(pairs)
    ]
    batch = features.osc_features_many(intervals)
    for interval, row in zip(intervals, batch, strict=True):
        alone = osc_features(*interval[:5])
        assert list(row) == list(alone)
        assert all((math.isnan(row[k]) and math.isnan(alone[k])) or row[k] == alone[k] for k in row)


def test_feature_rows_are_views_of_the_dict_rows() -> None:
    prev = osc({"write_bytes": counter(10, MIB, MIB, 10 * MIB)}, rpc=rpc_stats(w_rif=12))
    cur = osc({"write_bytes": counter(14, MIB, 4 * MIB, 10 * MIB + 4 * 2 * MIB)}, rpc=rpc_stats(w_rif=3))
    intervals = [features.OscInterval(prev, cur, None, None, 0.5), features.OscInterval(cur, cur, None, None, 0.5)]
    rows = features.osc_features_many(intervals)
    prev_table, cur_table = features._tables(intervals)
    table = features.FeatureTable(features.osc_feature_columns(prev_table, cur_table, np.array([0.5, 0.5])))
    views = table.rows()
    for view, row in zip(views, rows, strict=True):
        assert list(view) == list(row)
        assert len(view) == len(row)
        assert {k: v for k, v in view.items() if not math.isnan(v)} == {
            k: v for k, v in row.items() if not math.isnan(v)
        }
        assert view.get("nothing", -1.0) == -1.0
        assert "x_mbps" in view
        assert view["ost_write_rpc_bytes_data.samples_sum"] == row["ost_write_rpc_bytes_data.samples_sum"]
    names = [*FEATURE_COLUMNS[:5], "not a column"]
    from_views = features.feature_matrix(views, names)
    from_dicts = features.feature_matrix(rows, names)
    assert from_views.shape == (2, 6)
    assert np.array_equal(from_views, from_dicts, equal_nan=True)
    assert np.isnan(from_views[:, -1]).all()
    assert features.feature_matrix([], names).shape == (0, 6)


# --------------------------------------------------------------------------------------------
# is_dist_centered: DIAL's own algorithm on the text rows Lustre prints
# --------------------------------------------------------------------------------------------


def _printed_rows(read: list[int], write: list[int]) -> dict[int, tuple[int, int, int]]:
    """The write column of ``pages per rpc`` as DIAL parsed it: label -> (rpcs, %, cum %)."""
    read_tot, write_tot = sum(read), sum(write)

    def pct(a: int, b: int) -> int:
        return a * 100 // b if b else 0

    rows, read_cum, write_cum = {}, 0, 0
    for i, (r, w) in enumerate(zip(read, write, strict=True)):
        read_cum, write_cum = read_cum + r, write_cum + w
        rows[1 << i] = (w, pct(w, write_tot), pct(write_cum, write_tot))
        if read_cum == read_tot and write_cum == write_tot:
            break
    return rows


def _dial_is_centered(avg_pages: float, mppr: int, dist: dict[int, tuple[int, int, int]]) -> int:
    """DIAL's is_distribution_centered (random_config_stat_collection_script.py), transcribed."""
    empty = all(row[0] == 0 for row in dist.values())
    if avg_pages == 0 or empty:
        return 1
    around = None
    for key, row in dist.items():
        if key == mppr:
            around = not (row[2] - row[1] > 0.03)
            break
    return int(avg_pages >= ((100 - 0.03) / 100) * mppr and around is True)


def test_is_dist_centered_matches_dials_algorithm() -> None:
    rng = np.random.default_rng(7)
    checked = set()
    for trial in range(3000):
        mppr = int(rng.choice([1, 2, 4, 8, 256, 1024, 3, 100]))
        read = [0] * len(PPR_LABELS)
        write = [0] * len(PPR_LABELS)
        top = min(int(np.log2(max(mppr, 1))) + 2, len(PPR_LABELS))
        for i in rng.choice(len(PPR_LABELS), size=int(rng.integers(0, 4)), replace=True):
            write[min(int(i), top - 1)] += int(rng.choice([1, 2, 50, 1000]))
        if trial % 3 == 0:
            read[int(rng.integers(0, len(PPR_LABELS)))] += int(rng.integers(0, 5))
        if trial % 2 == 0:
            avg_pages = float(mppr * rng.choice([0.0, 0.5, 0.9997, 1.0, 2.0]))
        else:
            avg_pages = float(rng.uniform(0, 2 * mppr))
        raw: dict[str, float] = {
            "osc_rpc_configuration_current.mppr_value": mppr,
            "ost_write_rpc_bytes_data.no_of_samples": 1.0 if avg_pages else 0.0,
            "ost_write_rpc_bytes_data.samples_sum": avg_pages * 4096,
        }
        for label, r, w in zip(PPR_LABELS, read, write, strict=True):
            raw[f"x_hist_ppr_read_{label}"], raw[f"x_hist_ppr_write_{label}"] = r, w
        expected = _dial_is_centered(avg_pages, mppr, _printed_rows(read, write))
        assert derive(raw)["is_dist_centered"] == expected, (mppr, avg_pages, read, write)
        checked.add(expected)
    assert checked == {0, 1}


def test_is_dist_centered_from_a_snapshot_pair() -> None:
    before = rpc_stats(ppr=hist_pair(write={1: 5, 2: 0, 4: 0, 8: 0}))
    after = rpc_stats(ppr=hist_pair(write={1: 5, 2: 0, 4: 0, 8: 100}))
    prev = osc({"write_bytes": counter(5, 4096, 4096, 5 * 4096)}, mppr=8, rpc=before)
    cur = osc({"write_bytes": counter(105, 4096, 32768, 5 * 4096 + 100 * 32768)}, mppr=8, rpc=after)
    assert osc_features(prev, cur, None, None, 0.5)["is_dist_centered"] == 1  # the 1-page RPCs were earlier
    cur["rpc_stats"] = rpc_stats(ppr=hist_pair(write={1: 15, 2: 0, 4: 0, 8: 100}))
    assert osc_features(prev, cur, None, None, 0.5)["is_dist_centered"] == 0  # 10 of 110 below mppr


# --------------------------------------------------------------------------------------------
# Stage 2 against the real dataset
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset() -> pd.DataFrame:
    path = DATASET / "dev.parquet"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return pd.read_parquet(path)


@pytest.fixture(scope="module")
def iteration_one(dataset: pd.DataFrame) -> pd.DataFrame:
    """Whole series (iteration 1 of every workload, ~5,500 rows): derive needs each previous row."""
    return dataset[dataset["iteration"] == 1]


def test_derive_reproduces_dials_columns_exactly(iteration_one: pd.DataFrame) -> None:
    rows = iteration_one
    mapped = from_dataset(rows)
    first = (rows["observation_no"] == 0).to_numpy()  # written by DIAL before its features
    assert len(rows) > 2000
    assert 0 < first.sum() < 40
    for name in DERIVED_COLUMNS:
        ours = mapped[name].to_numpy()[~first]
        theirs = rows[name].to_numpy(dtype=np.float64)[~first]
        mismatched = np.flatnonzero(ours != theirs)
        assert mismatched.size == 0, f"{name}: {mismatched.size} rows differ, e.g. {ours[mismatched[:3]]}"
    assert list(mapped.columns) == list(FEATURE_COLUMNS)
    assert mapped.index.equals(rows.index)
    for name in RAW_COLUMNS:
        assert (mapped[name].to_numpy() == rows[name].to_numpy(dtype=np.float64)).all(), name


def test_one_row_and_a_frame_give_the_same_values(iteration_one: pd.DataFrame) -> None:
    rows = iteration_one.sort_values(["workload", "osc", "observation_no"])
    mapped = from_dataset(rows)
    picks = np.random.default_rng(3).choice(np.flatnonzero(rows["observation_no"].to_numpy() > 0), 200)
    for i in picks:
        raw = {name: float(rows[name].iloc[i]) for name in (*RAW_COLUMNS, "is_dist_centered")}
        before = rows.iloc[i - 1]
        raw["x_prev_write_rif_bytes"] = before["cur_write_rif"] * (
            before["ost_write_rpc_bytes_data.samples_sum"] / before["ost_write_rpc_bytes_data.no_of_samples"]
            if before["ost_write_rpc_bytes_data.no_of_samples"]
            else 0.0
        )
        one = derive(raw)
        for name, value in one.items():
            other = mapped[name].iloc[i]
            assert value == other or (math.isnan(value) and math.isnan(other)), name


def test_from_dataset_is_fast_and_complete(dataset: pd.DataFrame) -> None:
    started = time.perf_counter()
    mapped = from_dataset(dataset)
    elapsed = time.perf_counter() - started
    assert elapsed < 5.0, f"from_dataset took {elapsed:.2f} s for {len(dataset)} rows"
    assert mapped.shape == (len(dataset), len(FEATURE_COLUMNS))
    valid = (dataset["actual_record_duration"] > 0).to_numpy()
    assert not mapped.loc[valid, list(RAW_COLUMNS)].isna().any().any()
    series = dataset.groupby(["workload", "iteration", "osc"], observed=True).ngroups
    assert mapped["write_rpc_generation_rate"].isna().sum() == series  # only the first rows
    # The README's throughput, and DIAL's read/write model choice.
    row = dataset.iloc[int(np.flatnonzero(valid & (dataset["ost_read_rpc_bytes_data.samples_sum"] > 0))[0])]
    expected = (row["ost_read_rpc_bytes_data.samples_sum"] + row["ost_write_rpc_bytes_data.samples_sum"]) / (
        row["actual_record_duration"] * 1e6
    )
    assert osc_throughput_mbps(row) == pytest.approx(expected)
    assert dominant_op(row) == "read"
    assert mapped["x_mbps"].iloc[dataset.index.get_loc(row.name)] == pytest.approx(expected)


def test_recorded_is_dist_centered_obeys_dials_rules(dataset: pd.DataFrame) -> None:
    """What the raw columns can check of a column computed from a histogram the dataset lacks."""
    rows = dataset[dataset["observation_no"] > 0]
    pages = rows["avg_pages_per_write_rpc"]
    centered = rows["is_dist_centered"]
    assert set(centered.unique()) == {0, 1}  # DIAL's code gives 1/0, not the +1/-1/0 its text says
    assert (centered[pages == 0] == 1).all()
    writes = pages > 0
    threshold = ((100 - 0.03) / 100) * rows["osc_rpc_configuration_current.mppr_value"]
    # Centered below the threshold only with an empty histogram (RPCs built before the interval).
    assert ((centered == 1) & writes & (pages < threshold)).sum() / writes.sum() < 0.005


def test_from_dataset_needs_the_previous_row_of_the_same_series(iteration_one: pd.DataFrame) -> None:
    series = iteration_one[iteration_one["workload"] == "seq_w_1_io_16m"].sort_values(["osc", "observation_no"])
    gap = series[series["observation_no"] != 5]
    mapped = from_dataset(gap.iloc[::-1])  # order does not matter, the index is kept
    after_gap = mapped.loc[gap.index[gap["observation_no"] == 6], "write_rpc_generation_rate"]
    assert len(after_gap) > 0
    assert after_gap.isna().all()
    later = gap.index[gap["observation_no"] == 7]
    assert len(later) > 0
    assert (mapped.loc[later, "write_rpc_generation_rate"] == gap.loc[later, "write_rpc_generation_rate"]).all()


def test_from_dataset_refuses_a_frame_without_the_raw_columns() -> None:
    with pytest.raises(KeyError, match="cur_dirty_bytes"):
        from_dataset(pd.DataFrame({"actual_record_duration": [0.5]}))


# --------------------------------------------------------------------------------------------
# pfsim's text through the parsers: same names, units and scale as the real dataset
# --------------------------------------------------------------------------------------------

_TUNABLES = ("max_pages_per_rpc", "max_rpcs_in_flight", "max_dirty_mb", "cur_dirty_bytes", "cur_grant_bytes")


def _sim_features(scenario_text: str, start_ns: int, end_ns: int) -> list[dict[str, float]]:
    """Feature rows of every OSC of client 0 between two probes of a pfsim run."""
    parse = pytest.importorskip("pfstune.lustre.parse")
    from pfstune.sim.engine import Engine
    from pfstune.sim.scenario import parse_scenario

    engine = Engine(parse_scenario(scenario_text, "features-test"))
    info = engine.clients()[0]

    def probe() -> tuple[dict[str, OscSnapshot], LliteSnapshot]:
        oscs: dict[str, OscSnapshot] = {}
        for dev in info["osc"]:
            header, stats = parse.parse_stats(engine.get_param(0, f"osc.{dev}.stats"))
            oscs[dev] = OscSnapshot(
                stats=stats,
                stats_header=header,
                rpc_stats=parse.parse_rpc_stats(engine.get_param(0, f"osc.{dev}.rpc_stats")),
                tunables={name: parse.parse_scalar(engine.get_param(0, f"osc.{dev}.{name}")) for name in _TUNABLES},
            )
        header, stats = parse.parse_stats(engine.get_param(0, f"llite.{info['llite']}.stats"))
        return oscs, LliteSnapshot(stats=stats, stats_header=header)

    engine.run(until_ns=start_ns)
    before, before_llite = probe()
    engine.run(until_ns=end_ns)
    after, after_llite = probe()
    seconds = (end_ns - start_ns) / 1e9
    return [osc_features(before[dev], after[dev], before_llite, after_llite, seconds) for dev in info["osc"]]


def _within_10x(sim: float, real: float) -> bool:
    return real / 10 <= sim <= real * 10


def test_sim_16m_random_read_looks_like_the_real_one(dataset: pd.DataFrame) -> None:
    rows = _sim_features(SMALL_SCENARIO, 1_000_000_000, 1_500_000_000)
    active = [row for row in rows if row["x_mbps"] > 0]
    assert len(active) == 1  # one file on one OST, as in the dataset
    sim = active[0]
    assert set(FEATURE_COLUMNS) | set(LIVE_COLUMNS) <= set(sim)
    assert not any(math.isnan(sim[name]) for name in (*RAW_COLUMNS, *DERIVED_COLUMNS))
    assert dominant_op(sim) == "read"
    assert sim["x_dominant_write"] == 0
    assert sim["x_stats_cleared"] == 0

    real_rows = dataset[
        (dataset["workload"] == "rnd_r_1_io_16m")
        & (dataset["osc_rpc_configuration_current.mppr_value"] == 1024)
        & (dataset["osc_rpc_configuration_current.mrif_value"] == 8)
    ]
    real = from_dataset(real_rows)
    real = real[(real["actual_record_duration"] > 0) & (real["x_mbps"] > 0)].median()
    # Units are the same by construction (bytes, microseconds, MB/s = 1e6 B/s); check the scale.
    for name in ("x_mbps", "x_read_rpc_pages", "x_read_rpc_usec", "avg_waittime", "x_llite_mbps"):
        assert _within_10x(sim[name], real[name]), (name, sim[name], real[name])
    assert sim["llite_stats_read_bytes.sample_max"] == real["llite_stats_read_bytes.sample_max"] == 16 * MIB
    assert sim["ost_read_rpc_bytes_data.sample_max"] == 4 * MIB  # 1024 pages of 4 KiB, in bytes
    assert osc_throughput_mbps(sim) == sim["x_mbps"]


def test_sim_sequential_write_looks_like_the_real_one(dataset: pd.DataFrame) -> None:
    scenario = """\
name: write
seed: 3
duration: 3s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: w, client: 0, workload: filebench.seqwrite, iosize: 16m, filesize: 10g, stripe_count: 1}
"""
    rows = _sim_features(scenario, 1_500_000_000, 2_000_000_000)
    active = [row for row in rows if row["x_mbps"] > 0]
    assert len(active) == 1
    sim = active[0]
    assert dominant_op(sim) == "write"
    real_rows = dataset[(dataset["workload"] == "seq_w_1_io_16m")]
    real = from_dataset(real_rows)
    real = real[(real["actual_record_duration"] > 0) & (real["x_mbps"] > 0)].median()
    for name in ("x_mbps", "x_write_rpc_pages", "x_write_rpc_usec", "write_rpc_generation_rate", "x_llite_mbps"):
        assert _within_10x(sim[name], real[name]), (name, sim[name], real[name])
    assert 0 < sim["used_pct_dirty_cache"] < 100
