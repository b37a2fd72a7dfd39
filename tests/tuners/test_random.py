"""The random tuner: DIAL's collector as a policy (uniform dial99 draws, per OSC, seeded)."""

from __future__ import annotations

import collections
import json
import subprocess
import sys

import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import BOUNDS, DEFAULT
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Config, Context
from pfstune.tuners.random import DIAL99, RandomTuner

A = "hasanfs-OST0000-osc-ffff8b06d2edc000"
B = "hasanfs-OST0001-osc-ffff8b06d2edc000"


def context(osc: str = A, bounds: dict[str, tuple[int, int]] | None = None, config: Config | None = None) -> Context:
    return Context(osc=osc, time=0.0, config=dict(config or DEFAULT), bounds=dict(bounds or BOUNDS))


def draws(tuner: RandomTuner, n: int, osc: str = A) -> list[tuple[int, int]]:
    out = []
    for _ in range(n):
        config = tuner.suggest(context(osc))
        out.append((config["max_pages_per_rpc"], config["max_rpcs_in_flight"]))
    return out


def test_every_draw_is_a_dial99_point_and_all_99_come_up_about_equally() -> None:
    counts = collections.Counter(draws(RandomTuner(seed=1), 9900))
    grid = {(p, f) for p in DIAL99["max_pages_per_rpc"] for f in DIAL99["max_rpcs_in_flight"]}
    assert len(grid) == 99
    assert set(counts) == grid
    assert all(50 <= count <= 160 for count in counts.values()), counts.most_common(3)  # mean 100


def test_suggestions_are_plain_ints_of_both_parameters() -> None:
    config = RandomTuner().suggest(context())
    assert set(config) == {"max_pages_per_rpc", "max_rpcs_in_flight"}
    assert all(type(value) is int for value in config.values())


def test_grid_points_outside_the_bounds_are_skipped() -> None:
    bounds = {"max_pages_per_rpc": (2, 256), "max_rpcs_in_flight": (3, 16)}
    seen = set()
    tuner = RandomTuner(seed=4)
    for _ in range(2000):
        config = tuner.suggest(context(bounds=bounds))
        seen.add((config["max_pages_per_rpc"], config["max_rpcs_in_flight"]))
    assert seen == {(p, f) for p in (2, 4, 8, 16, 32, 64, 128, 256) for f in (4, 8, 16)}


def test_a_parameter_without_grid_values_in_bounds_keeps_its_value_clamped() -> None:
    bounds = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (5, 7)}
    tuner = RandomTuner()
    assert (
        tuner.suggest(context(bounds=bounds, config={"max_pages_per_rpc": 8, "max_rpcs_in_flight": 6}))[
            "max_rpcs_in_flight"
        ]
        == 6
    )
    assert (
        tuner.suggest(context(bounds=bounds, config={"max_pages_per_rpc": 8, "max_rpcs_in_flight": 64}))[
            "max_rpcs_in_flight"
        ]
        == 7
    )


def test_the_same_seed_gives_the_same_draws_and_another_seed_others() -> None:
    assert draws(RandomTuner(seed=3), 50) == draws(RandomTuner(seed=3), 50)
    assert draws(RandomTuner(seed=3), 50) != draws(RandomTuner(seed=4), 50)


def test_each_osc_has_its_own_stream() -> None:
    alone = draws(RandomTuner(seed=9), 40, A)
    mixed = RandomTuner(seed=9)
    interleaved = []
    for _ in range(40):
        draws(mixed, 3, B)  # another OSC drawing in between changes nothing for A
        interleaved += draws(mixed, 1, A)
    assert interleaved == alone
    assert draws(RandomTuner(seed=9), 40, B) != alone


def test_streams_do_not_depend_on_the_process_hash_seed() -> None:
    code = (
        "from pfstune.testing.tuners import BOUNDS, DEFAULT\n"
        "from pfstune.tuners._base import Context\n"
        "from pfstune.tuners.random import RandomTuner\n"
        "t = RandomTuner(seed=5)\n"
        f"c = Context(osc={A!r}, time=0.0, config=dict(DEFAULT), bounds=dict(BOUNDS))\n"
        "print([tuple(t.suggest(c).values()) for _ in range(5)])"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": seed}
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {f"{draws(RandomTuner(seed=5), 5, A)}\n"}


def test_the_stream_is_pinned() -> None:
    """The sequence is part of the collected data's reproducibility: it must not drift between versions."""
    assert draws(RandomTuner(seed=0), 6, A) == [(2, 16), (64, 1), (1, 16), (1, 64), (256, 2), (4, 1)]


def test_state_round_trips_through_json() -> None:
    tuner = RandomTuner(seed=11)
    draws(tuner, 17, A)
    draws(tuner, 5, B)
    state = json.loads(json.dumps(tuner.state_dict()))
    assert state["seed"] == 11
    assert set(state["streams"]) == {A, B}
    copy = RandomTuner()
    copy.load_state_dict(state)
    assert draws(copy, 30, A) == draws(tuner, 30, A)
    assert draws(copy, 30, B) == draws(tuner, 30, B)
    assert draws(copy, 30, "new-osc") == draws(tuner, 30, "new-osc")


def test_forget_restarts_the_stream() -> None:
    tuner = RandomTuner(seed=2)
    first = draws(tuner, 5)
    tuner.forget(A)
    assert draws(tuner, 5) == first


def test_a_bad_state_is_a_user_error() -> None:
    with pytest.raises(UserError, match="invalid saved state"):
        RandomTuner().load_state_dict({"seed": 1, "streams": {A: {"state": "zz"}}})


def test_make_tuner_takes_the_seed_option() -> None:
    tuner = make_tuner("random", {"seed": "7"})
    assert isinstance(tuner, RandomTuner)
    assert draws(tuner, 10) == draws(RandomTuner(seed=7), 10)
