"""The bayesopt tuner: Optuna TPE ask/tell per OSC, a budget of trials, then the best one."""

from __future__ import annotations

import statistics

import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import BOUNDS, DEFAULT, SyntheticOsc, drive
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Config, Context
from pfstune.tuners.bayesopt import BayesOptTuner

A = "fs-OST0000-osc-ffff000000000001"


@pytest.mark.parametrize(
    "best",
    [{"max_pages_per_rpc": 256, "max_rpcs_in_flight": 32}, {"max_pages_per_rpc": 8, "max_rpcs_in_flight": 128}],
)
def test_after_its_budget_it_runs_near_the_optimum(best: Config) -> None:
    osc = SyntheticOsc(best)
    configs = list(drive(BayesOptTuner(budget=24), osc, ticks=120))
    settled = statistics.mean(osc.mbps(c) for c in configs[25:]) / osc.peak_mbps
    assert settled > 0.9, (settled, configs[-1])
    assert len({tuple(c.values()) for c in configs[25:]}) == 1  # exploiting: one configuration


def test_configurations_it_did_not_ask_for_still_count() -> None:
    """Replayed data: the configuration in force is someone else's choice, and is learned from."""
    tuner = BayesOptTuner(budget=4, startup=1, window=10)
    osc = SyntheticOsc()
    recorded = [{"max_pages_per_rpc": p, "max_rpcs_in_flight": f} for p, f in ((1, 1), (256, 32), (64, 4), (128, 1))]
    for tick, config in enumerate(recorded):
        metrics = osc.metrics(config)
        tuner.observe(A, dict(config), metrics)
        suggestion = tuner.suggest(Context(A, tick * 0.5, dict(config), BOUNDS, metrics))
    assert suggestion == {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 32}  # budget spent: best seen


def test_a_new_access_pattern_starts_a_new_study() -> None:
    tuner = BayesOptTuner(budget=6, startup=2)
    reads = SyntheticOsc()
    for _ in drive(tuner, reads, ticks=12, name=A):
        pass
    assert len(tuner.state_dict()["oscs"][A]["history"]) >= 6
    writes = SyntheticOsc(write=True)
    config = dict(DEFAULT)
    tuner.observe(A, dict(config), writes.metrics(config))
    state = tuner.state_dict()["oscs"][A]
    assert state["pattern"].startswith("write/")
    assert len(state["history"]) == 1  # only the write interval just observed


def test_idle_returns_the_original_and_bounds_shape_the_space() -> None:
    tuner = BayesOptTuner(budget=10)
    bounds = {"max_pages_per_rpc": (4, 64), "max_rpcs_in_flight": (2, 16)}
    osc = SyntheticOsc()
    original = {"max_pages_per_rpc": 16, "max_rpcs_in_flight": 4}
    config = dict(original)
    for tick in range(30):
        metrics = osc.metrics(config)
        tuner.observe(A, dict(config), metrics)
        config = tuner.suggest(Context(A, tick * 0.5, config, bounds, metrics))
        assert 4 <= config["max_pages_per_rpc"] <= 64
        assert 2 <= config["max_rpcs_in_flight"] <= 16
    assert tuner.suggest(Context(A, 20.0, config, bounds, {"actual_record_duration": 0.5})) == original


def test_the_same_seed_gives_the_same_trials() -> None:
    a = list(drive(BayesOptTuner(seed=1), SyntheticOsc(), ticks=30))
    b = list(drive(BayesOptTuner(seed=1), SyntheticOsc(), ticks=30))
    c = list(drive(BayesOptTuner(seed=2), SyntheticOsc(), ticks=30))
    assert a == b
    assert a != c


@pytest.mark.parametrize(
    ("options", "message"),
    [({"startup": "0"}, "startup"), ({"budget": "4", "startup": "8"}, "startup"), ({"window": "3"}, "window")],
)
def test_bad_options_are_user_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        make_tuner("bayesopt", options)


def test_a_corrupt_state_is_a_user_error() -> None:
    with pytest.raises(UserError, match="invalid saved state"):
        BayesOptTuner().load_state_dict({"oscs": {A: {"history": [[{"x": 1}]]}}})


def test_a_pending_trial_waits_out_an_idle_interval() -> None:
    tuner = BayesOptTuner(budget=24)
    osc = SyntheticOsc()
    config = dict(DEFAULT)
    for tick in range(5):
        tuner.observe(A, dict(config), osc.metrics(config))
        config = tuner.suggest(Context(A, tick * 0.5, dict(config), BOUNDS, osc.metrics(config)))
    asked = dict(config)
    idle = {"actual_record_duration": 0.5}
    tuner.observe(A, dict(config), idle)
    during = tuner.suggest(Context(A, 3.0, dict(config), BOUNDS, idle))
    assert during == DEFAULT  # idle: the original configuration
    tuner.observe(A, dict(during), osc.metrics(during))
    after = tuner.suggest(Context(A, 3.5, dict(during), BOUNDS, osc.metrics(during)))
    assert after == asked  # the trial asked before the gap, not a new one
    trials = tuner._oscs[A].study.get_trials(deepcopy=False)
    assert not [t for t in trials if t.state.name == "FAIL"]
