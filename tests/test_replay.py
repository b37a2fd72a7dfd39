"""Offline replay: the value table, per-workload scores, the decisions file, the command."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import pytest

from pfstune.cli.main import main
from pfstune.errors import UserError
from pfstune.features import RAW_COLUMNS
from pfstune.replay import load_recording, replay, value_table
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Config, Context, Tuner
from pfstune.tuners.default import DefaultTuner
from tests.conftest import SHARED

DEV = SHARED / "data" / "dial-lustre" / "dev.parquet"


def _recording() -> pd.DataFrame:
    """Two workloads, two OSC series each; throughput set by the configuration."""
    mbps = {(1024, 8): 100.0, (64, 32): 400.0, (1, 1): 10.0}
    rows = []
    for workload, scale in (("wa", 1.0), ("wb", 2.0)):
        for osc in ("fs-OST0000-osc-ffff0001", "fs-OST0001-osc-ffff0001"):
            for no, config in enumerate([(1024, 8), (64, 32), (1, 1), (64, 32), (1024, 8), (1, 1)]):
                nbytes = mbps[config] * scale * 1e6 * 0.5
                rows.append(
                    {
                        "workload": workload,
                        "iteration": 1,
                        "osc": osc,
                        "observation_no": no,
                        "osc_rpc_configuration_current.mppr_value": config[0],
                        "osc_rpc_configuration_current.mrif_value": config[1],
                        "osc_rpc_configuration_current.mdm_value": 2000,
                        "ost_read_rpc_bytes_data.samples_sum": nbytes,
                        "ost_read_rpc_bytes_data.no_of_samples": 10,
                        "ost_write_rpc_bytes_data.samples_sum": 0,
                        "actual_record_duration": 0.5 if no != 5 else 0.0,  # the last row says nothing
                    }
                )
    frame = pd.DataFrame(rows)
    for column in RAW_COLUMNS:  # every other DIAL column: zero, as an idle counter reads
        if column not in frame:
            frame[column] = 0
    return frame


class _Always(Tuner):
    name = "always"

    def __init__(self, config: tuple[int, int]) -> None:
        self.config = {"max_pages_per_rpc": config[0], "max_rpcs_in_flight": config[1]}

    def suggest(self, context: Context) -> Config:
        return dict(self.config)


def test_value_table_skips_idle_and_zero_duration_rows() -> None:
    table = value_table(_recording())["value"]
    assert table[("wa", 64, 32)] == pytest.approx(400.0)
    assert table[("wb", 1024, 8)] == pytest.approx(200.0)
    assert table[("wa", 1, 1)] == pytest.approx(10.0)  # the zero-duration row is not averaged in


def test_scores_are_value_over_best_and_the_default_is_scored_too() -> None:
    best = replay(_recording(), _Always((64, 32)))
    assert best.scores["wa"]["score"] == pytest.approx(1.0)
    assert best.scores["wa"]["default_score"] == pytest.approx(0.25)
    assert best.scores["wb"]["best_config"] == [64, 32]
    worst = replay(_recording(), _Always((1, 1)))
    assert worst.scores["wb"]["score"] == pytest.approx(10 / 400)
    missing = replay(_recording(), _Always((2, 2)))
    assert missing.scores["wa"]["unscored"] == 12
    assert missing.summary()["mean_score"] == 0.0


def test_a_workload_never_recorded_under_the_default_has_no_default_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _recording()
    data = data[~((data["workload"] == "wb") & (data["osc_rpc_configuration_current.mppr_value"] == 1024))]
    summary = replay(data, _Always((64, 32))).summary()
    assert summary["workloads"]["wb"]["default_score"] is None
    assert summary["mean_default_score"] == pytest.approx(0.25)  # wa's alone
    assert summary["no_default_score"] == ["wb"]
    path = tmp_path / "rec.parquet"
    data.to_parquet(path)
    assert main(["replay", str(path), "--tuner", "default"]) == 0
    out = capsys.readouterr().out
    assert "for: wb (left out of the default's mean)" in out
    assert main(["replay", str(path), "--tuner", "default", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["no_default_score"] == ["wb"]


def test_a_workload_whose_intervals_all_idle_has_no_score_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _recording()
    idle = data[data["workload"] == "wa"].assign(workload="wz", **{"ost_read_rpc_bytes_data.samples_sum": 0})
    data = pd.concat([data, idle], ignore_index=True)
    summary = replay(data, _Always((64, 32))).summary()
    assert summary["workloads"]["wz"]["score"] is None
    assert summary["workloads"]["wz"]["rows"] == 12
    assert summary["no_score"] == ["wz"]
    assert summary["mean_score"] == pytest.approx(1.0)  # wa and wb alone
    path = tmp_path / "rec.parquet"
    data.to_parquet(path)
    assert main(["replay", str(path), "--tuner", "default"]) == 0
    assert "no interval moved data in: wz" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [float("nan"), 0])
def test_a_row_without_a_configuration_is_a_user_error(tmp_path: Path, bad: float) -> None:
    data = _recording()
    data["osc_rpc_configuration_current.mppr_value"] = data["osc_rpc_configuration_current.mppr_value"].astype(float)
    data.loc[3, "osc_rpc_configuration_current.mppr_value"] = bad
    path = tmp_path / "rec.parquet"
    data.to_parquet(path)
    with pytest.raises(UserError, match=r"1 row\(s\) have no valid configuration"):
        load_recording([str(path)])


def test_the_same_interval_twice_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "rec.parquet"
    _recording().to_parquet(path)
    with pytest.raises(UserError, match="appears more than once"):
        load_recording([str(path), str(path)])


class _Pooled(Tuner):
    """Learns one thing for all OSCs: how many intervals it has seen; proposes (2**min(n, 10), 1)."""

    name = "pooled"
    shares_state_across_oscs = True

    def __init__(self) -> None:
        self.seen = 0

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        self.seen += 1

    def suggest(self, context: Context) -> Config:
        return {"max_pages_per_rpc": 2 ** min(self.seen, 10), "max_rpcs_in_flight": 1}


def test_a_tuner_that_shares_what_it_learns_gets_one_copy_per_recorded_run() -> None:
    data = _recording()
    two_runs = pd.concat([data, data.assign(iteration=2)], ignore_index=True)
    decisions = replay(two_runs, _Pooled()).decisions
    # wa has two OSC series per run: after step k a run's copy has seen 2 (k + 1) intervals,
    # whatever the other run and the other workload did
    for (workload, iteration), rows in decisions.groupby(["workload", "iteration"]):
        first = rows[rows["osc"] == rows["osc"].iloc[0]]
        assert first["max_pages_per_rpc"].tolist() == [2**2, 2**4, 2**6, 2**8, 2**10, 2**10], (workload, iteration)


def test_decisions_have_one_row_per_input_row_in_series_order() -> None:
    data = _recording().sample(frac=1.0, random_state=3)  # any input order
    result = replay(data, DefaultTuner())
    decisions = result.decisions
    assert len(decisions) == len(data)
    assert list(decisions.columns) == [
        "workload",
        "iteration",
        "osc",
        "observation_no",
        "max_pages_per_rpc",
        "max_rpcs_in_flight",
    ]
    first = decisions[(decisions.workload == "wa") & (decisions.osc == "fs-OST0000-osc-ffff0001")]
    assert first["observation_no"].tolist() == list(range(6))
    # the default tuner keeps what was in force in each recorded interval
    assert first["max_pages_per_rpc"].tolist() == [1024, 64, 1, 64, 1024, 1]


@pytest.mark.skipif(not DEV.exists(), reason="the shared dataset is not beside the checkout")
def test_replay_command_on_the_real_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subset = tmp_path / "subset.parquet"
    data = pd.read_parquet(DEV)
    data[data["iteration"].isin([1, 2])].to_parquet(subset)
    out = tmp_path / "decisions.parquet"
    assert main(["replay", str(subset), "--tuner", "iopathtune", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["workloads"]) == set(data["workload"].astype(str).unique())
    for scores in summary["workloads"].values():
        assert 0 < scores["score"] <= 1
        assert 0 < scores["default_score"] <= 1
    assert len(pd.read_parquet(out)) == len(load_recording([str(subset)]))


def test_replay_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "absent.parquet"), "--tuner", "default"]) == 2
    assert "absent.parquet: no such file or directory" in capsys.readouterr().err
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert main(["replay", str(DEV), "--tuner", "default", "--out", str(blocked / "d.parquet")]) == 2
    assert "a-file is not a directory" in capsys.readouterr().err
    assert main(["replay", str(DEV), "--tuner", "default", "--out", str(tmp_path)]) == 2  # before the replay runs
    assert f"--out {tmp_path}: is a directory; name the file" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    pd.DataFrame({"x": [1]}).to_parquet(bad)
    assert main(["replay", str(bad), "--tuner", "default"]) == 2
    assert "missing columns" in capsys.readouterr().err
    _recording().drop(columns=["cur_grant_bytes"]).to_parquet(bad)
    assert main(["replay", str(bad), "--tuner", "default"]) == 2
    assert "missing columns" in capsys.readouterr().err
    assert main(["replay", str(bad), "--tuner", "oracle"]) == 2
    assert "scores 1.0 by definition" in capsys.readouterr().err
    damaged = _recording()
    damaged["cur_grant_bytes"] = damaged["cur_grant_bytes"].astype(str)
    damaged.loc[3, "cur_grant_bytes"] = "n/a"
    damaged.to_parquet(bad)
    assert main(["replay", str(bad), "--tuner", "default"]) == 2
    assert "column cur_grant_bytes holds values that are not numbers" in capsys.readouterr().err
    bad.write_text("workload,osc\nseq_r,OST0000\n")  # a CSV named .parquet: the words train and eval use
    assert main(["replay", str(bad), "--tuner", "default"]) == 2
    assert f"{bad}: not a readable Parquet file (" in capsys.readouterr().err


def test_a_failed_write_of_the_decisions_keeps_the_earlier_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "rec.parquet"
    _recording().to_parquet(recording)
    out = tmp_path / "decisions.parquet"
    assert main(["replay", str(recording), "--tuner", "default", "--out", str(out), "--json"]) == 0
    before = out.read_bytes()
    capsys.readouterr()

    def disk_full(self: pd.DataFrame, path: Path, **kwargs: object) -> None:
        Path(path).write_bytes(b"PAR1 half a file")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", disk_full)
    assert main(["replay", str(recording), "--tuner", "iopathtune", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "cannot write the decisions: No space left on device" in err
    assert out.read_bytes() == before  # neither truncated nor half-written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decisions.parquet", "rec.parquet"]  # no partial file


def test_a_model_for_a_tuner_without_one_or_a_file_for_a_model_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "rec.parquet"
    _recording().to_parquet(recording)
    assert main(["replay", str(recording), "--tuner", "iopathtune", "--model", str(tmp_path)]) == 2
    assert "pfstune: error: --model: tuner iopathtune takes no model (tuners with one: dial" in capsys.readouterr().err
    assert main(["replay", str(recording), "--tuner", "dial", "--model", str(recording)]) == 2
    assert f"{recording}: is a file, not a model directory" in capsys.readouterr().err


def test_out_naming_an_input_file_is_refused_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "rec.parquet"
    _recording().to_parquet(recording)
    before = recording.read_bytes()
    (tmp_path / "link.parquet").symlink_to(recording)
    for out in (recording, tmp_path / "." / "rec.parquet", tmp_path / "link.parquet"):
        assert main(["replay", str(recording), "--tuner", "default", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "is one of the DATASET files" in err
    assert recording.read_bytes() == before


@pytest.mark.parametrize(("column", "rows"), [("workload", slice(None)), ("workload", [3, 7]), ("osc", [0])])
def test_a_recording_with_rows_of_no_workload_or_osc_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, rows: object
) -> None:
    data = _recording()
    data[column] = data[column].astype(object)
    data.loc[rows, column] = None
    path = tmp_path / "rec.parquet"
    data.to_parquet(path)
    assert main(["replay", str(path), "--tuner", "iopathtune"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path}: column {column} is empty (null) in" in err


@pytest.mark.parametrize("tuner", ["bandit", "bayesopt"])
def test_online_learners_beat_random_proposals_on_recorded_data(tuner: str) -> None:
    """They learn from the recorded intervals alone (no training) and propose better than chance."""
    data = pd.read_parquet(DEV)
    rows = data[data["iteration"].isin([1, 2]) & (data["workload"].astype(str) == "rnd_r_1_io_16m")]
    rows = rows.reset_index(drop=True)
    for column in ("workload", "osc"):
        rows[column] = rows[column].astype(str)
    learned = replay(rows, make_tuner(tuner)).summary()
    chance = replay(rows, make_tuner("random")).summary()
    assert learned["mean_score"] > chance["mean_score"] + 0.05
