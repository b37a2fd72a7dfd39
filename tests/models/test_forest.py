"""CandidateForest gives LightGBM's scores of every (row, candidate) line, or declines the model."""

from __future__ import annotations

import math
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from pfstune.features import FEATURE_COLUMNS
from pfstune.models import GBDTModel, grid_candidates, load_model
from pfstune.models.forest import CandidateForest
from pfstune.models.gbdt import _CHANGE_COLUMNS, _candidate_array, _candidate_block


def _design(rows: np.ndarray, candidates: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The (rows x candidates) lines LightGBM would score: row i then candidates[group[i], j]."""
    count = candidates.shape[1]
    return np.concatenate([np.repeat(rows, count, axis=0), candidates[group].reshape(-1, candidates.shape[2])], axis=1)


def _awkward(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values with NaN, exact zeros, LightGBM's near-zeros (|x| <= 1e-35 reads as 0) and negatives."""
    out = values.copy()
    for fraction, value in ((0.05, math.nan), (0.05, 0.0), (0.02, 1e-40), (0.02, -1e-40)):
        out[rng.random(out.shape) < fraction] = value
    negative = rng.random(out.shape) < 0.02
    out[negative] = -np.abs(out[negative])
    return out


@pytest.fixture(scope="module")
def shipped() -> GBDTModel:
    model = load_model("default")
    assert isinstance(model, GBDTModel)
    return model


def _shipped_rows(model: GBDTModel, n: int, seed: int) -> np.ndarray:
    """Rows spread over the trees' thresholds: each column drawn from the model's own split points."""
    rng = np.random.default_rng(seed)
    booster = model._boosters["write"]
    dump = booster.dump_model()
    thresholds: dict[int, list[float]] = {}

    def walk(node: dict[str, Any]) -> None:
        if "split_feature" in node:
            thresholds.setdefault(node["split_feature"], []).append(node["threshold"])
            walk(node["left_child"])
            walk(node["right_child"])

    for tree in dump["tree_info"]:
        walk(tree["tree_structure"])
    rows = rng.lognormal(3, 4, (n, len(model.features)))
    for column, cuts in thresholds.items():
        if column < len(model.features):
            picks = rng.choice(np.array(cuts), n)
            rows[:, column] = picks * rng.choice([0.999, 1.0, 1.001], n)  # on and beside the thresholds
    return _awkward(rows, rng)


@pytest.mark.parametrize("op", ["read", "write"])
def test_shipped_model_bit_for_bit(shipped: GBDTModel, op: str) -> None:
    """Raw scores equal LightGBM's exactly, probabilities to the last bits, over many groups."""
    rows = _shipped_rows(shipped, 300, seed=1 if op == "read" else 2)
    rng = np.random.default_rng(3)
    candidate = _candidate_array(grid_candidates())
    # Current configurations: on the grid, off it, unknown and zero (NaN changes).
    current = np.stack([2.0 ** rng.integers(0, 11, 6), 2.0 ** rng.integers(0, 9, 6)], axis=1)
    current = np.concatenate([current, [[3.0, 5.0], [math.nan, 8.0], [0.0, 0.0]]])
    candidates = np.stack([_candidate_block(candidate, np.broadcast_to(c, candidate.shape)) for c in current])
    group = rng.integers(0, len(current), len(rows))
    group[:100] = 0  # one large group (refreshed whole) and many small ones (refreshed where open)
    forest = CandidateForest.from_booster(shipped._boosters[op], len(shipped.features), _CHANGE_COLUMNS)
    assert forest is not None
    booster = shipped._boosters[op]
    design = _design(rows, candidates, group)
    expected_raw = booster.predict(design, raw_score=True, num_threads=1).reshape(len(rows), -1)
    assert np.array_equal(forest.raw_scores(rows, candidates, group), expected_raw)
    expected = booster.predict(design, num_threads=1).reshape(len(rows), -1)
    assert np.abs(forest.predict_proba(rows, candidates, group) - expected).max() <= 1e-15
    # The candidate side is kept between calls: other candidates, then these again, other rows.
    fewer = candidates[:2, ::5]
    few_rows, few_groups = rows[:40], group[:40] % 2
    other = booster.predict(_design(few_rows, fewer, few_groups), raw_score=True, num_threads=1)
    assert np.array_equal(forest.raw_scores(few_rows, fewer, few_groups), other.reshape(40, -1))
    assert np.array_equal(forest.raw_scores(rows[::-1], candidates, group[::-1]), expected_raw[::-1])


def test_gbdt_predict_proba_uses_the_forest(shipped: GBDTModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """GBDTModel.predict_proba (forest) against the full LightGBM design, with mixed current configurations."""

    def fallback(*_: object) -> None:
        pytest.fail("predict_proba fell back to LightGBM's design instead of the forest")

    monkeypatch.setattr(shipped, "_predict", fallback)
    rows = _shipped_rows(shipped, 50, seed=4)
    current = shipped._current_index
    rows[:, current[0]] = np.tile([1.0, 256.0, 1024.0, math.nan, 12.0], 10)
    rows[:, current[1]] = np.tile([8.0, 8.0, 1.0, 2.0, -1.0], 10)
    features = pd.DataFrame(rows, columns=list(FEATURE_COLUMNS))
    candidates = grid_candidates()
    got = shipped.predict_proba("write", features, candidates)
    assert shipped._forests["write"] is not None
    candidate = _candidate_array(candidates)
    design = np.concatenate(
        [
            np.repeat(rows, len(candidate), axis=0),
            _candidate_block(np.tile(candidate, (len(rows), 1)), np.repeat(rows[:, current], len(candidate), axis=0)),
        ],
        axis=1,
    )
    expected = shipped._boosters["write"].predict(design, num_threads=1).reshape(len(rows), -1)
    assert np.abs(got - expected).max() <= 1e-15


def _train(params: dict[str, Any], x: np.ndarray, y: np.ndarray, **dataset: Any) -> lgb.Booster:
    base = {"objective": "binary", "verbosity": -1, "num_threads": 1, "min_data_in_leaf": 5, "seed": 0}
    return lgb.train({**base, **params}, lgb.Dataset(x, label=y, **dataset), num_boost_round=25)


def _toy(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """6 row columns and 3 candidate columns (the last two depend on the group), with a label using both."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 9))
    x[rng.random(x.shape) < 0.15] = 0.0
    x[rng.random(x.shape) < 0.15] = math.nan
    y = np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 6]) * np.nan_to_num(x[:, 1]) + np.nan_to_num(x[:, 7]) > 0.3
    return x, y.astype(float)


@pytest.mark.parametrize(
    "params",
    [
        {},  # missing type NaN where the data had NaN
        {"zero_as_missing": True},  # missing type Zero
        {"use_missing": False},  # missing type None
        {"num_leaves": 63, "min_data_in_leaf": 2},  # 62 splits: 64-bit decisions
        {"objective": "binary", "sigmoid": 0.7},
    ],
)
def test_missing_value_types_and_widths(params: dict[str, Any]) -> None:
    x, y = _toy(5)
    booster = _train(params, x, y)
    forest = CandidateForest.from_booster(booster, 6, group_columns=(1, 2))
    assert forest is not None
    rng = np.random.default_rng(6)
    rows = _awkward(_toy(7, 40)[0][:, :6], rng)
    candidates = np.stack([_awkward(rng.normal(size=(11, 3)), rng) for _ in range(4)])
    candidates[:, :, 0] = candidates[0, :, 0]  # the non-group column is the same in every group
    group = rng.integers(0, 4, len(rows))
    design = _design(rows, candidates, group)
    expected_raw = booster.predict(design, raw_score=True, num_threads=1).reshape(len(rows), -1)
    assert np.array_equal(forest.raw_scores(rows, candidates, group), expected_raw)
    expected = booster.predict(design, num_threads=1).reshape(len(rows), -1)
    assert np.abs(forest.predict_proba(rows, candidates, group) - expected).max() <= 1e-15
    assert forest.predict_proba(rows[:0], candidates, group[:0]).shape == (0, 11)


@pytest.mark.parametrize("params", [{}, {"zero_as_missing": True}, {"use_missing": False}, {"num_leaves": 63}])
def test_the_extension_opens_the_leaves_numpy_opens(params: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The Rust LeafFinder and the numpy arrays give the same sparse A, entry for entry."""
    from pfstune.models import forest as forest_module

    x, y = _toy(9)
    booster = _train({"min_data_in_leaf": 2, **params}, x, y)
    rng = np.random.default_rng(10)
    rows = _awkward(np.concatenate([_toy(11, 200)[0][:, :6], rng.normal(size=(50, 6)) * 1e3]), rng)
    fast = CandidateForest.from_booster(booster, 6, group_columns=(1, 2))
    assert fast is not None
    a = fast._open_leaves(rows)
    assert fast._finder is not None  # the extension did it
    monkeypatch.setattr(forest_module, "LeafFinder", None)
    slow = CandidateForest.from_booster(booster, 6, group_columns=(1, 2))
    assert slow is not None
    b = slow._open_leaves(rows)
    assert slow._finder is None
    assert np.array_equal(a.indptr, b.indptr)
    assert np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.data, b.data)


def test_declines_what_it_does_not_reproduce() -> None:
    x, y = _toy(8)
    categorical = x.copy()
    categorical[:, 2] = np.arange(len(x)) % 7
    declined = [
        _train({}, categorical, np.isin(categorical[:, 2], [1, 4, 5]).astype(float), categorical_feature=[2]),
        _train({"linear_tree": True}, np.nan_to_num(x), y),
        _train({"objective": "regression"}, x, y),
    ]
    for booster in declined:
        assert CandidateForest.from_booster(booster, 6) is None
    assert CandidateForest.from_booster(_train({}, x, y), 9) is None  # no candidate column
    wide = _train({"num_leaves": 80, "min_data_in_leaf": 2}, x, y)
    assert max(tree["num_leaves"] for tree in wide.dump_model()["tree_info"]) > 65
    assert CandidateForest.from_booster(wide, 8) is None  # more than 64 row splits in a tree


def test_gbdt_falls_back_to_lightgbm(shipped: GBDTModel) -> None:
    """A model the forest declines is scored by LightGBM, with the same answers."""
    features = pd.DataFrame(_shipped_rows(shipped, 5, seed=9), columns=list(FEATURE_COLUMNS))
    fast = shipped.predict_proba("read", features, grid_candidates())
    slow = load_model("default")
    assert isinstance(slow, GBDTModel)
    slow._forests["read"] = None
    assert np.abs(slow.predict_proba("read", features, grid_candidates()) - fast).max() <= 1e-15
