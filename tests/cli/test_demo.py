"""``pfstune demo``: its scenarios, and a shortened run end to end."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from pfstune.cli import demo
from pfstune.cli.main import main
from pfstune.sim.scenario import parse_scenario
from pfstune.tuners.iopathtune import IOPathTuneTuner
from tests.conftest import SHARED


def test_demo_scenarios_are_valid_and_short() -> None:
    for name, text in demo.SCENARIOS.items():
        scenario = parse_scenario(text, name)
        assert f"{scenario.name}.yaml" == name
        assert scenario.duration_ns <= 60 * 10**9  # the demo must stay a few minutes on 2 cores
        assert scenario.preset == "cloudlab-c6525"


def test_the_random_reads_give_iopathtune_several_periods() -> None:
    # IOPathTune judges a step by the period after it: the demo must leave it room to climb
    period = inspect.signature(IOPathTuneTuner).parameters["period"].default
    scenario = parse_scenario(demo.SCENARIOS["randomread-16m.yaml"], "randomread-16m.yaml")
    assert scenario.duration_ns >= 4 * period * 10**9
    assert f"{period:g} s period" in demo.PERIOD_NOTE


def test_demo_end_to_end_writes_the_report_and_prints_every_tuner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the first scenario, shortened to 1 s so that the 99-run oracle sweep stays quick
    name, text = next(iter(demo.SCENARIOS.items()))
    monkeypatch.setattr(demo, "SCENARIOS", {name: text.replace("duration: 60s", "duration: 1s")})
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    for tuner in demo.TUNERS:
        assert f"randomread-16m  {tuner}" in printed
    assert "static (" in printed  # the oracle's configuration
    assert demo.PERIOD_NOTE in printed
    for file in ("report.md", "bench.json", "runs.csv", "normalised.png", f"scenarios/{name}"):
        assert (out / file).is_file(), file
    document = json.loads((out / "bench.json").read_text())
    results = document["scenarios"][0]["results"]
    assert set(results) == set(demo.TUNERS)
    # the oracle is the best static configuration: no static run (the default is one) beats it
    assert results["oracle"]["mbps"] >= results["default"]["mbps"]


def test_demo_refuses_an_output_path_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    assert main(["demo", "--out", str(path)]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["demo", "bench"])
def test_an_output_path_under_a_file_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    def no_runs(**_: object) -> None:
        raise AssertionError("simulated before checking --out")

    monkeypatch.setattr("pfstune.cli.bench.run_bench", no_runs)
    (tmp_path / "file").write_text("x")
    scenario = [] if command == "demo" else [str(SHARED / "scenarios" / "rnd_r_1_io_16m.yaml")]
    assert main([command, *scenario, "--out", str(tmp_path / "file" / "report")]) == 2
    assert "cannot make the directory" in capsys.readouterr().err
