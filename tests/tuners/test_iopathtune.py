"""IOPathTune's policy on synthetic OSCs: climbs to better configurations, reverses, adapts."""

from __future__ import annotations

import itertools

import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import DEFAULT, SyntheticOsc, drive
from pfstune.tuners import make_tuner
from pfstune.tuners.iopathtune import IOPathTuneTuner


def test_changes_only_once_per_period() -> None:
    tuner = IOPathTuneTuner(period=10.0)
    configs = list(drive(tuner, SyntheticOsc(), ticks=60))  # 30 s of 0.5 s ticks
    changes = [i for i in range(1, len(configs)) if configs[i] != configs[i - 1]]
    assert configs[0] == DEFAULT
    assert changes, "it never changed anything"
    assert all(b - a >= 20 for a, b in itertools.pairwise(changes)), changes


def test_each_step_doubles_or_halves_one_parameter() -> None:
    configs = [DEFAULT, *drive(IOPathTuneTuner(period=1.0), SyntheticOsc(), ticks=200)]
    for before, after in itertools.pairwise(configs):
        changed = [p for p in before if before[p] != after[p]]
        assert len(changed) <= 1, (before, after)
        for p in changed:
            assert after[p] in (before[p] * 2, before[p] // 2), (before, after)


@pytest.mark.parametrize(
    "best",
    [
        {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 32},
        {"max_pages_per_rpc": 16, "max_rpcs_in_flight": 2},
        {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 128},
    ],
)
def test_climbs_towards_the_best_configuration(best: dict[str, int]) -> None:
    osc = SyntheticOsc(best)
    configs = list(drive(IOPathTuneTuner(period=1.0), osc, ticks=400))
    # It keeps probing around the optimum (a step out and back), so judge the late average.
    late = sum(osc.mbps(c) for c in configs[-200:]) / 200
    assert late >= 0.9 * osc.peak_mbps, (configs[-1], late)
    assert late > 1.2 * osc.mbps(DEFAULT)


def test_a_workload_change_restarts_the_search() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    first = SyntheticOsc({"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 128})
    name = "fs-OST0000-osc-ffff000000000001"
    for _ in drive(tuner, first, ticks=300, name=name):
        pass
    then = SyntheticOsc({"max_pages_per_rpc": 8, "max_rpcs_in_flight": 2}, write=True)
    config = tuner._states[name]
    assert config.signature is not None
    assert config.signature.startswith("read")
    configs = list(drive(tuner, then, ticks=400, name=name))
    assert sum(then.mbps(c) for c in configs[-200:]) / 200 >= 0.9 * then.peak_mbps, configs[-1]
    signature = tuner._states[name].signature
    assert signature is not None
    assert signature.startswith("write")


def test_idle_osc_is_left_alone() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    idle = SyntheticOsc(peak_mbps=0.0)
    assert set(map(tuple, (sorted(c.items()) for c in drive(tuner, idle, ticks=100)))) == {
        tuple(sorted(DEFAULT.items()))
    }


@pytest.mark.parametrize(
    "options",
    [{"period": "0"}, {"period": "inf"}, {"tolerance": "1.5"}, {"period": "x"}, {"nope": "1"}, {"objective": "disk"}],
)
def test_bad_options_are_user_errors(options: dict[str, str]) -> None:
    with pytest.raises(UserError):
        make_tuner("iopathtune", options)


def test_unknown_tuner_is_a_user_error() -> None:
    with pytest.raises(UserError, match="known: bandit, bayesopt, default, dial, iopathtune, oracle, random"):
        make_tuner("nope")
