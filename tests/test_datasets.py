"""pfstune.datasets: both dataset schemas, and training pairs built by the rules of its docstring."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pfstune.datasets import (
    CANDIDATE_COLUMNS,
    META_COLUMNS,
    PAIR_COLUMNS,
    load_dataset,
    make_pairs,
    normalize,
    select_iterations,
)
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS, RAW_COLUMNS, dominant_op, osc_throughput_mbps
from tests.conftest import SHARED

DEV = SHARED / "data" / "dial-lustre" / "dev.parquet"
needs_dev = pytest.mark.skipif(not DEV.is_file(), reason=f"{DEV} is not there")
MPPR, MRIF = "osc_rpc_configuration_current.mppr_value", "osc_rpc_configuration_current.mrif_value"
CAND_MPPR, CAND_MRIF = CANDIDATE_COLUMNS["max_pages_per_rpc"], CANDIDATE_COLUMNS["max_rpcs_in_flight"]


def _rows(
    mbps: list[float], *, iteration: int = 1, start: int = 0, osc: str = "osc0", write: float = 0.0
) -> pd.DataFrame:
    """One series of schema (b): feature rows with the given throughputs (0 = idle), configs 1, 2, 4, ..."""
    count = len(mbps)
    rows = pd.DataFrame([dict.fromkeys(FEATURE_COLUMNS, 1.0) for _ in range(count)])
    rows[MPPR] = [2 ** (i % 11) for i in range(start, start + count)]
    rows[MRIF] = [2 ** ((i + 3) % 9) for i in range(start, start + count)]
    rows["actual_record_duration"] = 0.5
    rows["x_mbps"] = mbps
    rows["x_dominant_write"] = [write if m > 0 else math.nan for m in mbps]
    rows["workload"], rows["iteration"], rows["osc"] = "w", iteration, osc
    rows["observation_no"] = range(start, start + count)
    return rows


def test_pairs_of_a_hand_made_series() -> None:
    rows = _rows([100.0, 200.0, 0.0, 150.0, 160.0])
    pairs = make_pairs(normalize(rows, "mem"))
    assert list(pairs.columns) == list(PAIR_COLUMNS)
    # (0,1) improves; (1,2) ends idle: a real outcome, label 0; (2,3) starts idle: dropped; (3,4) +6.7 %: 0.
    assert pairs["observation_no"].tolist() == [0, 1, 3]
    assert pairs["label"].tolist() == [1, 0, 0]
    assert pairs["op"].astype(str).tolist() == ["read"] * 3
    assert pairs[CAND_MPPR].tolist() == rows[MPPR].iloc[[1, 2, 4]].tolist()
    assert pairs[CAND_MRIF].tolist() == rows[MRIF].iloc[[1, 2, 4]].tolist()
    # The features are those of t, including its current configuration.
    assert pairs[MPPR].tolist() == rows[MPPR].iloc[[0, 1, 3]].tolist()
    assert pairs["mbps"].tolist() == [100.0, 200.0, 150.0]
    assert pairs["next_mbps"].tolist() == [200.0, 0.0, 160.0]
    assert pairs["source"].astype(str).tolist() == ["unknown"] * 3


def test_label_threshold_is_strictly_above_fifteen_percent() -> None:
    pairs = make_pairs(normalize(_rows([100.0, 115.0, 132.26, 200.0]), "mem"))
    assert pairs["label"].tolist() == [0, 1, 1]
    assert make_pairs(normalize(_rows([100.0, 115.0]), "mem"), epsilon=0.1)["label"].tolist() == [1]


def test_series_boundaries_gaps_and_zero_durations() -> None:
    a = _rows([100.0, 300.0, 200.0], iteration=1)
    b = _rows([1.0, 500.0], iteration=2)  # a different series: its first row must not follow a's last
    c = _rows([100.0, 300.0], iteration=1, osc="osc1")
    gap = _rows([100.0, 300.0], iteration=3)
    gap["observation_no"] = [0, 2]  # a missing interval: not consecutive
    zero = _rows([100.0, 300.0, 50.0], iteration=4)
    zero.loc[1, "x_mbps"] = math.nan  # duration 0 -> throughput unknown: pairs (0,1) and (1,2) dropped
    frame = normalize(pd.concat([a, b, c, gap, zero], ignore_index=True), "mem")
    pairs = make_pairs(frame.sample(frac=1.0, random_state=1))  # row order must not matter
    columns = [pairs["iteration"], pairs["osc"].astype(str), pairs["observation_no"], pairs["label"]]
    got = sorted(zip(*columns, strict=True))
    assert got == [(1, "osc0", 0, 1), (1, "osc0", 1, 0), (1, "osc1", 0, 1), (2, "osc0", 0, 1)]


def test_write_op_and_candidate_unknown() -> None:
    rows = _rows([100.0, 300.0, 400.0], write=1.0)
    rows.loc[2, MRIF] = math.nan
    pairs = make_pairs(normalize(rows, "mem"))
    assert pairs["op"].astype(str).tolist() == ["write"]
    assert pairs["observation_no"].tolist() == [0]


def test_first_real_row_is_dropped() -> None:
    rows = _rows([100.0, 300.0, 400.0])
    rows["source"] = "real"
    assert make_pairs(normalize(rows, "mem"))["observation_no"].tolist() == [1]
    rows["source"] = "sim"
    assert make_pairs(normalize(rows, "mem"))["observation_no"].tolist() == [0, 1]


def test_nan_features_are_kept() -> None:
    rows = _rows([100.0, 300.0])
    rows["avg_waittime"] = math.nan
    pairs = make_pairs(normalize(rows, "mem"))
    assert len(pairs) == 1
    assert math.isnan(pairs["avg_waittime"].iloc[0])


def test_aliases_scenario_and_seed(tmp_path: Path) -> None:
    rows = _rows([100.0, 300.0]).rename(columns={"workload": "scenario", "iteration": "seed"})
    rows["source"] = "sim"
    rows["max_pages_per_rpc"] = rows[MPPR]  # collect's extra columns are ignored
    rows.to_parquet(tmp_path / "sim.parquet")
    frame = load_dataset([tmp_path])
    assert list(frame.columns) == [*META_COLUMNS, *FEATURE_COLUMNS]
    assert frame["workload"].astype(str).tolist() == ["w", "w"]
    assert frame["source"].astype(str).tolist() == ["sim", "sim"]
    assert frame["file"].astype(str).tolist() == [str(tmp_path / "sim.parquet")] * 2


def test_same_osc_name_on_two_clients() -> None:
    one, two = _rows([100.0, 300.0]), _rows([100.0, 90.0])
    one["client"], two["client"] = 0, 1
    frame = normalize(pd.concat([one, two], ignore_index=True), "mem")
    assert sorted(set(frame["osc"])) == ["0/osc0", "1/osc0"]
    pairs = make_pairs(frame)
    assert sorted(zip(pairs["osc"], pairs["label"], strict=True)) == [("0/osc0", 1), ("1/osc0", 0)]
    assert set(normalize(one, "mem")["osc"]) == {"osc0"}  # one client per name: names unchanged


@pytest.mark.parametrize(("column", "value"), [("iteration", float("nan")), ("observation_no", 1.5)])
def test_iterations_and_observations_must_be_whole_numbers(tmp_path: Path, column: str, value: float) -> None:
    rows = _rows([1.0, 2.0, 3.0])
    rows[column] = rows[column].astype(float)
    rows.loc[1, column] = value
    rows.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(UserError, match=rf"bad\.parquet: column {column} must hold whole numbers; row 1"):
        load_dataset([tmp_path / "bad.parquet"])


@pytest.mark.parametrize("column", ["workload", "osc"])
def test_rows_without_a_workload_or_osc_are_refused(tmp_path: Path, column: str) -> None:
    rows = _rows([1.0, 2.0, 3.0])
    rows[column] = rows[column].astype(object)
    rows.loc[2, column] = None
    rows.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(
        UserError, match=rf"bad\.parquet: column {column} is empty \(null\) in 1 row\(s\), the first at row 2"
    ):
        load_dataset([tmp_path / "bad.parquet"])


def test_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such dataset"):
        load_dataset([tmp_path / "absent.parquet"])
    with pytest.raises(UserError, match=r"no \*\.parquet"):
        load_dataset([tmp_path])
    (tmp_path / "text.parquet").write_text("not parquet", encoding="utf-8")
    with pytest.raises(UserError, match="not a readable Parquet"):
        load_dataset([tmp_path / "text.parquet"])
    pd.DataFrame({"workload": ["w"], "iteration": [1], "osc": ["o"], "observation_no": [0], "x": [1.0]}).to_parquet(
        tmp_path / "other.parquet"
    )
    with pytest.raises(UserError, match="lacks feature columns"):
        load_dataset([tmp_path / "other.parquet"])
    _rows([1.0]).drop(columns=["osc"]).to_parquet(tmp_path / "noosc.parquet")
    with pytest.raises(UserError, match="no column osc"):
        load_dataset([tmp_path / "noosc.parquet"])
    _rows([1.0]).iloc[:0].to_parquet(tmp_path / "empty.parquet")
    with pytest.raises(UserError, match="no rows"):
        load_dataset([tmp_path / "empty.parquet"])
    text = _rows([1.0, 2.0])
    text["actual_record_duration"] = ["0.5", "half a second"]  # damaged, or written by another tool
    text.to_parquet(tmp_path / "text-column.parquet")
    with pytest.raises(UserError, match=r"text-column\.parquet: column actual_record_duration holds values that"):
        load_dataset([tmp_path / "text-column.parquet"])


@pytest.fixture(scope="module")
def real_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Iterations 1-2 of one read and one write workload of dev.parquet (schema (a))."""
    raw = pd.read_parquet(
        DEV, filters=[("iteration", "in", [1, 2]), ("workload", "in", ["rnd_r_1_io_16m", "seq_w_1_io_8k"])]
    )
    path = tmp_path_factory.mktemp("real") / "slice.parquet"
    raw.to_parquet(path)
    return path


@needs_dev
def test_same_osc_name_on_two_clients_keeps_each_previous_interval_its_own(real_slice: Path) -> None:
    # write_rpc_generation_rate needs the previous interval of the same series: the same
    # client's, not the other client's row of the same number
    raw = pd.read_parquet(real_slice)
    one = raw[(raw["workload"] == "seq_w_1_io_8k") & (raw["iteration"] == 1)].assign(client=0)
    two = one.assign(client=1)
    for column in ("ost_write_rpc_bytes_data.samples_sum", "cur_write_rif"):
        two[column] = two[column] * 3
    both = normalize(pd.concat([one, two], ignore_index=True), "mem")
    alone = pd.concat([normalize(one, "mem"), normalize(two, "mem")], ignore_index=True)
    column = "write_rpc_generation_rate"
    assert alone[column].notna().sum() > 100
    assert both[column].equals(alone[column])


@needs_dev
def test_observation_numbers_stored_as_text_are_read(real_slice: Path) -> None:
    raw = pd.read_parquet(real_slice)
    as_text = raw.assign(observation_no=raw["observation_no"].astype(str))
    assert normalize(as_text, "mem").equals(normalize(raw, "mem"))


@needs_dev
def test_real_schema_and_vectorised_definitions(real_slice: Path) -> None:
    raw = pd.read_parquet(real_slice)
    frame = load_dataset([real_slice])
    assert len(frame) == len(raw)
    assert set(frame["source"].astype(str)) == {"real"}
    assert list(frame.columns) == [*META_COLUMNS, *FEATURE_COLUMNS]
    # The vectorised throughput and op are osc_throughput_mbps and dominant_op, row by row.
    for index in np.random.default_rng(0).choice(len(raw), 300, replace=False):
        row = raw.iloc[index]
        expected = osc_throughput_mbps(row)
        got = frame["x_mbps"].iloc[index]
        assert (math.isnan(expected) and math.isnan(got)) or expected == pytest.approx(got, rel=1e-12)
        op = dominant_op(row)
        write = frame["x_dominant_write"].iloc[index]
        assert (op is None and math.isnan(write)) or (op == "write") == (write == 1.0)


@needs_dev
def test_real_pairs_follow_the_raw_rows(real_slice: Path) -> None:
    raw = pd.read_parquet(real_slice)
    pairs = make_pairs(load_dataset([real_slice]))
    assert set(pairs["op"].astype(str)) == {"read", "write"}
    assert (pairs["observation_no"] > 0).all()  # DIAL's first rows are never t
    keyed = raw.set_index(["workload", "iteration", "osc", "observation_no"]).sort_index()
    for pair in pairs.sample(200, random_state=0).itertuples(index=False):
        now = keyed.loc[(pair.workload, pair.iteration, pair.osc, pair.observation_no)]
        after = keyed.loc[(pair.workload, pair.iteration, pair.osc, pair.observation_no + 1)]
        assert getattr(pair, CAND_MPPR) == after[MPPR]
        assert getattr(pair, CAND_MRIF) == after[MRIF]
        assert pair.label == int(osc_throughput_mbps(after) / osc_throughput_mbps(now) > 1.15)
        assert pair.op == dominant_op(now)
    assert set(RAW_COLUMNS) <= set(pairs.columns)


@needs_dev
def test_select_iterations(real_slice: Path) -> None:
    pairs = make_pairs(load_dataset([real_slice]))
    held = select_iterations(pairs, [2], keep=True)
    rest = select_iterations(pairs, [2], keep=False)
    assert set(held["iteration"]) == {2}
    assert set(rest["iteration"]) == {1}
    assert len(held) + len(rest) == len(pairs)


def test_docstring_examples() -> None:
    import doctest

    import pfstune.datasets

    result = doctest.testmod(pfstune.datasets)
    assert result.attempted > 0
    assert result.failed == 0
