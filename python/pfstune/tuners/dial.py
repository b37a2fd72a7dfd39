"""The ``dial`` tuner: DIAL's Conditional Score Greedy choice (seed 000, Algorithm 1), per OSC.

Every probe, for every OSC that moved data in the interval that just ended:

1. The interval's dominant operation (read or write bytes, :func:`pfstune.features.dominant_op`)
   picks the read or the write model.
2. The model gives every candidate configuration c of the dial99 grid within the actuator's bounds
   a probability p(c) that the next interval's throughput beats this one's by more than 15%
   (one batched call for all OSCs and all candidates).
3. S = {c : p(c) > tau} (tau = 0.8).  If S is empty the configuration stays as it is.
4. Configurations in S are min-max normalised: each parameter's log2 over the grid's range, so
   1 -> 0 and the largest grid value -> 1 (DIAL's collector used the same log2 scale).
5. The choice is the argmax over S of the operation's score:
   write: ``p * (1 + beta * (x1 + x2))``; read: ``p * (1 + alpha * x1) + x2`` (lines 12 and 14), where
   x1 is the normalised ``max_pages_per_rpc`` and x2 the normalised ``max_rpcs_in_flight``.  The
   regularisers favour larger RPCs and more RPCs in flight among configurations the model
   already trusts, which is what keeps the search from settling on timid "safe" choices.

An OSC that carried no data reverts to the configuration it had when the tuner first saw it
(its original values; DIAL's collector restored the defaults), so an idle device is left as the
administrator set it.  The model is loaded from a model directory (``model``, default the one
shipped in the package, see :mod:`pfstune.models`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS, dominant_op, feature_matrix
from pfstune.tuners._base import Config, Context, Tuner

#: DIAL's candidate grid: max_pages_per_rpc 2^0..2^10 x max_rpcs_in_flight 2^0..2^8.
DIAL99: tuple[Config, ...] = tuple(
    {"max_pages_per_rpc": 2**i, "max_rpcs_in_flight": 2**j} for i in range(11) for j in range(9)
)


class Predictor(Protocol):
    """What the tuner needs of a model (:class:`pfstune.models._base.Model` provides it)."""

    def predict_proba(self, op: str, features: pd.DataFrame, candidates: Sequence[Config]) -> np.ndarray:
        """P(improvement > 15%) for each row (an OSC's interval) and candidate: shape (rows, candidates)."""
        ...


def _normalised_grid(grid: Sequence[Config]) -> tuple[np.ndarray, np.ndarray]:
    pages = np.log2([c["max_pages_per_rpc"] for c in grid])
    flight = np.log2([c["max_rpcs_in_flight"] for c in grid])

    def minmax(values: np.ndarray) -> np.ndarray:
        span = values.max() - values.min()
        return (values - values.min()) / span if span > 0 else np.zeros_like(values)

    return minmax(pages), minmax(flight)


class DialTuner(Tuner):
    """Algorithm 1 of DIAL over a read and a write GBDT classifier."""

    name = "dial"

    def __init__(
        self,
        model: str = "default",
        tau: float = 0.8,
        alpha: float = 1.0,
        beta: float = 1.0,
        *,
        predictor: Predictor | None = None,
    ) -> None:
        """Load the model directory ``model`` (``default``: the shipped model) unless ``predictor`` is given."""
        if not 0 <= tau < 1:
            raise UserError(f"dial: tau must be in [0, 1), got {tau}")
        if alpha < 0 or beta < 0:
            raise UserError("dial: alpha and beta must be >= 0")
        self.tau, self.alpha, self.beta = tau, alpha, beta
        self.model_path = model
        if predictor is None:
            from pfstune.models import load_model  # deferred: LightGBM is only needed when DIAL runs

            predictor = load_model(model)
        self.predictor = predictor
        self.grid = DIAL99
        self._pages, self._flight = _normalised_grid(self.grid)
        self._originals: dict[str, Config] = {}
        self._allowed: dict[tuple[tuple[str, tuple[int, int]], ...], np.ndarray] = {}  # bounds -> grid mask

    def suggest(self, context: Context) -> Config:
        """Algorithm 1 for one OSC (see :meth:`suggest_batch`)."""
        return self.suggest_batch([context])[0]

    def suggest_batch(self, contexts: Sequence[Context]) -> list[Config]:
        """Algorithm 1 for every OSC, with one model call per operation for all of them."""
        results: list[Config] = []
        by_op: dict[str, list[int]] = {"read": [], "write": []}
        for index, context in enumerate(contexts):
            self._originals.setdefault(context.osc, dict(context.config))
            results.append(dict(context.config))
            if not context.metrics:
                continue  # first probe: no interval yet
            op = dominant_op(context.metrics)
            if op is None:  # idle: back to what the administrator had
                results[index] = dict(self._originals[context.osc])
                continue
            by_op[op].append(index)
        for operation, indices in by_op.items():
            if not indices:
                continue
            values = feature_matrix([contexts[i].metrics for i in indices], FEATURE_COLUMNS)
            rows = pd.DataFrame(values, columns=list(FEATURE_COLUMNS))
            probabilities = np.asarray(self.predictor.predict_proba(operation, rows, self.grid), dtype=float)
            choices = self._choose_many(operation, probabilities, [contexts[i].bounds for i in indices])
            for index, choice in zip(indices, choices, strict=True):
                if choice is not None:
                    results[index] = {**results[index], **choice}
        return results

    def _allowed_mask(self, bounds: Mapping[str, tuple[int, int]]) -> np.ndarray:
        """Which grid configurations lie within ``bounds`` (cached: OSCs mostly share their bounds)."""
        key = tuple(sorted((param, tuple(bound)) for param, bound in bounds.items()))
        allowed = self._allowed.get(key)  # type: ignore[arg-type]
        if allowed is None:
            allowed = np.array(
                [all(bounds[param][0] <= value <= bounds[param][1] for param, value in c.items()) for c in self.grid]
            )
            self._allowed[key] = allowed  # type: ignore[index]
        return allowed

    def _choose_many(
        self, op: str, p: np.ndarray, bounds: Sequence[Mapping[str, tuple[int, int]]]
    ) -> list[Config | None]:
        """Algorithm 1's choice for every row of ``p`` (rows, candidates): the best-scoring trusted
        configuration within the row's bounds, None where none is trusted."""
        # OSCs mostly share their bounds: one mask per distinct bounds, then one row per OSC.
        distinct: dict[Any, int] = {}
        masks: list[np.ndarray] = []
        which: list[int] = []
        for bound in bounds:
            try:
                key: Any = tuple(bound.items())
                at = distinct.get(key)
            except TypeError:  # unhashable bounds (lists): no sharing
                key, at = object(), None
            if at is None:
                at = distinct[key] = len(masks)
                masks.append(self._allowed_mask(bound))
            which.append(at)
        allowed = np.stack(masks)[which] if masks else np.zeros(p.shape, dtype=bool)
        in_s = allowed & (p > self.tau)
        if op == "write":
            scores = p * (1 + self.beta * (self._pages + self._flight))
        else:
            scores = p * (1 + self.alpha * self._pages) + self._flight
        best: list[int] = np.argmax(np.where(in_s, scores, -np.inf), axis=1).tolist()
        trusted: list[bool] = np.asarray(in_s.any(axis=1)).tolist()
        return [dict(self.grid[b]) if ok else None for b, ok in zip(best, trusted, strict=True)]

    def forget(self, osc: str) -> None:
        """Drop the original values of a device that went away."""
        self._originals.pop(osc, None)

    def state_dict(self) -> dict[str, Any]:
        """The originals per OSC (the model itself is its own directory)."""
        return {"model": self.model_path, "originals": {osc: dict(c) for osc, c in self._originals.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the originals saved by :meth:`state_dict`."""
        self._originals = {osc: {k: int(v) for k, v in c.items()} for osc, c in state.get("originals", {}).items()}
