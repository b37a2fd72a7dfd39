"""benchmarks/suite --from: a later bench document replaces the runs of its own tuners only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.bench._scripts import BENCHMARKS, load_script

SCRIPT = BENCHMARKS / "suite"


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    return load_script("suite")


def _document(path: Path, mbps: dict[tuple[str, int], float]) -> Path:
    """A bench.json with one scenario; ``mbps`` maps (tuner, seed) to application MB/s."""
    runs = [
        {"scenario": "x", "file": "scenarios/x.yaml", "tuner": t, "seed": seed, "mbps": v}
        for (t, seed), v in mbps.items()
    ]
    results: dict[str, Any] = {t: {"mbps": v, "vs_oracle": None, "vs_default": None} for (t, _), v in mbps.items()}
    entry = {
        "name": "x",
        "file": "scenarios/x.yaml",
        "duration_s": 10.0,
        "phase_starts_s": [0.0],
        "oracle_configs": {},
        "phase_best": {},
        "results": results,
    }
    path.write_text(json.dumps({"seeds": [1], "scenarios": [entry], "runs": runs}))
    return path


def test_a_later_document_replaces_only_its_own_tuners(suite: ModuleType, tmp_path: Path) -> None:
    first = _document(tmp_path / "a.json", {("default", 1): 100.0, ("dial", 1): 50.0, ("oracle", 1): 200.0})
    later = _document(tmp_path / "b.json", {("dial", 1): 150.0})
    (entry,) = suite.load([first, later])
    results = entry["results"]
    assert set(results) == {"default", "dial", "oracle"}
    assert results["dial"]["mbps"] == 150.0
    assert results["dial"]["vs_oracle"] == pytest.approx(0.75)  # against the first document's oracle
    assert results["dial"]["vs_default"] == pytest.approx(1.5)
    assert results["default"]["vs_oracle"] == pytest.approx(0.5)


def test_a_ratio_without_its_baseline_for_every_seed_is_none(suite: ModuleType, tmp_path: Path) -> None:
    first = _document(tmp_path / "a.json", {("default", 1): 100.0, ("oracle", 1): 200.0})
    later = _document(tmp_path / "b.json", {("dial", 1): 150.0, ("dial", 2): 160.0})
    (entry,) = suite.load([first, later])
    assert entry["results"]["dial"]["vs_oracle"] is None  # seed 2 has no oracle run
    lines, _ = suite.checks([entry])
    assert any("not judged" in line and "x" in line for line in lines)


def test_a_bench_that_fails_ends_the_script_with_its_status(tmp_path: Path) -> None:
    # the bench prints its one-line error; the script adds no traceback of its own
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "absent.yaml: cannot read the scenario" in done.stderr
    assert "Traceback" not in done.stderr


def test_from_a_directory_without_a_bench_document_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--from", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert f"--from {tmp_path}: no bench.json there" in done.stderr
    assert "Traceback" not in done.stderr


def _judged(dial: dict[str, Any], starts: list[float]) -> dict[str, Any]:
    return {"name": "x", "phase_starts_s": starts, "results": {"dial": {"mbps": 1.0, **dial}}}


def test_a_ratio_of_zero_is_below_every_target(suite: ModuleType) -> None:
    lines, _ = suite.checks([_judged({"vs_oracle": 0.0, "vs_default": 0.0}, [0.0])])
    assert "below 0.95: x (0.000)" in lines[0]
    assert lines[1] == "DIAL below the default: x (0.000)"


def test_a_ratio_just_below_a_target_does_not_print_as_the_target(suite: ModuleType) -> None:
    lines, _ = suite.checks([_judged({"vs_oracle": 0.94996, "vs_default": 0.99999}, [0.0])])
    assert "below 0.95: x (0.94996)" in lines[0]
    assert lines[1] == "DIAL below the default: x (0.99999)"


def test_convergence_is_judged_after_each_phase_change_on_the_slowest_seed(suite: ModuleType) -> None:
    ratios = {"vs_oracle": 1.0, "vs_default": 1.0}
    # the run's start is not a phase change; the mean 2.5 s hides a seed at 3.5 s
    entry = _judged({**ratios, "convergence_s": [9.0, 2.5], "convergence_max_s": [12.0, 3.5]}, [0.0, 20.0])
    _, figures = suite.checks([entry])
    assert figures["dial_slow_phases"] == ["x@20s (3.5 s)"]
    single = _judged({**ratios, "convergence_s": [9.0], "convergence_max_s": [9.0]}, [0.0])
    assert suite.checks([single])[1]["dial_slow_phases"] == []
    # a document without the oracle has no convergence: named, not a crash
    lines, figures = suite.checks([_judged(ratios, [0.0, 20.0])])
    assert figures["dial_slow_phases"] == []
    assert "convergence not judged (no oracle run): x" in lines
