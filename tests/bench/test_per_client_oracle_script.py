"""benchmarks/per-client-oracle: a coordinate descent that never ends below where it started."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bench._scripts import load_script

TWO_CLIENTS = (
    "name: two\nseed: 1\nduration: 1s\ncluster: {preset: cloudlab-c6525, clients: 2}\njobs:\n"
    "  - {name: writer, client: 0, workload: filebench.randomwrite, iosize: 64k, filesize: 1g, stripe_count: 1}\n"
    "  - {name: reader, client: 1, workload: filebench.seqread, iosize: 1m, filesize: 1g, stripe_count: 1}\n"
)


def test_the_descent_keeps_the_best_assignment_and_checks_it_on_other_seeds(
    write_scenario: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("per-client-oracle")
    path = write_scenario(TWO_CLIENTS, "two.yaml")
    assert script.main([str(path), "--rounds", "1", "--check-seeds", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    configs = [tuple(c) for c in result["configs"]]
    assert len(configs) == 2
    assert all(c in script.COARSE or c == script.DEFAULT for c in configs)
    # a client keeps what it holds unless a candidate beats it, so the descent never ends lower
    assert result["mbps"] >= result["default_mbps"] > 0
    assert result["vs_default"] == pytest.approx(result["mbps"] / result["default_mbps"])
    assert [step["client"] for step in result["steps"]] == [0, 1]
    assert result["steps"][-1]["mbps"] == result["mbps"]
    # the assignment's figure is a plain run of it (deterministic), and the check runs it on seed 2
    scenario = script.load_scenario(path)
    assert script.simulate(scenario, tuple(configs)) == result["mbps"]
    (check,) = result["checks"]
    seed2 = script.load_scenario(path, {"seed": 2})
    assert check["seed"] == 2
    assert check["mbps"] == script.simulate(seed2, tuple(configs))
    assert check["default_mbps"] == script.simulate(seed2, (script.DEFAULT, script.DEFAULT))


def test_bad_arguments_are_refused(write_scenario: Callable[..., Path]) -> None:
    script = load_script("per-client-oracle")
    path = write_scenario(TWO_CLIENTS, "two.yaml")
    with pytest.raises(SystemExit) as exit_info:
        script.main([str(path), "--check-seeds", "x"])
    assert exit_info.value.code == 2
    assert script.main([str(path.with_name("missing.yaml"))]) == 2
