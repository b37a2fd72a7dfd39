"""DIAL's model: two LightGBM gradient-boosted-tree classifiers, one for reads and one for writes.

Each classifier sees one row per (interval t of an OSC, candidate configuration): the features of
t (:data:`pfstune.features.FEATURE_COLUMNS`, which include the configuration in force during t)
followed by :data:`CANDIDATE_FEATURES`, the candidate's ``max_pages_per_rpc`` and
``max_rpcs_in_flight`` and their log2 change from the current configuration (trees split on one
column at a time; the change lets one split say "halve the RPC size" for every current value).
The label is DIAL's: thr(t+1) / thr(t) > 1 + epsilon (:mod:`pfstune.datasets`).

Saved layout (design rule 5, no pickle)::

    MODELDIR/
      read.txt     LightGBM's text model format (Booster.save_model), the read classifier
      write.txt    the write classifier
      model.json   metadata: kind, feature names in order, candidate columns, grid, label
                   definition, ops, LightGBM parameters, versions, SHA-256 of every model file
                   and of every training data file, row counts, training date

:meth:`GBDTModel.load` checks all of it before answering: a missing or altered file, features this
pfstune does not compute or a candidate encoding it does not know give one-line UserErrors.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import lightgbm as lgb
import numpy as np
import numpy.typing as npt
import pandas as pd

import pfstune
from pfstune.datasets import CANDIDATE_COLUMNS, EPSILON, OPS, file_sha256
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS
from pfstune.models._base import CANDIDATE_PARAMS, DIAL99, METADATA_FILE, Config, Model, check_model_directory
from pfstune.models.forest import CandidateForest
from pfstune.outputs import replacing

__all__ = ["CANDIDATE_FEATURES", "DEFAULT_PARAMS", "GBDTModel"]

FloatArray = npt.NDArray[np.float64]

#: Columns appended to the features for the candidate, in order (their computation is code, so a
#: model that lists others cannot be served by this version).
CANDIDATE_FEATURES: tuple[str, ...] = (
    "candidate_max_pages_per_rpc",
    "candidate_max_rpcs_in_flight",
    "candidate_log2_mppr_change",
    "candidate_log2_mrif_change",
)

#: The candidate columns that also depend on the row: through its current configuration.
_CHANGE_COLUMNS = (
    CANDIDATE_FEATURES.index("candidate_log2_mppr_change"),
    CANDIDATE_FEATURES.index("candidate_log2_mrif_change"),
)

#: LightGBM parameters (chosen on iterations 1-12 vs 13-16 of the real data: docs/models.md).
DEFAULT_PARAMS: dict[str, Any] = {
    "objective": "binary",
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 100,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "deterministic": True,
    "force_col_wise": True,
    "verbosity": -1,
}
#: Boosting rounds per classifier.
DEFAULT_ROUNDS = 150
#: Version of the model.json layout this module writes and reads.
FORMAT_VERSION = 1

_CURRENT = ("osc_rpc_configuration_current.mppr_value", "osc_rpc_configuration_current.mrif_value")


def _candidate_block(candidate: FloatArray, current: FloatArray) -> FloatArray:
    """:data:`CANDIDATE_FEATURES` for rows of (mppr, mrif) candidates and current configurations."""
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.log2(candidate) - np.log2(np.where(current > 0, current, np.nan))
    return np.concatenate([candidate, change], axis=1)


def _candidate_array(candidates: Sequence[Config]) -> FloatArray:
    try:
        values = np.array([[c[p] for p in CANDIDATE_PARAMS] for c in candidates], dtype=np.float64)
    except KeyError as err:
        raise ValueError(f"a candidate configuration lacks {err}; it needs {', '.join(CANDIDATE_PARAMS)}") from None
    if values.size and not (values > 0).all():
        raise ValueError("candidate configurations must have positive values")
    return values.reshape(len(candidates), len(CANDIDATE_PARAMS))


class GBDTModel(Model):
    """Two LightGBM binary classifiers (read, write) over features of t and the candidate configuration."""

    kind: ClassVar[str] = "gbdt"

    def __init__(
        self,
        params: Mapping[str, Any] | None = None,
        num_boost_round: int = DEFAULT_ROUNDS,
        *,
        seed: int = 0,
        threads: int = 2,
        predict_threads: int = 1,
        features: Sequence[str] = FEATURE_COLUMNS,
    ) -> None:
        """Hyper-parameters only; ``threads`` for training, ``predict_threads`` for inference."""
        unknown = [name for name in features if name not in FEATURE_COLUMNS]
        if unknown:
            raise ValueError(f"not feature columns of pfstune.features: {', '.join(unknown)}")
        missing_current = [name for name in _CURRENT if name not in features]
        if missing_current:
            raise ValueError(f"the features must include the current configuration: {', '.join(missing_current)}")
        self.params: dict[str, Any] = {**DEFAULT_PARAMS, **(params or {}), "seed": seed, "num_threads": threads}
        self.num_boost_round = num_boost_round
        self.predict_threads = predict_threads
        self.features: tuple[str, ...] = tuple(features)
        self._current_index = [self.features.index(name) for name in _CURRENT]
        self._boosters: dict[str, lgb.Booster] = {}
        self._forests: dict[str, CandidateForest | None] = {}  # compiled on first use, None: not reproducible
        self._metadata: dict[str, Any] = {}

    # ------------------------------------------------------------------------------------------
    # Model interface
    # ------------------------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``model.json`` content (empty before :meth:`fit` or :meth:`load`)."""
        return self._metadata

    @property
    def grid(self) -> dict[str, list[int]]:
        """The candidate grid the model was trained for (dial99)."""
        grid = self._metadata.get("grid", DIAL99)
        return {param: list(grid[param]) for param in CANDIDATE_PARAMS}

    @property
    def design_columns(self) -> list[str]:
        """Names of the columns the classifiers see, in order."""
        return [*self.features, *CANDIDATE_FEATURES]

    def fit(self, pairs: pd.DataFrame, *, provenance: Mapping[str, Any] | None = None) -> None:
        """Train both classifiers on ``pairs`` (every op needs pairs of both labels, else UserError)."""
        counts: dict[str, int] = {}
        positives: dict[str, int] = {}
        boosters: dict[str, lgb.Booster] = {}
        for op in OPS:
            subset = pairs[(pairs["op"] == op).to_numpy()]
            labels = subset["label"].to_numpy(dtype=np.float64)
            counts[op], positives[op] = len(subset), int(labels.sum())
            if counts[op] == 0:
                raise UserError(f"the training data has no {op} pairs; a model needs both reads and writes")
            if positives[op] in (0, counts[op]):
                raise UserError(
                    f"the {op} pairs of the training data all have label {int(labels[0])}; "
                    "the classifier needs both outcomes"
                )
            data = lgb.Dataset(
                self._pair_design(subset), label=labels, feature_name=self.design_columns, free_raw_data=True
            )
            boosters[op] = lgb.train(self.params, data, num_boost_round=self.num_boost_round)
        self._boosters = boosters
        self._forests = {}
        provenance = {**(provenance or {}), "interval_s": _interval_range(pairs)}
        self._metadata = self._describe(counts, positives, provenance)

    def predict_proba(self, op: str, features: pd.DataFrame, candidates: Sequence[Config]) -> FloatArray:
        """P(improvement) of every (OSC row, candidate), shape (rows, candidates).

        LightGBM's answer for the (rows x candidates) design, computed by
        :class:`~pfstune.models.forest.CandidateForest` (which decides each row's splits once, not
        once per candidate: 10x faster for 99 candidates) or, for a model it does not reproduce,
        by LightGBM in one call.
        """
        booster = self._booster(op)
        missing = [name for name in self.features if name not in features.columns]
        if missing:
            raise ValueError(f"features lack the columns {', '.join(missing[:4])} (pfstune.features.FEATURE_COLUMNS)")
        rows, count = len(features), len(candidates)
        if rows == 0 or count == 0:
            return np.zeros((rows, count), dtype=np.float64)
        values = features[list(self.features)].to_numpy(dtype=np.float64)
        candidate = _candidate_array(candidates)
        forest = self._forest(op)
        if forest is not None:
            # The candidate columns depend on a row only through its current configuration (as in
            # _candidate_block, an unknown or non-positive one gives NaN changes): one group each.
            current = values[:, self._current_index]
            configs, group = np.unique(np.where(current > 0, current, 0.0), axis=0, return_inverse=True)
            blocks = np.stack([_candidate_block(candidate, np.broadcast_to(c, candidate.shape)) for c in configs])
            return forest.predict_proba(np.ascontiguousarray(values), blocks, group.reshape(-1))
        design = np.empty((rows * count, len(self.features) + len(CANDIDATE_FEATURES)), dtype=np.float64)
        design[:, : len(self.features)] = np.repeat(values, count, axis=0)
        current = np.repeat(values[:, self._current_index], count, axis=0)
        design[:, len(self.features) :] = _candidate_block(np.tile(candidate, (rows, 1)), current)
        return self._predict(booster, design).reshape(rows, count)

    def predict_pairs(self, pairs: pd.DataFrame) -> FloatArray:
        """P(improvement) of each pair under its own op and candidate."""
        out = np.full(len(pairs), np.nan, dtype=np.float64)
        op = pairs["op"].astype(str).to_numpy()
        for name in np.unique(op):
            mask = op == name
            out[mask] = self._predict(self._booster(str(name)), self._pair_design(pairs[mask]))
        return out

    def save(self, directory: str | Path) -> None:
        """Write ``read.txt``, ``write.txt`` (LightGBM text) and ``model.json`` into ``directory``."""
        if not self._boosters:
            raise ValueError("fit or load the model before saving it")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        digests = {}
        # Every file goes to a temporary name and all are renamed once all are written, so a
        # failed write (OSError: a full disk) leaves a model saved there before as it was; the
        # metadata, entered first, is renamed last.  Python writes the text, not LightGBM's
        # save_model, so that a short write is an OSError like any other.
        with contextlib.ExitStack() as files:
            metadata = files.enter_context(replacing(path / METADATA_FILE))
            for op, booster in self._boosters.items():
                name = f"{op}.txt"
                partial = files.enter_context(replacing(path / name))
                partial.write_text(booster.model_to_string(num_iteration=-1), encoding="utf-8")
                digests[name] = file_sha256(partial)
            self._metadata["sha256"] = digests
            metadata.write_text(json.dumps(self._metadata, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> GBDTModel:
        """Read and validate a directory written by :meth:`save` (UserError naming what is wrong)."""
        path = Path(directory)
        meta = _read_metadata(path)
        if meta.get("kind") != cls.kind:
            raise UserError(f"{path}: model kind {meta.get('kind')!r} is not {cls.kind!r}")
        where = f"{path / METADATA_FILE}"
        features = _string_list(meta, "features", where)
        unknown = [name for name in features if name not in FEATURE_COLUMNS]
        if unknown:
            raise UserError(f"{where}: the model uses features this pfstune does not compute: {', '.join(unknown[:4])}")
        candidates = _string_list(meta, "candidate_features", where)
        if candidates != list(CANDIDATE_FEATURES):
            raise UserError(f"{where}: unknown candidate encoding {candidates}; this pfstune has {CANDIDATE_FEATURES}")
        ops = _string_list(meta, "ops", where)
        if not ops or any(op not in OPS for op in ops):
            raise UserError(f"{where}: ops must be a non-empty subset of {list(OPS)}, not {ops}")
        _check_grid(meta.get("grid"), where)
        label = meta.get("label")
        if not isinstance(label, dict) or not isinstance(label.get("epsilon"), (int, float)):
            raise UserError(f"{where}: no label definition with a numeric epsilon")
        try:
            model = cls(features=features)
        except ValueError as err:
            raise UserError(f"{where}: {err}") from None
        digests = meta.get("sha256") or {}
        if not isinstance(digests, dict):
            raise UserError(f"{where}: sha256 must map each model file to its digest")
        for op in ops:
            name = f"{op}.txt"
            file = path / name
            if not file.is_file():
                raise UserError(f"{path}: model file {name} is missing")
            if digests.get(name) != file_sha256(file):
                raise UserError(
                    f"{file}: does not match the SHA-256 recorded in {METADATA_FILE} (changed after saving?)"
                )
            try:
                booster = lgb.Booster(model_file=str(file))
            except lgb.basic.LightGBMError as err:
                raise UserError(f"{file}: not a LightGBM text model ({err})") from None
            if booster.feature_name() != model.design_columns:
                raise UserError(f"{file}: its feature names differ from those {METADATA_FILE} lists")
            model._boosters[op] = booster
        model._metadata = meta
        lgb_meta = meta.get("lightgbm") or {}
        params = lgb_meta.get("params") or {} if isinstance(lgb_meta, dict) else None
        rounds = lgb_meta.get("num_boost_round", model.num_boost_round) if isinstance(lgb_meta, dict) else None
        if not isinstance(params, dict) or not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise UserError(f"{where}: lightgbm must hold a params mapping and a positive integer num_boost_round")
        model.params = {**model.params, **params}
        model.num_boost_round = rounds
        return model

    # ------------------------------------------------------------------------------------------
    # Helpers
    # ------------------------------------------------------------------------------------------

    def _booster(self, op: str) -> lgb.Booster:
        booster = self._boosters.get(op)
        if booster is None:
            if not self._boosters:
                raise ValueError("the model is neither fitted nor loaded")
            raise UserError(f"the model has no {op!r} classifier (it has {', '.join(self._boosters)})")
        return booster

    def _forest(self, op: str) -> CandidateForest | None:
        if op not in self._forests:
            self._forests[op] = CandidateForest.from_booster(self._booster(op), len(self.features), _CHANGE_COLUMNS)
        return self._forests[op]

    def _predict(self, booster: lgb.Booster, design: FloatArray) -> FloatArray:
        result = booster.predict(design, num_threads=self.predict_threads)
        return np.asarray(result, dtype=np.float64)

    def _pair_design(self, pairs: pd.DataFrame) -> FloatArray:
        values = pairs[list(self.features)].to_numpy(dtype=np.float64)
        candidate = pairs[[CANDIDATE_COLUMNS[p] for p in CANDIDATE_PARAMS]].to_numpy(dtype=np.float64)
        block = _candidate_block(candidate, values[:, self._current_index])
        return np.ascontiguousarray(np.concatenate([values, block], axis=1))

    def _describe(
        self, counts: dict[str, int], positives: dict[str, int], provenance: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "format": "pfstune-model",
            "format_version": FORMAT_VERSION,
            "kind": self.kind,
            "ops": list(OPS),
            "files": {op: f"{op}.txt" for op in OPS},
            "features": list(self.features),
            "candidate_features": list(CANDIDATE_FEATURES),
            "candidate_params": list(CANDIDATE_PARAMS),
            "grid": {"name": "dial99", **{param: list(DIAL99[param]) for param in CANDIDATE_PARAMS}},
            "label": {
                "definition": "osc_mbps(t+1) / osc_mbps(t) > 1 + epsilon",
                "epsilon": EPSILON,
                "throughput": "(ost_read_rpc_bytes_data.samples_sum + ost_write_rpc_bytes_data.samples_sum)"
                " / actual_record_duration / 1e6",
                "candidate": "osc_rpc_configuration_current.{mppr,mrif}_value of interval t+1",
                "op": "dominant operation of t: read iff OSC read bytes > write bytes (pfstune.features.dominant_op)",
                "pairs": "pfstune.datasets.make_pairs",
            },
            "lightgbm": {"params": dict(self.params), "num_boost_round": self.num_boost_round},
            "versions": {
                "pfstune": pfstune.__version__,
                "lightgbm": lgb.__version__,
                "numpy": np.__version__,
                "python": platform.python_version(),
            },
            "training": {
                "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "pairs": counts,
                "positives": positives,
                **provenance,
            },
        }


def _interval_range(pairs: pd.DataFrame) -> dict[str, float] | None:
    """The 5th and 95th percentiles of the training intervals' length, s: the features count per
    interval, so a model knows only the probe intervals it learned from (None without them)."""
    column = "actual_record_duration"
    seconds = pairs[column].to_numpy(dtype=np.float64) if column in pairs else np.empty(0)
    seconds = seconds[np.isfinite(seconds) & (seconds > 0)]
    if not len(seconds):
        return None
    low, high = np.percentile(seconds, [5, 95])
    return {"p5": round(float(low), 4), "p95": round(float(high), 4)}


def _read_metadata(path: Path) -> dict[str, Any]:
    check_model_directory(path)
    file = path / METADATA_FILE
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{file}: not valid JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != "pfstune-model":
        raise UserError(f'{file}: not a pfstune model description (no "format": "pfstune-model")')
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise UserError(f"{file}: format_version {version!r} is not supported (this pfstune reads {FORMAT_VERSION})")
    return meta


def _string_list(meta: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = meta.get(key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UserError(f"{where}: {key!r} must be a list of names")
    return value


def _check_grid(grid: object, where: str) -> None:
    if not isinstance(grid, dict):
        raise UserError(f"{where}: no candidate grid")
    for param in CANDIDATE_PARAMS:
        values = grid.get(param)
        if not isinstance(values, list) or not values or not all(isinstance(v, int) and v > 0 for v in values):
            raise UserError(f"{where}: grid.{param} must be a non-empty list of positive integers")
