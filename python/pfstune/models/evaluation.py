"""How well a model's probabilities match what happened: ROC AUC, precision at DIAL's threshold, calibration.

ROC AUC is computed here from ranks (the Mann-Whitney U statistic) rather than with
scikit-learn: that is a dozen lines of numpy, and scikit-learn would be a large dependency for
one function.  Ties get their average rank, which is what ``sklearn.metrics.roc_auc_score`` gives.

>>> roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]))
0.75
>>> precision_at(np.array([0, 1, 1]), np.array([0.9, 0.85, 0.2]), 0.8)
0.5
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from pfstune.datasets import OPS
from pfstune.models._base import Model

__all__ = ["THRESHOLD", "calibration", "evaluate", "precision_at", "roc_auc"]

#: DIAL's probability threshold tau (Algorithm 1): candidates above it are considered.
THRESHOLD = 0.8


def _average_ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1-based ranks of ``values``, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    mean_rank = (starts + ends + 1) / 2.0  # mean of the 1-based ranks start+1 .. end
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def roc_auc(labels: npt.ArrayLike, scores: npt.ArrayLike) -> float:
    """Area under the ROC curve = P(score of a random positive > score of a random negative); NaN if one class."""
    y = np.asarray(labels).astype(bool)
    s = np.asarray(scores, dtype=np.float64)
    positives = int(y.sum())
    negatives = len(y) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    rank_sum = float(_average_ranks(s)[y].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def precision_at(labels: npt.ArrayLike, scores: npt.ArrayLike, threshold: float = THRESHOLD) -> float:
    """Fraction of positives among the scores above ``threshold`` (DIAL: p > tau); NaN if there are none."""
    y = np.asarray(labels).astype(bool)
    chosen = np.asarray(scores, dtype=np.float64) > threshold
    return float(y[chosen].mean()) if chosen.any() else float("nan")


def calibration(labels: npt.ArrayLike, scores: npt.ArrayLike, bins: int = 10) -> list[list[float]]:
    """``[mean predicted, observed positive rate, count]`` per non-empty equal-width bin of [0, 1]."""
    y = np.asarray(labels).astype(np.float64)
    s = np.asarray(scores, dtype=np.float64)
    index = np.clip((s * bins).astype(np.int64), 0, bins - 1)
    rows = []
    for b in range(bins):
        mask = index == b
        if mask.any():
            rows.append([float(s[mask].mean()), float(y[mask].mean()), int(mask.sum())])
    return rows


def _number(value: float) -> float | None:
    """JSON-friendly: NaN becomes None."""
    return None if np.isnan(value) else round(float(value), 6)


def evaluate(model: Model, pairs: pd.DataFrame, threshold: float = THRESHOLD) -> dict[str, dict[str, Any]]:
    """Per op: ``auc``, ``precision_at_0.8``, ``positives``, ``rows``, ``above_threshold``, ``calibration``.

    The op keys are those of :data:`pfstune.datasets.OPS`; an op without pairs has ``rows`` 0 and
    ``None`` for the figures.  The ``precision_at_...`` key carries the threshold given.
    """
    scores = model.predict_pairs(pairs) if len(pairs) else np.zeros(0)
    ops = pairs["op"].astype(str).to_numpy()
    labels = pairs["label"].to_numpy()
    report: dict[str, dict[str, Any]] = {}
    for op in OPS:
        mask = ops == op
        y, s = labels[mask], scores[mask]
        report[op] = {
            "auc": _number(roc_auc(y, s)),
            f"precision_at_{threshold:g}": _number(precision_at(y, s, threshold)),
            "positives": int(y.sum()),
            "rows": int(mask.sum()),
            "above_threshold": int((s > threshold).sum()),
            "calibration": [[round(p, 6), round(o, 6), int(n)] for p, o, n in calibration(y, s)],
        }
    return report
