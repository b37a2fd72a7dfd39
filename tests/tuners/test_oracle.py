"""The oracle: the best static dial99 configuration of a simulated scenario."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from pfstune.cli.main import main
from pfstune.errors import UserError
from pfstune.runs import simulate
from pfstune.sim.scenario import load_scenario
from pfstune.sim.sweep import GRIDS, grid_configs, sweep
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Context


def test_without_a_configuration_it_says_it_is_sim_only() -> None:
    with pytest.raises(UserError, match="sim run --tuner oracle"):
        make_tuner("oracle")


def test_it_holds_its_configuration_within_bounds() -> None:
    tuner = make_tuner("oracle", {"max_pages_per_rpc": "2048", "max_rpcs_in_flight": "16"})
    bounds = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}
    config = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 8}
    for tick in range(3):
        suggestion = tuner.suggest(Context("fs-OST0000-osc-ffff000000000001", tick * 0.5, config, bounds))
        assert suggestion == {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 16}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_pages_per_rpc": "4096", "max_rpcs_in_flight": "-5"}, "max_rpcs_in_flight=-5 is not between 1 and 256"),
        (
            {"max_pages_per_rpc": "32768", "max_rpcs_in_flight": "8"},
            "max_pages_per_rpc=32768 is not between 1 and 16384",
        ),
        ({"max_pages_per_rpc": "64"}, "max_rpcs_in_flight=0 is not between 1 and 256; give both"),
    ],
)
def test_a_configuration_out_of_lustre_s_range_is_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=f"^tuner oracle: {re.escape(message)}"):
        make_tuner("oracle", options)


def test_a_value_cut_to_an_osc_s_bounds_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    tuner = make_tuner("oracle", {"max_pages_per_rpc": "4096", "max_rpcs_in_flight": "8"})
    bounds = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}
    config = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 8}
    with caplog.at_level(logging.WARNING, logger="pfstune"):
        for osc in ("fs-OST0000-osc-ffff000000000001", "fs-OST0001-osc-ffff000000000001"):
            assert tuner.suggest(Context(osc, 0.0, config, bounds))["max_pages_per_rpc"] == 1024
    assert [r.getMessage() for r in caplog.records] == [
        "oracle: max_pages_per_rpc=4096 is beyond what fs-OST0000-osc-ffff000000000001 takes; 1024 is used"
    ]


def test_the_oracle_run_is_the_best_run_of_the_dial99_sweep(small_scenario: Path) -> None:
    scenario = load_scenario(small_scenario, {"duration": "1s"})
    text = small_scenario.read_text()
    swept = sweep(text, str(small_scenario), {"duration": "1s"}, grid_configs(GRIDS["dial99"]), jobs=2)
    best = max(swept["results"], key=lambda r: r["mbps"])
    worst = min(swept["results"], key=lambda r: r["mbps"])
    assert best["mbps"] > worst["mbps"]  # the scenario does depend on the configuration
    result = simulate(scenario, "oracle")
    assert result["oracle_config"] == best["config"]
    assert result["mbps"] == best["mbps"]
    assert result["sweep_runs"] == 99


def test_sim_run_oracle_json_and_the_agent_refuses_it(
    small_scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", "run", str(small_scenario), "--duration", "1s", "--tuner", "oracle", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["oracle_config"]) == {"osc.max_pages_per_rpc", "osc.max_rpcs_in_flight"}
    code = main(
        ["agent", "--root", str(tmp_path), "--state-dir", str(tmp_path / "s"), "--tuner", "oracle", "--duration", "1s"]
    )
    assert code == 2
    assert "sim run --tuner oracle" in capsys.readouterr().err
