"""pfstune overhead: one real agent tick over a virtual tree of N OSCs, timed by phase."""

from __future__ import annotations

import json

import pytest

from pfstune.cli.main import main
from pfstune.overhead import measure


def test_measure_runs_every_phase_over_n_busy_oscs() -> None:
    result = measure(3, tuner="dial", repeat=2)
    assert result["oscs"] == 3
    assert result["repeat"] == 2
    for key in ("probe_ms", "features_ms", "inference_ms", "apply_ms"):
        assert result[key] >= 0
    phases = result["probe_ms"] + result["features_ms"] + result["inference_ms"] + result["apply_ms"]
    assert result["tick_ms"] == pytest.approx(phases)  # with two ticks each median is a mean, and means add up
    # the copies carry traffic, so DIAL scores them: inference is a real model call, not a skip
    assert result["inference_ms"] > 0.1
    assert result["per_osc_ms"] == pytest.approx(result["tick_ms"] / 3)
    for key in ("probe_ms", "features_ms", "inference_ms", "apply_ms", "tick_ms"):
        assert result["per_osc"][key] == pytest.approx(result[key] / 3)
    assert isinstance(result["writes_per_tick"], float)


def test_overhead_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["overhead", "--oscs", "2", "--repeat", "1", "--tuner", "iopathtune", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"probe_ms", "features_ms", "inference_ms", "apply_ms", "tick_ms", "per_osc_ms"}
    assert main(["overhead", "--oscs", "0"]) == 2
    assert "--oscs 0" in capsys.readouterr().err
    # a tuner's options reach it: the oracle needs its configuration
    args = ["--tuner-option", "max_pages_per_rpc=64", "--tuner-option", "max_rpcs_in_flight=16"]
    assert main(["overhead", "--oscs", "2", "--repeat", "1", "--tuner", "oracle", *args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_writes"] == 4


def test_the_first_tick_with_writes_is_reported_apart() -> None:
    """The random tuner writes every OSC at the first tick, after saving every original."""
    result = measure(4, tuner="random", repeat=1)
    assert result["first_writes"] >= 4  # at least one parameter per OSC
    assert 0 < result["first_apply_ms"] <= result["first_tick_ms"]
