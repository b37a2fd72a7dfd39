"""The bandit tuner: seed 004's contextual epsilon-greedy, one arm set per access pattern."""

from __future__ import annotations

import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import BOUNDS, DEFAULT, SyntheticOsc, drive
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Config, Context
from pfstune.tuners.bandit import GRIDS, BanditTuner

A = "fs-OST0000-osc-ffff000000000001"
B = "fs-OST0001-osc-ffff000000000001"
BEST = {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 32}  # SyntheticOsc's optimum, a coarse arm


def arm(config: Config) -> tuple[int, int]:
    return config["max_pages_per_rpc"], config["max_rpcs_in_flight"]


def test_every_arm_is_tried_once_then_the_best_is_exploited() -> None:
    configs = list(drive(BanditTuner(epsilon=0.0), SyntheticOsc(), ticks=60))
    # drive() starts under the default (1024, 8), an arm: the 15 others come next, once each.
    first = [arm(c) for c in configs[:15]]
    assert sorted(first) == sorted(set(GRIDS["coarse"]) - {(1024, 8)})
    assert all(c == BEST for c in configs[15:])


def test_epsilon_is_the_share_of_random_choices_after_convergence() -> None:
    configs = list(drive(BanditTuner(epsilon=0.2, seed=3), SyntheticOsc(), ticks=2016))[16:]
    off_best = sum(c != BEST for c in configs) / len(configs)
    # A random arm is the best one 1 time in 16: expect 0.2 * 15/16 = 0.1875 off the best.
    assert 0.15 < off_best < 0.23


def test_an_osc_with_a_known_pattern_starts_from_what_other_oscs_learned() -> None:
    tuner = BanditTuner(epsilon=0.0)
    for _ in drive(tuner, SyntheticOsc(), ticks=20, name=A):
        pass
    assert next(iter(drive(tuner, SyntheticOsc(), ticks=1, name=B))) == BEST


def test_read_and_write_patterns_learn_separately() -> None:
    tuner = BanditTuner(epsilon=0.0)
    reads = SyntheticOsc({"max_pages_per_rpc": 16, "max_rpcs_in_flight": 128})
    writes = SyntheticOsc({"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 2}, write=True)
    read_configs = list(drive(tuner, reads, ticks=40, name=A))
    write_configs = list(drive(tuner, writes, ticks=40, name=B))
    assert read_configs[-1] == reads.best
    assert write_configs[-1] == writes.best
    patterns = {key.split("/")[0] for key in tuner.state_dict()["q"]}
    assert patterns == {"read", "write"}


def test_q_values_are_the_mean_throughput_of_each_arm() -> None:
    tuner = BanditTuner()
    osc = SyntheticOsc()
    for config in ({"max_pages_per_rpc": 16, "max_rpcs_in_flight": 2}, BEST, BEST):
        tuner.observe(A, dict(config), osc.metrics(config))
    (pattern,) = tuner.state_dict()["q"]
    q = tuner.q_values(pattern)
    assert q[(256, 32)] == pytest.approx(osc.peak_mbps)
    assert q[(16, 2)] == pytest.approx(osc.mbps({"max_pages_per_rpc": 16, "max_rpcs_in_flight": 2}))


def test_step_size_weights_recent_rewards() -> None:
    tuner = BanditTuner(step_size=0.5)
    osc = SyntheticOsc()
    tuner.observe(A, dict(BEST), osc.metrics(BEST))
    tuner.observe(A, dict(BEST), {**osc.metrics(BEST), "ost_read_rpc_bytes_data.samples_sum": 0.0 + 1e6 * 0.5 * 1000})
    (pattern,) = tuner.state_dict()["q"]
    assert tuner.q_values(pattern)[(256, 32)] == pytest.approx(0.5 * 2000 + 0.5 * 1000)


def test_idle_osc_goes_back_to_its_original_configuration() -> None:
    tuner = BanditTuner()
    original = {"max_pages_per_rpc": 512, "max_rpcs_in_flight": 4}
    osc = SyntheticOsc()
    tuner.observe(A, dict(original), osc.metrics(original))
    busy = tuner.suggest(Context(A, 0.5, dict(original), BOUNDS, osc.metrics(original)))
    assert busy != original
    idle = tuner.suggest(Context(A, 1.0, busy, BOUNDS, {"actual_record_duration": 0.5}))
    assert idle == original


def test_arms_outside_the_bounds_are_never_chosen() -> None:
    bounds = {"max_pages_per_rpc": (1, 256), "max_rpcs_in_flight": (1, 16)}
    tuner = BanditTuner(epsilon=0.5)
    osc = SyntheticOsc()
    config = dict(DEFAULT)
    seen = set()
    for tick in range(300):
        metrics = osc.metrics(config)
        tuner.observe(A, dict(config), metrics)
        config = tuner.suggest(Context(A, tick * 0.5, config, bounds, metrics))
        seen.add(arm(config))
    assert seen == {(p, f) for p, f in GRIDS["coarse"] if p <= 256 and f <= 16}


def test_dial99_grid_and_reproducible_draws() -> None:
    a = [arm(c) for c in drive(BanditTuner(grid="dial99", seed=5), SyntheticOsc(), ticks=150)]
    b = [arm(c) for c in drive(BanditTuner(grid="dial99", seed=5), SyntheticOsc(), ticks=150)]
    c = [arm(c) for c in drive(BanditTuner(grid="dial99", seed=6), SyntheticOsc(), ticks=150)]
    assert a == b != c
    assert set(a[:98]) == set(GRIDS["dial99"]) - {(1024, 8)}  # each untried arm once, none twice


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"epsilon": "1.5"}, "epsilon"),
        ({"grid": "fine"}, "unknown grid"),
        ({"step_size": "-1"}, "step_size"),
        ({"epsilon": "lots"}, "not a valid float"),
    ],
)
def test_bad_options_are_user_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        make_tuner("bandit", options)


def test_a_corrupt_state_is_a_user_error() -> None:
    with pytest.raises(UserError, match="invalid saved state"):
        BanditTuner().load_state_dict({"q": {"read/seq/large": [[1, 2]]}})


def test_without_llite_statistics_the_bandit_still_settles() -> None:
    # the mean RPC size depends on the arm: as a context it would credit each arm to another
    # pattern, and the bandit would try "untried" arms for ever
    tuner = BanditTuner(epsilon=0.0)
    osc = SyntheticOsc(write=True)
    name = "fs-OST0000-osc-ffff000000000001"
    config = dict(DEFAULT)
    chosen = []
    for tick in range(200):
        metrics = {k: v for k, v in osc.metrics(config).items() if not k.startswith("llite_")}
        tuner.observe(name, dict(config), metrics)
        config = tuner.suggest(Context(name, tick * 0.5, dict(config), BOUNDS, metrics))
        chosen.append((config["max_pages_per_rpc"], config["max_rpcs_in_flight"]))
    assert len(set(chosen[-100:])) == 1
