"""DIAL's Conditional Score Greedy (Algorithm 1) with stand-in models."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pytest

from pfstune.errors import UserError
from pfstune.testing.tuners import BOUNDS, DEFAULT, SyntheticOsc, check_tuner
from pfstune.tuners._base import Config, Context
from pfstune.tuners.dial import DIAL99, DialTuner

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


def test_write_score_trades_probability_for_size() -> None:
    trusted = {(64, 4): 0.95, (256, 2): 0.93, (1024, 64): 0.5}
    model = _Table(lambda c: trusted.get((c["max_pages_per_rpc"], c["max_rpcs_in_flight"]), 0.1))
    # normalised log2: 64 pages -> 0.6, 256 -> 0.8; 4 in flight -> 0.25, 2 -> 0.125
    # beta = 1: (64, 4) 0.95 * 1.85 = 1.7575 < (256, 2) 0.93 * 1.925 = 1.790
    assert DialTuner(predictor=model).suggest(_context("write")) == {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 2}
    # beta = 0: the score is p alone, so the most trusted configuration wins
    assert DialTuner(beta=0.0, predictor=model).suggest(_context("write")) == {
        "max_pages_per_rpc": 64,
        "max_rpcs_in_flight": 4,
    }
    # (1024, 64) is the largest but not trusted (p <= tau): never chosen


def test_read_score_adds_the_rpcs_in_flight_term() -> None:
    trusted = {(1024, 1): 0.99, (16, 256): 0.81}
    model = _Table(lambda c: trusted.get((c["max_pages_per_rpc"], c["max_rpcs_in_flight"]), 0.0))
    # read: (1024, 1): 0.99 * 2 + 0 = 1.98; (16, 256): 0.81 * 1.4 + 1 = 2.134
    assert DialTuner(predictor=model).suggest(_context("read")) == {"max_pages_per_rpc": 16, "max_rpcs_in_flight": 256}
    # write: (1024, 1): 0.99 * 2 = 1.98; (16, 256): 0.81 * 2.4 = 1.944
    assert DialTuner(predictor=model).suggest(_context("write")) == {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 1}


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


@pytest.mark.parametrize("options", [{"tau": 1.0}, {"alpha": -1.0}, {"beta": -0.5}])
def test_bad_options(options: dict[str, float]) -> None:
    with pytest.raises(UserError):
        DialTuner(predictor=_Table(lambda c: 0.5), **options)  # type: ignore[arg-type]


def test_dial_with_a_stand_in_model_conforms() -> None:
    check_tuner(lambda: DialTuner(predictor=_Table(lambda c: 0.9 if c["max_rpcs_in_flight"] <= 32 else 0.3)))
