"""Offline replay of a tuner on recorded per-OSC measurements (../shared/docs/design.md, "Offline replay on real data").

For a dataset in the schema of ``../shared/data/dial-lustre`` (or any Parquet file with its columns):

- **Value table.** value(w, c) is the mean per-interval OSC throughput of the rows of workload w
  recorded under configuration c in which the OSC carried data.  Idle intervals and rows of zero
  duration say nothing about c, so they are left out of the table (but still replayed).
- **Decisions.** Each OSC series (workload, iteration, osc) is replayed in ``observation_no``
  order; at each row the tuner observes that interval (features from :mod:`pfstune.features`,
  the configuration that was in force) and proposes the configuration of the next interval.
  All series advance in lockstep, so a tuner with a model scores every series of a step in one
  batch.  A tuner whose learning is shared between OSCs (``shares_state_across_oscs``: the
  bandit) would learn, at step k of one run, from step k of every other run; it gets a fresh
  copy for each recorded run (workload, iteration) instead, which knows that run's history
  only.  The recorded data do not follow the proposals (the collector chose configurations at
  random), which is what lets one recording score any tuner.
- **Score.** Per workload, the mean over rows of value(w, proposal) / max_c value(w, c).  The
  default configuration (1024, 8) is scored the same way.  A proposal the table has no value
  for (never recorded for that workload) is counted in ``unscored`` and left out of the mean.
  A workload with no recorded interval under the default (it happens: a single iteration, or a
  short ``pfstune collect`` run) has no default score; the summary's mean default score is over
  the workloads that have one, and names the others.  A workload none of whose intervals moved
  data has no score at all (``no_score``), and is left out of the mean score the same way.

Each series gets its own OSC key (``workload/iteration/osc``), so per-OSC tuner state never
leaks between recordings.

What replay can and cannot judge: a tuner that proposes from the current interval's statistics
(DIAL) is scored fairly, because its proposal depends only on what was recorded.  A tuner that
climbs from its own previous step (IOPathTune) is not: its steps never take effect in a
recording, the configuration it sees in force is the collector's random one, so between its
decisions it "keeps" a random configuration and scores about what a random configuration scores.
Judge such tuners on the simulator (``pfstune sim run --tuner``, ``benchmarks/iopathtune``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pfstune.datasets import check_present, not_numbers, parquet_columns, whole_numbers
from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS, RAW_COLUMNS, from_dataset
from pfstune.tuners._base import Context, Tuner

#: Lustre's default configuration, scored beside every tuner.
DEFAULT_CONFIG = (1024, 8)
#: The replayed tuners may use the whole dial99 range.
BOUNDS = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}
_MPPR = "osc_rpc_configuration_current.mppr_value"
_MRIF = "osc_rpc_configuration_current.mrif_value"
SERIES = ["workload", "iteration", "osc"]


def _throughput(rows: pd.DataFrame) -> pd.Series:
    read = rows["ost_read_rpc_bytes_data.samples_sum"].astype(float)
    write = rows["ost_write_rpc_bytes_data.samples_sum"].astype(float)
    return (read + write) / rows["actual_record_duration"].astype(float) / 1e6


def value_table(raw: pd.DataFrame) -> pd.DataFrame:
    """value(workload, mppr, mrif): mean MB/s of the rows that moved data, indexed by the three."""
    moved = raw[(raw["actual_record_duration"] > 0)]
    mbps = _throughput(moved)
    moved = moved.assign(mbps=mbps)[mbps > 0]
    table = moved.groupby(["workload", _MPPR, _MRIF], observed=True)["mbps"].mean()
    named: pd.DataFrame = table.rename_axis(["workload", "max_pages_per_rpc", "max_rpcs_in_flight"]).to_frame("value")
    return named


@dataclass
class ReplayResult:
    """Decisions (one row per input row) and the per-workload scores."""

    decisions: pd.DataFrame
    scores: dict[str, dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        """The ``--json`` document: per-workload scores and their means."""
        workloads = list(self.scores.values())
        scored = [w["score"] for w in workloads if w["score"] is not None]
        defaults = [w["default_score"] for w in workloads if w["default_score"] is not None]
        return {
            "workloads": self.scores,
            "mean_score": float(np.mean(scored)) if scored else None,
            "mean_default_score": float(np.mean(defaults)) if defaults else None,
            "no_default_score": [name for name, w in self.scores.items() if w["default_score"] is None],
            "no_score": [name for name, w in self.scores.items() if w["score"] is None],
        }


def load_recording(paths: Sequence[str]) -> pd.DataFrame:
    """Concatenate Parquet recordings; UserError if a file is missing or lacks the schema."""
    frames = []
    for path in paths:
        if not os.path.exists(path):
            raise UserError(f"{path}: no such file or directory")
        parquet_columns(path)  # a file that is not Parquet: the loaders' one-line error
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as err:  # damaged beyond its footer
            raise UserError(f"{path}: not a readable Parquet file ({type(err).__name__}: {err})") from None
        missing = [c for c in [*SERIES, "observation_no", *RAW_COLUMNS] if c not in frame]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise UserError(f"{path}: not a per-OSC recording (the dial-lustre schema); missing columns {shown}")
        problem = not_numbers(frame, ["observation_no", *RAW_COLUMNS])
        if problem:
            raise UserError(f"{path}: {problem}")
        check_present(frame, ["workload", "osc"], path)
        for column in ("iteration", "observation_no"):
            frame[column] = whole_numbers(frame, column, path)
        unset = frame[[_MPPR, _MRIF]].isna().any(axis=1) | (frame[[_MPPR, _MRIF]] < 1).any(axis=1)
        if unset.any():
            raise UserError(
                f"{path}: {int(unset.sum())} row(s) have no valid configuration ({_MPPR} and {_MRIF} "
                "must be at least 1), e.g. the row at position "
                f"{int(np.flatnonzero(unset.to_numpy())[0])}"
            )
        frames.append(frame)
    if not frames:
        raise UserError("no dataset given")
    data = pd.concat(frames, ignore_index=True)
    for column in ("workload", "osc"):
        data[column] = data[column].astype(str)
    if data.empty:
        raise UserError("the dataset has no rows")
    twice = data.duplicated([*SERIES, "observation_no"])
    if twice.any():
        row = data[twice].iloc[0]
        raise UserError(
            f"the interval workload {row['workload']}, iteration {row['iteration']}, osc {row['osc']}, "
            f"observation_no {row['observation_no']} appears more than once ({int(twice.sum())} repeated rows): "
            "a file given twice, or two recordings with the same iteration numbers"
        )
    return data


def replay(raw: pd.DataFrame, tuner: Tuner, progress: Callable[[int], None] | None = None) -> ReplayResult:
    """Replay ``tuner`` over every series of ``raw`` (the dataset schema); see the module docstring."""
    raw = raw.sort_values([*SERIES, "observation_no"], kind="stable").reset_index(drop=True)
    features = from_dataset(raw)
    table = value_table(raw)["value"]
    keys = (raw["workload"].astype(str) + "/" + raw["iteration"].astype(str) + "/" + raw["osc"].astype(str)).tolist()
    step = raw.groupby(SERIES, observed=True).cumcount().to_numpy()
    proposals = np.zeros((len(raw), 2), dtype=np.int64)
    columns = list(FEATURE_COLUMNS)
    matrix = features[columns].to_numpy(dtype=float)
    configs = raw[[_MPPR, _MRIF]].to_numpy(dtype=np.int64)

    def run(rows_of_run: np.ndarray, tuner: Tuner) -> None:
        steps = step[rows_of_run]
        for k in range(int(steps.max()) + 1 if len(steps) else 0):
            rows = rows_of_run[steps == k]
            contexts = []
            for i in rows:
                metrics = dict(zip(columns, matrix[i].tolist(), strict=True))
                config = {"max_pages_per_rpc": int(configs[i, 0]), "max_rpcs_in_flight": int(configs[i, 1])}
                tuner.observe(keys[i], dict(config), metrics)
                contexts.append(Context(keys[i], float(k), config, BOUNDS, metrics))
            for i, suggestion in zip(rows, tuner.suggest_batch(contexts), strict=True):
                proposals[i] = (suggestion["max_pages_per_rpc"], suggestion["max_rpcs_in_flight"])
            if progress is not None:
                progress(len(rows))

    if tuner.shares_state_across_oscs:
        # The recorded runs happened one after another, each on a node of its own: a tuner whose
        # learning is shared between OSCs gets a fresh copy per run, so that it knows only that
        # run's history, not what the other runs' intervals of the same step taught.
        for rows_of_run in raw.groupby(["workload", "iteration"], observed=True, sort=False).indices.values():
            run(np.sort(rows_of_run), copy.deepcopy(tuner))
    else:
        # Its state is per OSC key, so replaying every series in lockstep gives the same
        # proposals as one run at a time, and lets a model score a whole step in one batch.
        run(np.arange(len(raw)), tuner)
    decisions = pd.DataFrame(
        {
            "workload": raw["workload"].astype(str),
            "iteration": raw["iteration"],
            "osc": raw["osc"].astype(str),
            "observation_no": raw["observation_no"],
            "max_pages_per_rpc": proposals[:, 0],
            "max_rpcs_in_flight": proposals[:, 1],
        }
    )
    return ReplayResult(decisions, _scores(decisions, table))


def _scores(decisions: pd.DataFrame, table: pd.Series) -> dict[str, dict[str, Any]]:
    scores: dict[str, dict[str, Any]] = {}
    for workload, rows in decisions.groupby("workload", sort=True):
        values = table.xs(workload, level="workload") if workload in table.index.get_level_values(0) else None
        if values is None or values.empty:
            # no interval of this workload moved data: no configuration has a value
            scores[str(workload)] = {
                "score": None,
                "default_score": None,
                "rows": len(rows),
                "unscored": len(rows),
                "best_config": None,
                "best_mbps": None,
            }
            continue
        best = float(values.max())
        lookup = values.to_dict()
        got = [
            lookup.get((int(a), int(b)))
            for a, b in zip(rows["max_pages_per_rpc"], rows["max_rpcs_in_flight"], strict=True)
        ]
        scored = [v for v in got if v is not None]
        default = lookup.get(DEFAULT_CONFIG)
        best_config = max(lookup, key=lookup.__getitem__)
        scores[str(workload)] = {
            "score": float(np.mean(scored)) / best if scored else 0.0,
            "default_score": (default / best) if default is not None else None,
            "rows": len(rows),
            "unscored": len(got) - len(scored),
            "best_config": list(best_config),
            "best_mbps": best,
        }
    return scores
