"""IOPathTune's policy on synthetic OSCs: climbs to better configurations, reverses, adapts."""

from __future__ import annotations

import itertools

import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import DEFAULT, SyntheticOsc, drive
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Context
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


OSC = "fs-OST0000-osc-ffff000000000001"
BOUNDS = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}


def _period(
    tuner: IOPathTuneTuner,
    config: dict[str, int],
    mbps: tuple[float, float],
    read_share: float = 1.0,
    request: float = 1 << 20,
    bounds: dict[str, tuple[int, int]] = BOUNDS,
) -> dict[str, int]:
    """One 1 s period of two 0.5 s intervals at ``mbps`` (first half, second half); the suggestion."""
    for rate in mbps:
        moved = rate * 1e6 * 0.5
        metrics = {
            "actual_record_duration": 0.5,
            "ost_read_rpc_bytes_data.samples_sum": moved * read_share,
            "ost_write_rpc_bytes_data.samples_sum": moved * (1 - read_share),
            "llite_stats_read_bytes.samples_sum": moved * read_share,
            "llite_stats_read_bytes.no_of_samples": moved * read_share / request,
            "llite_stats_write_bytes.samples_sum": moved * (1 - read_share),
            "llite_stats_write_bytes.no_of_samples": moved * (1 - read_share) / request,
        }
        tuner.observe(OSC, dict(config), metrics)
    return tuner.suggest(Context(OSC, 0.0, dict(config), bounds, {"actual_record_duration": 0.5}))


def test_a_balanced_mix_and_short_last_reads_keep_one_workload_signature() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    config = dict(DEFAULT)
    signatures = set()
    for share, request in [(0.52, 1 << 20), (0.48, 1 << 20), (0.55, 0.98 * (1 << 20)), (0.45, 1 << 20)]:
        config = _period(tuner, config, (200.0, 200.0), read_share=share, request=request)
        signatures.add(tuner._states[OSC].signature)
    assert signatures == {"mixed:8"}


def test_a_period_whose_measured_half_moved_nothing_judges_nothing() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    stepped = _period(tuner, dict(DEFAULT), (200.0, 200.0))
    assert stepped != DEFAULT
    state = dict(vars(tuner._states[OSC]))
    assert _period(tuner, stepped, (200.0, 0.0)) == stepped  # a burst that ended in the first half
    assert vars(tuner._states[OSC])["step"] == state["step"]
    assert vars(tuner._states[OSC])["baseline"] == state["baseline"]


def test_a_reversal_puts_back_the_value_before_a_clamped_step() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    start = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 192}
    stepped = _period(tuner, start, (200.0, 200.0))
    assert stepped == {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 256}  # 384, clamped
    assert _period(tuner, stepped, (150.0, 150.0)) == start  # lost: 192 again, not 128


def test_a_step_that_did_not_take_effect_is_dropped_not_judged() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    asked = _period(tuner, dict(DEFAULT), (200.0, 200.0))
    assert asked == {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 16}
    # the actuator refused it: the OSC is still at 8, and a dip of 6% is not the step's fault
    again = _period(tuner, dict(DEFAULT), (188.0, 188.0))
    assert again == asked
    assert tuner._states[OSC].baseline == 188.0


def test_settling_holds_the_best_configuration_measured() -> None:
    tuner = IOPathTuneTuner(period=1.0, patience=4)
    config = dict(DEFAULT)
    rate = 200.0
    for _ in range(5):  # every step loses 4%: within tolerance, so each one is kept
        config = _period(tuner, config, (rate, rate))
        rate *= 0.96
    assert config == DEFAULT  # the best was the first configuration
    assert tuner._states[OSC].hold > 0


def test_gains_within_the_tolerance_do_not_displace_the_first_configuration() -> None:
    # a flat surface measured with noise: each step gains 1%, within the 5% tolerance, and no
    # configuration is 5% better than the first: settling goes back to the first
    tuner = IOPathTuneTuner(period=1.0, patience=4)
    config, rate = dict(DEFAULT), 200.0
    for _ in range(5):
        config = _period(tuner, config, (rate, rate))
        rate *= 1.01
    assert config == DEFAULT
    assert tuner._states[OSC].hold > 0
    # with 3% per step, the gains add up beyond the tolerance: the last best of them is held
    tuner = IOPathTuneTuner(period=1.0, patience=4)
    config, rate, measured = dict(DEFAULT), 200.0, []
    for _ in range(5):
        measured.append(config)
        config = _period(tuner, config, (rate, rate))
        rate *= 1.03
    # 200, 206, 212.2 (5% above 200), 218.5, 225.1 (5% above 212.2) MB/s
    assert config == measured[4] == {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 32}


def test_a_new_workload_starts_without_the_old_trend() -> None:
    tuner = IOPathTuneTuner(period=1.0)
    config = _period(tuner, dict(DEFAULT), (200.0, 200.0))  # read workload: step rif 8 -> 16
    config = _period(tuner, config, (100.0, 100.0))  # lost: back to 8, rif's direction now down
    assert tuner._states[OSC].directions["max_rpcs_in_flight"] == -1
    config = _period(tuner, config, (300.0, 300.0), read_share=0.0, request=16 << 20)  # a writer
    assert tuner._states[OSC].signature == "write:12"
    assert config == {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 16}  # up first, as for any new workload
