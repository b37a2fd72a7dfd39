"""The Model interface: what every classifier behind the DIAL tuner implements.

A model estimates, for one OSC whose interval t just ended, the probability that running the
next interval under a candidate configuration raises the OSC's throughput by more than
``epsilon`` (DIAL: 15 %): P(thr(t+1) / thr(t) > 1 + epsilon | features of t, candidate).  As in
DIAL there is one classifier per operation (``"read"``, ``"write"``), chosen by the interval's
dominant operation (:func:`pfstune.features.dominant_op`).

Lifecycle:

1. Construct with hyper-parameters (no data), then ``fit(pairs)`` once with training pairs from
   :func:`pfstune.datasets.make_pairs` (``provenance``: what the pairs came from, recorded in the
   metadata).  Or ``load(directory)`` a saved model instead of fitting.
2. ``predict_proba(op, features, candidates)`` any number of times: ``features`` has one row per
   OSC with :data:`pfstune.features.FEATURE_COLUMNS` of its interval t (NaN allowed: unknown),
   ``candidates`` is a list of configurations ``{"max_pages_per_rpc": int,
   "max_rpcs_in_flight": int}``; the answer is an array of shape (rows, candidates).  The DIAL
   tuner calls it once per agent tick and operation, for all OSCs and all 99 dial99 candidates,
   so implementations batch the whole (rows x candidates) matrix in one inference call.
   ``predict_pairs(pairs)`` scores training-style pairs (each with its own candidate and op):
   the evaluation path; it must agree with ``predict_proba`` row by row.
3. ``save(directory)`` writes the model as documented, non-executable files (design rule 5: no
   pickle) with a ``model.json`` metadata file (:data:`METADATA_FILE`) whose ``kind`` names the
   implementation; ``load(directory)`` validates it and raises :class:`~pfstune.errors.UserError`
   with one clear line for a missing file or metadata that does not match this pfstune
   (unknown features, another grid, ...).  A loaded model predicts exactly what the saved one did.

Implementations live one per file (:mod:`pfstune.models.gbdt`) and pass the conformance suite
:mod:`pfstune.testing.models`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from pfstune.errors import UserError

#: A configuration of one OSC: tunable name -> value.
Config = Mapping[str, int]
#: The metadata file every saved model directory has.
METADATA_FILE = "model.json"
#: The tunables a candidate configuration sets, in the order of the candidate columns.
CANDIDATE_PARAMS: tuple[str, ...] = ("max_pages_per_rpc", "max_rpcs_in_flight")
#: DIAL's candidate grid: max_pages_per_rpc 2^0..2^10 x max_rpcs_in_flight 2^0..2^8 (99 configurations).
DIAL99: dict[str, list[int]] = {
    "max_pages_per_rpc": [2**i for i in range(11)],
    "max_rpcs_in_flight": [2**i for i in range(9)],
}


def check_model_directory(path: Path) -> None:
    """UserError unless ``path`` is a directory holding :data:`METADATA_FILE` (the message says which)."""
    if not path.is_dir():
        what = "is a file, not a model directory" if path.exists() else "no such model directory"
        raise UserError(f"{path}: {what}")
    if not (path / METADATA_FILE).is_file():
        raise UserError(f"{path}: not a model directory (no {METADATA_FILE})")


def grid_candidates(grid: Mapping[str, Sequence[int]] | None = None) -> list[dict[str, int]]:
    """Every configuration of ``grid`` (default :data:`DIAL99`), max_pages_per_rpc varying slowest.

    >>> len(grid_candidates()), grid_candidates()[:2]
    (99, [{'max_pages_per_rpc': 1, 'max_rpcs_in_flight': 1}, {'max_pages_per_rpc': 1, 'max_rpcs_in_flight': 2}])
    """
    grid = grid or DIAL99
    return [
        {"max_pages_per_rpc": int(mppr), "max_rpcs_in_flight": int(mrif)}
        for mppr in grid["max_pages_per_rpc"]
        for mrif in grid["max_rpcs_in_flight"]
    ]


class Model(ABC):
    """A pair of classifiers (read, write) scoring candidate configurations.  See the module docstring."""

    #: The ``kind`` written into ``model.json`` and the name :func:`pfstune.models.load_model` dispatches on.
    kind: ClassVar[str]

    @property
    @abstractmethod
    def metadata(self) -> dict[str, Any]:
        """What ``model.json`` holds (empty before ``fit``): features, grid, label, versions, training data."""

    @property
    def ops(self) -> tuple[str, ...]:
        """The operations this model can score (``"read"``, ``"write"``); empty before ``fit``."""
        return tuple(self.metadata.get("ops", ()))

    @abstractmethod
    def fit(self, pairs: pd.DataFrame, *, provenance: Mapping[str, Any] | None = None) -> None:
        """Train on ``pairs`` (:func:`pfstune.datasets.make_pairs`); ``provenance`` goes into the metadata."""

    @abstractmethod
    def predict_proba(self, op: str, features: pd.DataFrame, candidates: Sequence[Config]) -> npt.NDArray[np.float64]:
        """P(improvement) for every (row of ``features``, candidate): shape (len(features), len(candidates))."""

    @abstractmethod
    def predict_pairs(self, pairs: pd.DataFrame) -> npt.NDArray[np.float64]:
        """P(improvement) for each pair (its own op and candidate): shape (len(pairs),)."""

    @abstractmethod
    def save(self, directory: str | Path) -> None:
        """Write the model into ``directory`` (created if needed; files of an earlier model are replaced)."""

    @classmethod
    @abstractmethod
    def load(cls, directory: str | Path) -> Model:
        """Read a model that :meth:`save` wrote; UserError if the directory is not one or does not fit."""
