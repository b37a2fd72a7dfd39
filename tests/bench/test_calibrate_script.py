"""benchmarks/calibrate on real data files it was not written against (no simulation: --real-only)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from tests.bench._scripts import load_script


@pytest.fixture(scope="module")
def calibrate() -> ModuleType:
    return load_script("calibrate")


def _rows(cal: ModuleType, workload: str, iterations: list[float], configs: list[tuple[int, int]]) -> pd.DataFrame:
    """One row per (iteration, configuration): throughput 100 MB/s times the configuration's index + 1."""
    rows = []
    for it in iterations:
        for i, (mppr, mrif) in enumerate(configs):
            rows.append(
                {
                    "workload": workload,
                    "iteration": it,
                    cal.COL_MPPR: mppr,
                    cal.COL_MRIF: mrif,
                    cal.COL_READ: (i + 1) * 100e6 * 0.5,
                    cal.COL_WRITE: 0.0,
                    cal.COL_DURATION: 0.5,
                }
            )
    return pd.DataFrame(rows)


def test_a_configuration_off_the_grid_is_not_the_real_best(calibrate: ModuleType) -> None:
    frame = _rows(calibrate, "rnd_r_1_io_1m", [1.0, 2.0], [(8, 128), (1024, 8), (2048, 16)])
    surface = calibrate.real_surface(frame, "rnd_r_1_io_1m")
    assert set(surface.mbps) == {(8, 128), (1024, 8)}


def test_a_nan_iteration_does_not_move_the_split_half(calibrate: ModuleType) -> None:
    configs = [(1, 1), (8, 128), (1024, 8)]
    clean = _rows(calibrate, "seq_r_1_io_1m", [21.0, 22.0, 23.0, 24.0], configs)
    damaged = pd.concat([_rows(calibrate, "seq_r_1_io_1m", [math.nan], configs), clean], ignore_index=True)
    assert calibrate.real_surface(damaged, "seq_r_1_io_1m").split_half_spearman == pytest.approx(
        calibrate.real_surface(clean, "seq_r_1_io_1m").split_half_spearman
    )


def test_a_workload_without_usable_rows_is_absent_not_a_traceback(
    calibrate: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = _rows(calibrate, "seq_r_1_io_1m", [1.0, 2.0], [(1, 1), (8, 128)]).assign(**{calibrate.COL_DURATION: 0.0})
    path = tmp_path / "idle.parquet"
    frame.to_parquet(path)
    assert calibrate.main(["--data", str(path), "--workloads", "seq_r_1_io_1m", "--real-only", "--json"]) == 0
    (workload,) = json.loads(capsys.readouterr().out)["workloads"]
    assert workload["status"] == "absent"
    assert "no usable rows" in workload["note"]


def test_mistakes_are_one_line_errors_before_any_work(
    calibrate: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = _rows(calibrate, "seq_r_1_io_1m", [1.0], [(1, 1)])
    path = tmp_path / "ok.parquet"
    frame.to_parquet(path)
    frame.drop(columns=[calibrate.COL_DURATION]).to_parquet(tmp_path / "nocol.parquet")
    (tmp_path / "a-file").write_text("")
    cases = [
        (["--data", str(tmp_path / "nocol.parquet"), "--real-only"], "missing column(s) actual_record_duration"),
        (["--data", str(path), "--real-only", "--out", str(tmp_path)], "is a directory"),
        (["--data", str(path), "--sim-json", str(tmp_path / "a-file")], "not a directory"),
    ]
    for argv, message in cases:
        assert calibrate.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err
        assert err.count("\n") == 1


def test_the_sweep_goes_to_the_dask_scheduler_it_is_given(
    calibrate: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    commands: list[list[str]] = []

    def fake_run(command: list[str], **_: object) -> object:
        commands.append(command)
        return type("Done", (), {"returncode": 0, "stdout": '{"scenario": "s", "results": []}', "stderr": ""})()

    monkeypatch.setattr(calibrate.subprocess, "run", fake_run)
    calibrate.run_sweep(tmp_path / "s.yaml", 2, "tcp://sched:8786")
    calibrate.run_sweep(tmp_path / "s.yaml", None)
    assert commands[0][-4:] == ["--jobs", "2", "--scheduler", "tcp://sched:8786"]
    assert "--scheduler" not in commands[1]
    assert "--jobs" not in commands[1]
