"""The conformance suite every :class:`~pfstune.models._base.Model` must pass.

Run it from a test with the model's factory (an unfitted model; small settings keep it fast)::

    from pfstune.testing.models import check_model
    def test_mine() -> None:
        check_model(lambda: MyModel(rounds=40))

The checks train on :func:`synthetic_pairs` (pairs in :func:`pfstune.datasets.make_pairs`'s
layout whose label follows a simple rule of the current and candidate configurations) and raise
AssertionError naming the rule that broke.  They are the interface's contract: metadata that is
JSON with the documented keys, the (rows, candidates) shape of ``predict_proba``, probabilities in
[0, 1] even for all-NaN features, batch answers equal to single-row ones and to
``predict_pairs``, a save/load round trip that changes no prediction, saved files that are not
pickles, one-line UserErrors for a missing or altered model directory, and a model that learns
the synthetic rule (ROC AUC > 0.8, so that swapped or ignored candidate columns are caught).
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from pfstune.datasets import CANDIDATE_COLUMNS, META_COLUMNS, OPS
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS
from pfstune.models._base import CANDIDATE_PARAMS, DIAL99, METADATA_FILE, Model, grid_candidates
from pfstune.models.evaluation import roc_auc

_MPPR = "osc_rpc_configuration_current.mppr_value"
_MRIF = "osc_rpc_configuration_current.mrif_value"
#: Keys every model.json has.
REQUIRED_METADATA = ("kind", "ops", "features", "grid", "label", "versions", "training")
#: First bytes of a pickle stream (protocols 2-5), which no saved model file may start with.
_PICKLE_MAGIC = b"\x80"


def synthetic_pairs(count: int = 4000, seed: int = 0) -> pd.DataFrame:
    """``count`` pairs in make_pairs' layout; label: the candidate is better by a rule of (current, candidate).

    Reads improve when the candidate has more RPCs in flight than the current configuration, writes
    when it has larger RPCs (with 10 % of labels flipped).  Other features are random, some NaN.
    """
    rng = np.random.default_rng(seed)
    mppr_values = np.array(DIAL99["max_pages_per_rpc"], dtype=np.float64)
    mrif_values = np.array(DIAL99["max_rpcs_in_flight"], dtype=np.float64)
    features = rng.lognormal(mean=5.0, sigma=2.0, size=(count, len(FEATURE_COLUMNS)))
    features[rng.random(features.shape) < 0.05] = np.nan
    frame = pd.DataFrame(features, columns=list(FEATURE_COLUMNS))
    frame[_MPPR] = rng.choice(mppr_values, count)
    frame[_MRIF] = rng.choice(mrif_values, count)
    candidate_mppr = rng.choice(mppr_values, count)
    candidate_mrif = rng.choice(mrif_values, count)
    write = rng.random(count) < 0.5
    better = np.where(write, candidate_mppr > frame[_MPPR], candidate_mrif > frame[_MRIF])
    label = better ^ (rng.random(count) < 0.1)
    meta = pd.DataFrame(
        {
            "source": "synthetic",
            "file": "synthetic",
            "workload": np.where(write, "w", "r"),
            "iteration": rng.integers(1, 5, count),
            "osc": "fs-OST0000-osc-ffff000000000001",
            "observation_no": np.arange(count),
            "op": pd.Categorical(np.where(write, "write", "read"), categories=list(OPS)),
            "label": label.astype(np.int8),
            "mbps": frame["x_mbps"],
            "next_mbps": np.nan,
            CANDIDATE_COLUMNS["max_pages_per_rpc"]: candidate_mppr.astype(np.int64),
            CANDIDATE_COLUMNS["max_rpcs_in_flight"]: candidate_mrif.astype(np.int64),
        }
    )
    assert list(meta.columns[: len(META_COLUMNS)]) == list(META_COLUMNS)
    pairs: pd.DataFrame = pd.concat([meta, frame], axis=1)
    return pairs


def _candidates_of(pairs: pd.DataFrame) -> list[dict[str, int]]:
    return [
        {param: int(value) for param, value in zip(CANDIDATE_PARAMS, row, strict=True)}
        for row in pairs[[CANDIDATE_COLUMNS[p] for p in CANDIDATE_PARAMS]].itertuples(index=False)
    ]


def check_model(factory: Callable[[], Model]) -> None:
    """Run every conformance check on models made by ``factory`` (each check fits its own)."""
    model = factory()
    model.fit(synthetic_pairs(), provenance={"data": [{"name": "synthetic"}]})
    for check in (check_metadata, check_predict_shapes, check_batch_agrees, check_learns, check_unknown_op):
        check(model)
    check_save_load(model)
    check_load_errors(model)
    check_fit_errors(factory)


def check_metadata(model: Model) -> None:
    """Metadata is JSON data with the documented keys; both ops; features are pfstune's feature columns."""
    meta = json.loads(json.dumps(model.metadata))
    missing = [key for key in REQUIRED_METADATA if key not in meta]
    assert not missing, f"metadata lacks {missing}"
    assert meta["kind"] == model.kind, f"metadata kind {meta['kind']!r} is not the class's {model.kind!r}"
    assert tuple(model.ops) == OPS, f"a fitted model has ops {model.ops}, expected {OPS}"
    assert set(meta["features"]) <= set(FEATURE_COLUMNS), "metadata lists features pfstune.features does not compute"
    assert isinstance(meta["label"].get("epsilon"), float), "metadata.label.epsilon must be a number"
    for param in CANDIDATE_PARAMS:
        assert meta["grid"].get(param), f"metadata.grid lacks {param}"


def check_predict_shapes(model: Model) -> None:
    """predict_proba is (rows, candidates) of probabilities in [0, 1], also for zero rows and all-NaN rows."""
    pairs = synthetic_pairs(7, seed=1)
    candidates = grid_candidates()
    for op in OPS:
        p = model.predict_proba(op, pairs[list(FEATURE_COLUMNS)], candidates)
        assert isinstance(p, np.ndarray), f"predict_proba returned {type(p).__name__}, not a numpy array"
        assert p.shape == (7, len(candidates)), f"predict_proba shape {p.shape}, expected (7, {len(candidates)})"
        assert np.isfinite(p).all(), "predict_proba gave NaN or infinite values"
        assert ((p >= 0) & (p <= 1)).all(), "probabilities outside [0, 1]"
        empty = model.predict_proba(op, pairs[list(FEATURE_COLUMNS)].iloc[:0], candidates)
        assert empty.shape == (0, len(candidates)), f"zero rows gave shape {empty.shape}"
        nan_row = pd.DataFrame([dict.fromkeys(FEATURE_COLUMNS, math.nan)])
        unknown = model.predict_proba(op, nan_row, candidates[:3])
        assert unknown.shape == (1, 3), f"an all-NaN feature row gave shape {unknown.shape}"
        assert np.isfinite(unknown).all(), "an all-NaN feature row gave NaN probabilities"


def check_batch_agrees(model: Model) -> None:
    """Batch predict_proba equals one-row calls, one-candidate calls and predict_pairs."""
    pairs = synthetic_pairs(12, seed=2)
    features = pairs[list(FEATURE_COLUMNS)]
    candidates = grid_candidates()[::7]
    for op in OPS:
        batch = model.predict_proba(op, features, candidates)
        for row in range(len(pairs)):
            single = model.predict_proba(op, features.iloc[[row]], candidates)
            assert np.allclose(single[0], batch[row], rtol=0, atol=1e-12), f"{op}: row {row} differs alone"
        one = model.predict_proba(op, features, candidates[3:4])
        assert np.allclose(one[:, 0], batch[:, 3], rtol=0, atol=1e-12), f"{op}: one candidate differs from the batch"
    by_pair = model.predict_pairs(pairs)
    assert by_pair.shape == (len(pairs),), f"predict_pairs shape {by_pair.shape}"
    for row, candidate in enumerate(_candidates_of(pairs)):
        op = str(pairs["op"].iloc[row])
        alone = model.predict_proba(op, features.iloc[[row]], [candidate])[0, 0]
        assert abs(alone - by_pair[row]) <= 1e-12, f"predict_pairs disagrees with predict_proba on pair {row}"


def check_learns(model: Model) -> None:
    """The synthetic rule is learnt: ROC AUC > 0.8 on fresh pairs of each op."""
    pairs = synthetic_pairs(2000, seed=3)
    scores = model.predict_pairs(pairs)
    for op in OPS:
        mask = (pairs["op"] == op).to_numpy()
        auc = roc_auc(pairs["label"].to_numpy()[mask], scores[mask])
        assert auc > 0.8, f"{op}: ROC AUC {auc:.3f} on the synthetic rule; are the candidate columns used?"


def check_unknown_op(model: Model) -> None:
    """An op the model does not have is refused, not silently answered."""
    features = synthetic_pairs(2, seed=4)[list(FEATURE_COLUMNS)]
    try:
        model.predict_proba("metadata", features, grid_candidates()[:2])
    except (UserError, ValueError, KeyError):
        return
    raise AssertionError("predict_proba answered for an unknown op")


def check_save_load(model: Model) -> None:
    """save/load changes no prediction; the files are no pickles; model.json parses and names the kind."""
    from pfstune.models import load_model

    pairs = synthetic_pairs(300, seed=5)
    features = pairs[list(FEATURE_COLUMNS)].iloc[:9]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "model"
        model.save(directory)
        files = sorted(p for p in directory.rglob("*") if p.is_file())
        assert files, "save wrote no files"
        for file in files:
            assert file.suffix not in (".pkl", ".pickle", ".joblib"), f"{file.name}: pickle files are forbidden"
            assert not file.read_bytes().startswith(_PICKLE_MAGIC), f"{file.name} looks like a pickle stream"
        meta = json.loads((directory / METADATA_FILE).read_text(encoding="utf-8"))
        assert meta["kind"] == model.kind, "model.json does not name the model's kind"
        for loaded in (type(model).load(directory), load_model(directory)):
            assert type(loaded) is type(model), f"load gave a {type(loaded).__name__}"
            assert np.array_equal(loaded.predict_pairs(pairs), model.predict_pairs(pairs)), "predict_pairs changed"
            for op in OPS:
                before = model.predict_proba(op, features, grid_candidates())
                after = loaded.predict_proba(op, features, grid_candidates())
                assert np.array_equal(before, after), f"{op}: predictions changed after save/load"
            assert json.loads(json.dumps(loaded.metadata)) == meta, "loaded metadata differs from model.json"


def _expect_user_error(directory: Path, what: str) -> None:
    from pfstune.models import load_model

    message = None
    try:
        load_model(directory)
    except UserError as err:
        message = str(err)
    if message is None:
        raise AssertionError(f"{what}: load_model did not raise UserError")
    assert "\n" not in message, f"{what}: the UserError is not one line: {message}"


def check_load_errors(model: Model) -> None:
    """A missing directory, a missing model.json, unknown features and missing model files are UserErrors."""
    with tempfile.TemporaryDirectory() as tmp:
        _expect_user_error(Path(tmp) / "absent", "missing directory")
        directory = Path(tmp) / "model"
        model.save(directory)
        meta_file = directory / METADATA_FILE
        text = meta_file.read_text(encoding="utf-8")
        meta = json.loads(text)
        meta["features"] = ["no_such_feature", *meta["features"][1:]]
        meta_file.write_text(json.dumps(meta), encoding="utf-8")
        _expect_user_error(directory, "a feature pfstune does not compute")
        meta_file.write_text("{not json", encoding="utf-8")
        _expect_user_error(directory, "model.json that is not JSON")
        meta_file.unlink()
        _expect_user_error(directory, "no model.json")
        meta_file.write_text(text, encoding="utf-8")
        for file in directory.iterdir():
            if file.name != METADATA_FILE:
                file.unlink()
        _expect_user_error(directory, "model files missing")


def check_fit_errors(factory: Callable[[], Model]) -> None:
    """Training data without one of the ops, or with one label only, is a UserError."""
    pairs = synthetic_pairs(400, seed=6)
    for bad, what in (
        (pairs[pairs["op"] == "read"], "no write pairs"),
        (pairs.assign(label=np.int8(0)), "one label only"),
    ):
        try:
            factory().fit(bad)
        except UserError:
            continue
        raise AssertionError(f"fit accepted training data with {what}")
