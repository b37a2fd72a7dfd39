"""benchmarks/fidelity: the grant a warm run starts with (``--warm``)."""

from __future__ import annotations

import pandas as pd

from pfstune.sim.engine import Engine
from tests.bench._scripts import load_script

MIB = 2**20


def test_a_warm_run_starts_with_what_the_real_osc_held_within_what_lustre_allows() -> None:
    script = load_script("fidelity")
    first = pd.Series({"cur_grant_bytes": 900 * MIB, "cur_dirty_bytes": 100 * MIB})
    assert script.warm_grant(first) == 1000 * MIB  # grant and dirty pages together
    assert script.warm_grant(pd.Series({"cur_grant_bytes": 0, "cur_dirty_bytes": 0})) == 8_437_760
    full = pd.Series({"cur_grant_bytes": 1800 * MIB, "cur_dirty_bytes": 0})
    assert script.warm_grant(full) == 1792 * MIB - 1  # the most an OSC asks for
    assert script.warm_grant(pd.Series({"cur_grant_bytes": float("nan"), "cur_dirty_bytes": 0})) == 8_437_760


def test_the_scenario_of_a_warm_run_gives_every_osc_that_grant() -> None:
    script = load_script("fidelity")
    e = Engine(script.scenario_for("rnd_w_1_io_1m", 1, 4, {}, 512 * MIB))
    (client, *_) = e.clients()
    assert {e.get_param(0, f"osc.{osc}.cur_grant_bytes") for osc in client["osc"]} == {f"{512 * MIB}\n"}
    cold = Engine(script.scenario_for("rnd_w_1_io_1m", 1, 4, {}))
    assert cold.get_param(0, f"osc.{client['osc'][0]}.cur_grant_bytes") == "8437760\n"
