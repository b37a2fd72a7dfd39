"""DIAL's Conditional Score Greedy (Algorithm 1) with stand-in models: the paper's scores and the
scores of DIAL's released tuner (DIR-LAB/VertoIO ``greedy_config``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import BOUNDS, DEFAULT, SyntheticOsc, check_tuner
from pfstune.tuners import make_tuner
from pfstune.tuners._base import Config, Context
from pfstune.tuners.dial import DIAL99, DialTuner, _client_of

OSC = "fs-OST0000-osc-ffff000000000001"


class _Table:
    """A stand-in model: p(θ) from a function of the candidate only; records its calls."""

    def __init__(self, p: Callable[[Config], float]) -> None:
        self.p = p
        self.calls: list[tuple[str, int]] = []

    def predict_proba(self, op: str, features: pd.DataFrame, candidates: Sequence[Config]) -> np.ndarray:
        self.calls.append((op, len(features)))
        row = [self.p(c) for c in candidates]
        return np.array([row] * len(features))


def _context(op: str | None, config: Config = DEFAULT, bounds: dict[str, tuple[int, int]] = BOUNDS) -> Context:
    if op is None:
        metrics = SyntheticOsc(peak_mbps=0.0).metrics(config)
    else:
        metrics = SyntheticOsc(write=op == "write").metrics(config)
    return Context(OSC, 0.0, dict(config), bounds, metrics)


def test_grid_is_dial99() -> None:
    assert len(DIAL99) == 99
    assert {c["max_pages_per_rpc"] for c in DIAL99} == {2**i for i in range(11)}
    assert {c["max_rpcs_in_flight"] for c in DIAL99} == {2**i for i in range(9)}


def _config(pages: int, flight: int) -> Config:
    return {"max_pages_per_rpc": pages, "max_rpcs_in_flight": flight}


def test_paper_write_score_trades_probability_for_size() -> None:
    trusted = {(64, 4): 0.95, (256, 8): 0.93, (1024, 64): 0.5}
    model = _Table(lambda c: trusted.get((c["max_pages_per_rpc"], c["max_rpcs_in_flight"]), 0.1))
    # log2 min-max over S = {(64, 4), (256, 8)}: (64, 4) -> (0, 0), (256, 8) -> (1, 1)
    # beta = 1: (64, 4) 0.95 * 1 = 0.95 < (256, 8) 0.93 * 3 = 2.79
    assert DialTuner(score="paper", predictor=model).suggest(_context("write")) == _config(256, 8)
    # beta = 0: the score is p alone, so the most trusted configuration wins
    assert DialTuner(score="paper", beta=0.0, predictor=model).suggest(_context("write")) == _config(64, 4)
    # (1024, 64) is the largest but not trusted (p <= tau): never chosen


def test_paper_read_score_adds_the_rpcs_in_flight_term() -> None:
    trusted = {(1024, 1): 0.99, (16, 256): 0.985}
    model = _Table(lambda c: trusted.get((c["max_pages_per_rpc"], c["max_rpcs_in_flight"]), 0.0))
    # over S: (1024, 1) -> (1, 0), (16, 256) -> (0, 1)
    # read p * (1 + x1) + x2: (1024, 1) 1.98 < (16, 256) 0.985 + 1 = 1.985
    assert DialTuner(score="paper", predictor=model).suggest(_context("read")) == _config(16, 256)
    # write p * (1 + x1 + x2): (1024, 1) 1.98 > (16, 256) 1.97
    assert DialTuner(score="paper", predictor=model).suggest(_context("write")) == _config(1024, 1)


def test_paper_scores_normalise_the_configurations_over_s_not_the_grid() -> None:
    # Algorithm 1, line 6.  Over the grid (256, 256) would be (0.8, 1): read 0.81 * 1.8 + 1 = 2.458
    # against (1024, 1)'s 1.98.  Over S it is (0, 1): 0.81 + 1 = 1.81 < 1.98.
    trusted = {(1024, 1): 0.99, (256, 256): 0.81}
    model = _Table(lambda c: trusted.get((c["max_pages_per_rpc"], c["max_rpcs_in_flight"]), 0.0))
    assert DialTuner(score="paper", predictor=model).suggest(_context("read")) == _config(1024, 1)
    # one member in S: every parameter has one value (normalised to 0) and it is chosen
    lone = _Table(lambda c: 0.9 if (c["max_pages_per_rpc"], c["max_rpcs_in_flight"]) == (8, 2) else 0.0)
    for op in ("read", "write"):
        assert DialTuner(score="paper", predictor=lone).suggest(_context(op)) == _config(8, 2)


def test_released_scores_normalise_p_over_the_trusted_set() -> None:
    trusted = {(64, 4): 0.95, (256, 2): 0.93, (4, 2): 0.94, (1024, 64): 0.5}
    model = _Table(lambda c: trusted.get((c["max_pages_per_rpc"], c["max_rpcs_in_flight"]), 0.1))
    # q: (64, 4) -> 1, (4, 2) -> 0.5, (256, 2) -> 0; write q * (1 + x1 + x2):
    # (64, 4) 1 * 1.85 = 1.85, (4, 2) 0.5 * 1.325 = 0.6625, (256, 2) 0
    assert DialTuner(predictor=model).suggest(_context("write")) == _config(64, 4)
    # read q + x1 + x2: (64, 4) 1 + 0.85 = 1.85, (4, 2) 0.5 + 0.325 = 0.825, (256, 2) 0 + 0.925 = 0.925
    assert DialTuner(predictor=model).suggest(_context("read")) == _config(64, 4)
    # equal p: q = 1 for all, so the sizes decide: (256, 2) has the largest x1 + x2
    flat = _Table(lambda c: 0.9 if (c["max_pages_per_rpc"], c["max_rpcs_in_flight"]) in trusted else 0.1)
    assert DialTuner(predictor=flat).suggest(_context("write")) == _config(1024, 64)
    assert DialTuner(predictor=flat).suggest(_context("read")) == _config(1024, 64)


def test_released_scores_take_a_lone_trusted_configuration() -> None:
    model = _Table(lambda c: 0.85 if (c["max_pages_per_rpc"], c["max_rpcs_in_flight"]) == (2, 1) else 0.3)
    assert DialTuner(predictor=model).suggest(_context("write")) == _config(2, 1)
    assert DialTuner(predictor=model).suggest(_context("read")) == _config(2, 1)


def _write_row(config: Config, dirty: float, carried: float, app: float) -> dict[str, float]:
    """A write interval: the OSC's dirty level at its end, bytes its RPCs carried, bytes the mount wrote."""
    return {
        **SyntheticOsc(write=True).metrics(config),
        "cur_dirty_bytes": dirty,
        "ost_write_rpc_bytes_data.samples_sum": carried,
        "llite_stats_write_bytes.samples_sum": app,
    }


def test_writes_the_cache_absorbs_prefer_few_rpcs_in_flight_then_pause() -> None:
    model = _Table(lambda c: 0.9 if c["max_pages_per_rpc"] >= 256 and c["max_rpcs_in_flight"] >= 4 else 0.2)
    tuner = DialTuner(predictor=model)
    mib = 1048576.0
    config = dict(DEFAULT)
    # first interval, a row without x_prev_dirty_bytes (as the dataset's replay gives): the dirty
    # level before it is unknown, so the usual write score (largest sizes)
    first = tuner.suggest(Context(OSC, 0.5, config, BOUNDS, _write_row(config, 100 * mib, 50 * mib, 50 * mib)))
    assert first == _config(1024, 256)
    # the application wrote 400 MiB; 101 MiB entered the cache (200 dirty + 1 sent - 100 before) and
    # the RPCs carried 1 MiB of it: 0.25% < 80%, so fewer RPCs in flight win and the OSC pauses
    row = _write_row(first, 200 * mib, mib, 400 * mib)
    second = tuner.suggest(Context(OSC, 1.0, first, BOUNDS, row))
    assert second == _config(256, 4)  # the smallest trusted in-flight value, then the first in grid order
    calls = len(model.calls)
    for tick in range(5):  # skip_intervals: unchanged, and no model call
        row = _write_row(second, 200 * mib, 100 * mib, 100 * mib)
        assert tuner.suggest(Context(OSC, 1.5 + tick / 2, second, BOUNDS, row)) == second
    assert len(model.calls) == calls
    # then the RPCs carry what the application wrote (100 MiB in, 100 MiB out: 100%): the usual score
    row = _write_row(second, 200 * mib, 100 * mib, 100 * mib)
    assert tuner.suggest(Context(OSC, 4.0, second, BOUNDS, row)) == _config(1024, 256)
    assert len(model.calls) == calls + 1


def test_the_first_interval_is_judged_from_the_dirty_level_the_agent_read_before_it() -> None:
    # The agent's rows carry x_prev_dirty_bytes, read at the probe before the interval, as the
    # released tuner reads it from its previous snapshot: the very first interval can show
    # writes the cache absorbed (docs/results.md, "Random scenarios": the first decision of a
    # run of rewrites went to (1024, 256) and stalled the writers).
    model = _Table(lambda c: 0.9 if c["max_pages_per_rpc"] >= 256 and c["max_rpcs_in_flight"] >= 4 else 0.2)
    mib = 1048576.0
    absorbed = {**_write_row(DEFAULT, 200 * mib, mib, 400 * mib), "x_prev_dirty_bytes": 0.0}
    assert DialTuner(predictor=model).suggest(Context(OSC, 0.5, dict(DEFAULT), BOUNDS, absorbed)) == _config(256, 4)
    carried = {**_write_row(DEFAULT, 10 * mib, 390 * mib, 400 * mib), "x_prev_dirty_bytes": 0.0}
    assert DialTuner(predictor=model).suggest(Context(OSC, 0.5, dict(DEFAULT), BOUNDS, carried)) == _config(1024, 256)
    # NaN (the file could not be read at that probe) falls back to the remembered level: none yet
    unknown = {**_write_row(DEFAULT, 200 * mib, mib, 400 * mib), "x_prev_dirty_bytes": math.nan}
    assert DialTuner(predictor=model).suggest(Context(OSC, 0.5, dict(DEFAULT), BOUNDS, unknown)) == _config(1024, 256)


def test_the_written_share_is_split_over_the_clients_oscs() -> None:
    model = _Table(lambda c: 0.9 if c["max_rpcs_in_flight"] >= 4 else 0.2)
    mib = 1048576.0
    a, b = "fs-OST0000-osc-ffff000000000001", "fs-OST0001-osc-ffff000000000001"
    other = "fs-OST0000-osc-ffff000000000002"  # another mount: its cache does not count
    tuner = DialTuner(predictor=model)
    start = [Context(name, 0.5, dict(DEFAULT), BOUNDS, _write_row(DEFAULT, 0.0, 0.0, 0.0)) for name in (a, b, other)]
    tuner.suggest_batch(start)
    # 300 MiB written by the mount; a took 100 MiB into its cache and sent 90 (90% of its share),
    # b took 200 MiB and sent 100 (50% of its share: absorbed); the other mount sent everything
    rows = [
        _write_row(DEFAULT, 10 * mib, 90 * mib, 300 * mib),
        _write_row(DEFAULT, 100 * mib, 100 * mib, 300 * mib),
        _write_row(DEFAULT, 0.0, 5000 * mib, 5000 * mib),
    ]
    names = (a, b, other)
    got = tuner.suggest_batch([Context(n, 1.0, dict(DEFAULT), BOUNDS, r) for n, r in zip(names, rows, strict=True)])
    assert got[0]["max_rpcs_in_flight"] == 256
    assert got[1]["max_rpcs_in_flight"] == 4
    assert got[2]["max_rpcs_in_flight"] == 256


def test_an_osc_that_only_drains_while_the_mount_writes_reads_as_absorbed() -> None:
    # As the released tuner: no new data entered a's cache (its dirty level fell by what it sent),
    # so its estimate is "0%" while the mount wrote through b; docs/results.md (ior-fpp-nocache)
    # measures what this costs and why `dial` keeps it.
    model = _Table(lambda c: 0.9 if c["max_rpcs_in_flight"] >= 4 else 0.2)
    mib = 1048576.0
    a, b = "fs-OST0000-osc-ffff000000000001", "fs-OST0001-osc-ffff000000000001"
    tuner = DialTuner(predictor=model)
    tuner.suggest_batch(
        [
            Context(a, 0.5, dict(DEFAULT), BOUNDS, _write_row(DEFAULT, 300 * mib, 10 * mib, 10 * mib)),
            Context(b, 0.5, dict(DEFAULT), BOUNDS, _write_row(DEFAULT, 0.0, 0.0, 10 * mib)),
        ]
    )
    rows = [
        _write_row(DEFAULT, 200 * mib, 100 * mib, 100 * mib),  # a: 300 - 200 dirty = the 100 sent
        _write_row(DEFAULT, 0.0, 100 * mib, 100 * mib),  # b: the mount's 100 MiB, all sent
    ]
    got = tuner.suggest_batch([Context(n, 1.0, dict(DEFAULT), BOUNDS, r) for n, r in zip((a, b), rows, strict=True)])
    assert got[0]["max_rpcs_in_flight"] == 4
    assert got[1]["max_rpcs_in_flight"] == 256


def test_client_of_names_the_mount() -> None:
    assert _client_of("lustre-OST0003-osc-ffff8b06d2edc000") == "lustre-ffff8b06d2edc000"
    assert _client_of("scratch-OST0010-osc-ffff8b06d2edc000") == "scratch-ffff8b06d2edc000"
    assert _client_of("odd-name") == "odd-name"  # not an OSC's name (a replayed series' key): its own group


def test_paper_scores_ignore_absorbed_writes() -> None:
    model = _Table(lambda c: 0.9 if c["max_rpcs_in_flight"] >= 4 else 0.2)
    tuner = DialTuner(score="paper", predictor=model)
    mib = 1048576.0
    tuner.suggest(Context(OSC, 0.5, dict(DEFAULT), BOUNDS, _write_row(DEFAULT, 0.0, 0.0, 0.0)))
    row = _write_row(DEFAULT, 200 * mib, mib, 400 * mib)
    assert tuner.suggest(Context(OSC, 1.0, dict(DEFAULT), BOUNDS, row)) == _config(1024, 256)


def test_nothing_above_tau_keeps_the_configuration() -> None:
    tuner = DialTuner(predictor=_Table(lambda c: 0.8))  # p must exceed tau, not equal it
    current = {"max_pages_per_rpc": 32, "max_rpcs_in_flight": 16}
    assert tuner.suggest(_context("read", current)) == current


def test_bounds_are_respected() -> None:
    tuner = DialTuner(predictor=_Table(lambda c: 0.9))
    bounds = {"max_pages_per_rpc": (1, 256), "max_rpcs_in_flight": (2, 64)}
    assert tuner.suggest(_context("write", bounds=bounds)) == {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 64}


def test_an_idle_osc_reverts_to_its_original_values() -> None:
    tuner = DialTuner(predictor=_Table(lambda c: 0.9))
    first = tuner.suggest(_context("read"))
    assert first != DEFAULT
    assert tuner.suggest(_context(None, first)) == DEFAULT
    assert tuner.suggest(Context(OSC, 0.0, dict(first), BOUNDS, {})) == first  # no interval yet: unchanged


def test_idle_keep_holds_the_configuration_and_skips_the_next_busy_interval() -> None:
    # the released tuner's rule, opt-in: an idle OSC keeps what it had, and the interval after
    # an idle one (partly idle) is not judged
    tuner = DialTuner(idle="keep", predictor=_Table(lambda c: 0.9 if c["max_rpcs_in_flight"] <= 32 else 0.2))
    first = tuner.suggest(_context("read"))
    assert first == _config(1024, 32)
    assert tuner.suggest(_context(None, first)) == first
    everything = _Table(lambda c: 0.9)  # from now on the model trusts (1024, 256) too
    restored = DialTuner(idle="keep", predictor=everything)
    restored.load_state_dict(json.loads(json.dumps(tuner.state_dict())))
    tuner.predictor = everything
    for each in (tuner, restored):
        assert each.suggest(_context("read", first)) == first  # right after idle: not judged
        assert each.suggest(_context("read", first)) == _config(1024, 256)  # judged again


def test_one_model_call_per_operation_for_all_oscs() -> None:
    model = _Table(lambda c: 0.9 if c["max_rpcs_in_flight"] <= 8 else 0.2)
    tuner = DialTuner(predictor=model)
    contexts = [
        Context(f"fs-OST{i:04x}-osc-ffff000000000001", 0.0, dict(DEFAULT), BOUNDS, _context(op).metrics)
        for i, op in enumerate(["read", "write", "read", None, "write", "read"])
    ]
    batch = tuner.suggest_batch(contexts)
    assert sorted(model.calls) == [("read", 3), ("write", 2)]
    assert batch == [DialTuner(predictor=model).suggest(c) for c in contexts]


def test_nan_features_reach_the_model_as_nan() -> None:
    seen: list[pd.DataFrame] = []

    class Spy(_Table):
        def predict_proba(self, op: str, features: pd.DataFrame, candidates: Sequence[Config]) -> np.ndarray:
            seen.append(features)
            return super().predict_proba(op, features, candidates)

    metrics = {**_context("read").metrics, "avg_waittime": math.nan}
    DialTuner(predictor=Spy(lambda c: 0.0)).suggest(Context(OSC, 0.0, dict(DEFAULT), BOUNDS, metrics))
    assert math.isnan(seen[0]["avg_waittime"].iloc[0])
    assert seen[0]["cur_grant_bytes"].isna().all()  # a column the row lacks


def _read_at(config: Config, mbps: float) -> Context:
    """A busy read interval of OSC under ``config`` that moved ``mbps``."""
    return Context(OSC, 0.0, dict(config), BOUNDS, SyntheticOsc(peak_mbps=mbps, best=config).metrics(config))


def test_the_guard_takes_back_a_change_that_lost_and_bans_it() -> None:
    # the model trusts (1024, 256) most, then (512, 256): the read score prefers the larger RPCs
    model = _Table(lambda c: 0.9 if c["max_rpcs_in_flight"] == 256 and c["max_pages_per_rpc"] >= 512 else 0.1)
    tuner = DialTuner(predictor=model, guard=0.2, guard_intervals=3)
    big, next_best = _config(1024, 256), _config(512, 256)
    assert tuner.suggest(_read_at(DEFAULT, 500.0)) == big
    # under (1024, 256) the OSC moved 350 MB/s, 30% less than under the default: back to it
    assert tuner.suggest(_read_at(big, 350.0)) == DEFAULT
    # (1024, 256) is banned on this OSC, so the model's next choice is taken
    assert tuner.suggest(_read_at(DEFAULT, 500.0)) == next_best
    # a change within the guard's margin is kept (19% less)
    assert tuner.suggest(_read_at(next_best, 405.0)) == next_best
    # the ban has run out after three intervals
    assert tuner.suggest(_read_at(next_best, 405.0)) == big


def test_without_the_guard_a_change_that_lost_stays() -> None:
    tuner = DialTuner(predictor=_Table(lambda c: 0.9 if c == _config(1024, 256) else 0.1))
    assert tuner.suggest(_read_at(DEFAULT, 500.0)) == _config(1024, 256)
    assert tuner.suggest(_read_at(_config(1024, 256), 100.0)) == _config(1024, 256)


def test_the_guard_does_not_compare_across_an_idle_interval_or_another_operation() -> None:
    big = _config(1024, 256)
    tuner = DialTuner(predictor=_Table(lambda c: 0.9 if c == big else 0.1), guard=0.2)
    assert tuner.suggest(_read_at(DEFAULT, 500.0)) == big
    assert tuner.suggest(_context(None, big)) == DEFAULT  # idle: originals, and the history goes
    assert tuner.suggest(_read_at(DEFAULT, 500.0)) == big
    write = Context(OSC, 0.0, dict(big), BOUNDS, SyntheticOsc(peak_mbps=10.0, write=True).metrics(big))
    assert tuner.suggest(write) == big  # a write interval after a read one: not judged


def test_the_guard_can_ban_an_original_off_the_grid() -> None:
    original, big = _config(1024, 10), _config(1024, 256)  # 10 in flight is not a dial99 value
    tuner = DialTuner(predictor=_Table(lambda c: 0.9 if c == big else 0.1), guard=0.2)
    assert tuner.suggest(_read_at(original, 500.0)) == big
    assert tuner.suggest(_read_at(big, 600.0)) == big
    assert tuner.suggest(_read_at(original, 100.0)) == big  # the original lost against big: banned
    assert tuner.suggest(_read_at(big, 600.0)) == big  # the model's choice, with the original banned


def test_the_guard_state_survives_a_restart() -> None:
    big = _config(1024, 256)
    model = _Table(lambda c: 0.9 if c == big else 0.1)
    tuner = DialTuner(predictor=model, guard=0.2)
    tuner.suggest(_read_at(DEFAULT, 500.0))
    assert tuner.suggest(_read_at(big, 100.0)) == DEFAULT
    state = json.loads(json.dumps(tuner.state_dict()))
    restarted = DialTuner(predictor=model, guard=0.2)
    restarted.load_state_dict(state)
    assert restarted.state_dict() == state
    assert restarted.suggest(_read_at(DEFAULT, 500.0)) == DEFAULT  # big is still banned
    restarted.forget(OSC)
    assert restarted.state_dict()["banned"] == {}
    assert restarted.state_dict()["last"] == {}


@pytest.mark.parametrize(
    "options",
    [
        {"tau": 1.0},
        {"guard": 1.0},
        {"guard": -0.1},
        {"guard_intervals": 0},
        {"guard_intervals": 1.5},
        {"alpha": -1.0},
        {"beta": -0.5},
        {"alpha": float("nan")},  # every score would be NaN
        {"beta": float("inf")},
        {"score": "best"},
        {"xfer_threshold": 120.0},
        {"skip_intervals": -1},
        {"skip_intervals": 2.5},
        {"idle": "forget"},
    ],
)
def test_bad_options(options: dict[str, object]) -> None:
    with pytest.raises(UserError):
        DialTuner(predictor=_Table(lambda c: 0.5), **options)  # type: ignore[arg-type]


def test_the_predictor_is_no_command_line_option() -> None:
    """`predictor` takes an object, for code: as text it would leave DIAL without a model."""
    with pytest.raises(UserError, match="unknown option 'predictor'") as err:
        make_tuner("dial", {"predictor": "x"})
    assert "predictor" not in str(err.value).split("options:")[1]


@pytest.mark.parametrize(
    ("score", "guard", "idle"),
    [
        ("released", 0.0, "original"),
        ("paper", 0.0, "original"),
        ("released", 0.2, "original"),
        ("released", 0.0, "keep"),
    ],
)
def test_dial_with_a_stand_in_model_conforms(score: str, guard: float, idle: str) -> None:
    check_tuner(
        lambda: DialTuner(
            score=score,
            guard=guard,
            idle=idle,
            predictor=_Table(lambda c: 0.9 if c["max_rpcs_in_flight"] <= 32 else 0.3),
        )
    )


class _Learned(_Table):
    """A stand-in model whose metadata says it learned from intervals of 1.0-1.1 s."""

    metadata: ClassVar[dict[str, object]] = {"training": {"interval_s": {"p5": 1.0, "p95": 1.1}}}


def test_a_probe_interval_outside_those_the_model_learned_from_is_named() -> None:
    shipped = DialTuner()  # DIAL's data: probes every 0.5 s (0.51-0.64 s recorded)
    assert shipped.interval_warning(0.5) is None
    assert shipped.interval_warning(0.7) is None
    for seconds in (0.25, 1.0, 2.0):
        message = shipped.interval_warning(seconds)
        assert message is not None
        assert f"every {seconds:g} s" in message
        assert "probe every 0.5 s" in message
    own = DialTuner(predictor=_Learned(lambda c: 0.5))  # a model trained on other data says so itself
    assert own.interval_warning(1.0) is None
    assert own.interval_warning(0.5) is not None
