"""benchmarks/suite --from: a later bench document replaces the runs of its own tuners only."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "suite"


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    # the script has no .py suffix: name its loader explicitly
    loader = SourceFileLoader("suite_script", str(SCRIPT))
    spec = importlib.util.spec_from_loader("suite_script", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


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
