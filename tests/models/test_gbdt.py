"""The LightGBM model: conformance, its saved files, metadata validation, and the model shipped in the package."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pfstune.datasets import file_sha256
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS
from pfstune.models import DEFAULT_MODEL_DIR, DIAL99, MODELS, GBDTModel, grid_candidates, load_model
from pfstune.models.evaluation import calibration, precision_at, roc_auc
from pfstune.models.gbdt import CANDIDATE_FEATURES
from pfstune.testing.models import check_model, synthetic_pairs
from tests.conftest import SHARED

DEV = SHARED / "data" / "dial-lustre" / "dev.parquet"


def _small(kind: str) -> Callable[[], object]:
    return {"gbdt": lambda: GBDTModel(num_boost_round=40)}[kind]


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_model_conforms(kind: str) -> None:
    check_model(_small(kind))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[GBDTModel, Path]:
    model = GBDTModel(num_boost_round=30)
    model.fit(synthetic_pairs(3000), provenance={"data": [{"name": "x.parquet", "sha256": "0" * 64, "rows": 3000}]})
    directory = tmp_path_factory.mktemp("model") / "m"
    model.save(directory)
    return model, directory


def test_saved_files_are_lightgbm_text_and_json(saved: tuple[GBDTModel, Path]) -> None:
    _, directory = saved
    assert sorted(p.name for p in directory.iterdir()) == ["model.json", "read.txt", "write.txt"]
    assert not list(directory.rglob("*.pkl"))
    meta = json.loads((directory / "model.json").read_text(encoding="utf-8"))
    for op in ("read", "write"):
        text = (directory / f"{op}.txt").read_text(encoding="utf-8")
        assert text.startswith("tree\nversion=v4\n")
        names = next(line for line in text.splitlines() if line.startswith("feature_names="))
        assert names.removeprefix("feature_names=").split() == [*FEATURE_COLUMNS, *CANDIDATE_FEATURES]
        assert meta["sha256"][f"{op}.txt"] == file_sha256(directory / f"{op}.txt")
    assert meta["kind"] == "gbdt"
    assert meta["ops"] == ["read", "write"]
    assert meta["features"] == list(FEATURE_COLUMNS)
    assert meta["candidate_features"] == list(CANDIDATE_FEATURES)
    assert meta["grid"]["max_pages_per_rpc"] == DIAL99["max_pages_per_rpc"]
    assert meta["grid"]["max_rpcs_in_flight"] == DIAL99["max_rpcs_in_flight"]
    assert meta["label"]["epsilon"] == 0.15
    assert set(meta["versions"]) >= {"pfstune", "lightgbm"}
    assert meta["lightgbm"]["params"]["objective"] == "binary"
    training = meta["training"]
    assert training["data"] == [{"name": "x.parquet", "sha256": "0" * 64, "rows": 3000}]
    assert training["pairs"]["read"] + training["pairs"]["write"] == 3000
    assert training["date"].endswith("+00:00")


def test_round_trip_identical(saved: tuple[GBDTModel, Path]) -> None:
    model, directory = saved
    loaded = load_model(directory)
    pairs = synthetic_pairs(500, seed=9)
    assert np.array_equal(model.predict_pairs(pairs), loaded.predict_pairs(pairs))
    assert np.array_equal(
        model.predict_proba("write", pairs[list(FEATURE_COLUMNS)], grid_candidates()),
        loaded.predict_proba("write", pairs[list(FEATURE_COLUMNS)], grid_candidates()),
    )


def _edit(directory: Path, change: Callable[[dict[str, object]], None]) -> None:
    meta_file = directory / "model.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    change(meta)
    meta_file.write_text(json.dumps(meta), encoding="utf-8")


def _swap_features(meta: dict[str, object]) -> None:
    features = meta["features"]
    assert isinstance(features, list)
    features[0], features[1] = features[1], features[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_swap_features, "feature names differ"),
        (lambda m: m.update(features=["bogus", *m["features"][1:]]), "does not compute: bogus"),  # type: ignore[index]
        (lambda m: m.update(candidate_features=["c"]), "unknown candidate encoding"),
        (lambda m: m.update(kind="mlp"), "unknown model kind 'mlp'"),
        (lambda m: m.update(format_version=99), "format_version 99"),
        (lambda m: m.update(format_version=0), "format_version 0"),
        (lambda m: m.update(format_version=True), "format_version True"),
        (lambda m: m.update(kind=["gbdt"]), r"unknown model kind \['gbdt'\]"),
        (lambda m: m.update(sha256=["read.txt"]), "sha256 must map"),
        (lambda m: m.update(lightgbm={"params": [1]}), "lightgbm must hold"),
        (lambda m: m.update(lightgbm={"num_boost_round": "x"}), "lightgbm must hold"),
        (lambda m: m.update(format="other"), "not a pfstune model"),
        (lambda m: m.update(ops=["read", "append"]), "ops must be"),
        (lambda m: m.update(grid={"max_pages_per_rpc": [1]}), "grid.max_rpcs_in_flight"),
        (lambda m: m.pop("label"), "label definition"),
        (lambda m: m["sha256"].update({"read.txt": "0" * 64}), "does not match the SHA-256"),  # type: ignore[attr-defined]
    ],
)
def test_metadata_validation(
    saved: tuple[GBDTModel, Path], tmp_path: Path, change: Callable[[dict[str, object]], None], message: str
) -> None:
    directory = tmp_path / "m"
    shutil.copytree(saved[1], directory)
    _edit(directory, change)
    with pytest.raises(UserError, match=message):
        load_model(directory)


def test_load_errors(saved: tuple[GBDTModel, Path], tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such model directory"):
        load_model(tmp_path / "absent")
    with pytest.raises(UserError, match=r"no model\.json"):
        load_model(tmp_path)
    directory = tmp_path / "m"
    shutil.copytree(saved[1], directory)
    (directory / "write.txt").unlink()
    with pytest.raises(UserError, match=r"write\.txt is missing"):
        load_model(directory)
    shutil.copy(saved[1] / "write.txt", directory / "write.txt")
    (directory / "read.txt").write_text("garbage", encoding="utf-8")
    _edit(directory, lambda m: m["sha256"].update({"read.txt": file_sha256(directory / "read.txt")}))  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="not a LightGBM text model"):
        load_model(directory)


def test_predict_proba_checks_its_inputs(saved: tuple[GBDTModel, Path]) -> None:
    model, _ = saved
    features = synthetic_pairs(3)[list(FEATURE_COLUMNS)]
    with pytest.raises(ValueError, match="features lack the columns avg_waittime"):
        model.predict_proba("read", features.drop(columns=["avg_waittime"]), grid_candidates())
    with pytest.raises(ValueError, match="lacks 'max_rpcs_in_flight'"):
        model.predict_proba("read", features, [{"max_pages_per_rpc": 4}])
    with pytest.raises(ValueError, match="positive"):
        model.predict_proba("read", features, [{"max_pages_per_rpc": 0, "max_rpcs_in_flight": 1}])
    assert model.predict_proba("read", features, []).shape == (3, 0)
    with pytest.raises(ValueError, match="fitted nor loaded"):
        GBDTModel().predict_proba("read", features, grid_candidates())


def test_candidate_change_features() -> None:
    """The log2 change columns follow the current configuration of each row."""
    model = GBDTModel()
    pairs = synthetic_pairs(2)
    design = model._pair_design(pairs)
    current = pairs["osc_rpc_configuration_current.mppr_value"].to_numpy()
    candidate = pairs["candidate_max_pages_per_rpc"].to_numpy()
    column = model.design_columns.index("candidate_log2_mppr_change")
    assert np.allclose(design[:, column], np.log2(candidate) - np.log2(current))


def test_metrics() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 500)
    scores = np.round(rng.random(500) + 0.3 * labels, 2)  # ties on purpose
    # Brute-force definition: P(s+ > s-) + 0.5 P(s+ = s-).
    pos, neg = scores[labels == 1][:, None], scores[labels == 0][None, :]
    expected = ((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size)
    assert roc_auc(labels, scores) == pytest.approx(expected, abs=1e-12)
    assert math.isnan(roc_auc(np.ones(3), np.arange(3.0)))
    assert math.isnan(precision_at(labels, np.zeros(500), 0.8))
    rows = calibration(np.array([0, 1, 1, 0]), np.array([0.05, 0.95, 0.85, 0.15]))
    assert rows == [[0.05, 0.0, 1], [0.15, 0.0, 1], [0.85, 1.0, 1], [0.95, 1.0, 1]]


# --------------------------------------------------------------------------------------------
# The model shipped in the package
# --------------------------------------------------------------------------------------------


def test_default_model_loads_and_predicts() -> None:
    model = load_model("default")
    assert isinstance(model, GBDTModel)
    assert model.ops == ("read", "write")
    assert sorted(p.name for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file()) == ["model.json", "read.txt", "write.txt"]
    rows = pd.DataFrame([dict.fromkeys(FEATURE_COLUMNS, math.nan)] * 3)
    for op in ("read", "write"):
        p = model.predict_proba(op, rows, grid_candidates())
        assert p.shape == (3, 99)
        assert np.isfinite(p).all()
        assert ((p >= 0) & (p <= 1)).all()
    sources = model.metadata["training"]["sources"]
    assert list(sources) == ["real"]
    assert sources["real"] > 100_000


@pytest.mark.skipif(not DEV.is_file(), reason=f"{DEV} is not there")
def test_default_model_was_trained_on_this_dev_parquet() -> None:
    data = load_model("default").metadata["training"]["data"]
    assert [d["name"] for d in data] == ["dev.parquet"]
    assert data[0]["sha256"] == file_sha256(DEV)


def test_default_model_ships_in_the_wheel() -> None:
    """maturin puts every file of python/pfstune into the wheel except those git ignores.

    The files are the checkout's (the installed package's lie outside it), named as the
    installed model has them.
    """
    repo = Path(__file__).resolve().parents[2]
    source = repo / "python" / "pfstune" / "models" / "default"
    files = [str(source / p.name) for p in DEFAULT_MODEL_DIR.iterdir()]
    assert files, "the installed default model has no files"
    try:
        inside = subprocess.run(["git", "-C", str(repo), "rev-parse"], capture_output=True, check=False)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if inside.returncode != 0:
        pytest.skip("not a git checkout")
    result = subprocess.run(
        ["git", "-C", str(repo), "check-ignore", *files], capture_output=True, text=True, check=False
    )
    assert result.returncode in (0, 1), result.stderr  # 0: some ignored, 1: none
    assert result.stdout == "", f"git ignores files of the default model: {result.stdout}"


@pytest.mark.parametrize("name", ["pfstune.models._base", "pfstune.models.evaluation"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0


def test_a_model_records_the_probe_intervals_it_learned_from() -> None:
    pairs = synthetic_pairs(2000)
    pairs["actual_record_duration"] = np.linspace(0.9, 1.3, len(pairs))
    pairs.loc[pairs.index[:10], "actual_record_duration"] = 0.0  # an idle interval says nothing
    model = GBDTModel(num_boost_round=5)
    model.fit(pairs)
    busy = pairs["actual_record_duration"].to_numpy()[10:]
    assert model.metadata["training"]["interval_s"] == {
        "p5": pytest.approx(np.percentile(busy, 5), abs=1e-4),
        "p95": pytest.approx(np.percentile(busy, 95), abs=1e-4),
    }
