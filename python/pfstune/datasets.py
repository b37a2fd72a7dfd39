"""Datasets of per-OSC intervals, and the training pairs built from them (the only place they are built).

THE dataset schema
==================

A dataset is one or more Parquet files (a directory stands for the ``*.parquet`` files in it).
Each row is one interval of one client OSC.  :func:`load_dataset` reads two layouts and returns
the same frame for both:

(a) **The real dataset** (``../shared/data/dial-lustre/dev.parquet``, DIAL's CSV columns): it has
    :data:`pfstune.features.RAW_COLUMNS` but not all of :data:`~pfstune.features.FEATURE_COLUMNS`.
    Its rows are mapped by :func:`pfstune.features.from_dataset` (design rule 1: one feature
    path) and marked ``source = "real"``.
(b) **Any file that already has every feature column**: what ``pfstune collect`` writes
    (``source = "sim"``) or an agent recording.  Its feature columns are taken as they are.

Besides the features, a file must have the columns that identify a row:

========================  =====================================================================
``workload``              what ran (alias accepted: ``scenario``)
``iteration``             which repetition of it (alias accepted: ``seed``)
``osc``                   the OSC device name
``observation_no``        position of the interval in its series (consecutive integers)
``source`` (optional)     ``"real"``, ``"sim"``, ...; default ``"real"`` for (a), ``"unknown"`` for (b)
``client`` (optional)     the client an OSC belongs to: when one OSC name occurs under several
                          clients of a file, ``osc`` becomes ``"<client>/<osc>"`` so that their
                          series stay apart
========================  =====================================================================

Other columns (``max_pages_per_rpc``, ``max_rpcs_in_flight``, ``seed`` next to ``iteration``, ...)
are ignored: the configuration in force during an interval is the feature columns
``osc_rpc_configuration_current.{mppr,mrif}_value``.  One **series** is the rows of one
(file, workload, iteration, osc), ordered by ``observation_no``.

The loaded frame has :data:`META_COLUMNS` (``file`` is the path the rows came from) followed by
``FEATURE_COLUMNS``.

Training pairs
==============

:func:`make_pairs` turns consecutive intervals (t, t+1) of a series (``observation_no`` differing
by exactly 1) into one pair: the features of t, the **candidate** configuration (the one in force
during t+1, :data:`CANDIDATE_COLUMNS`), the operation ``op`` = DIAL's dominant operation of t (the
model it trains: "read" iff more OSC bytes were read than written) and the **label**
thr(t+1) / thr(t) > 1 + epsilon (DIAL's f, section III-B) with epsilon = :data:`EPSILON` (15 %),
thr being the OSC throughput of the dataset README (OSC read + write RPC bytes /
``actual_record_duration``).  The current configuration of t stays among the features, so a
model sees (current, candidate).

Pairs are dropped when t is idle (no OSC bytes: nothing to choose a model by, and the README
keeps idle intervals out of every per-configuration figure), when either duration is not
positive or a throughput is unknown (a rate over no time says nothing), when the candidate is
unknown, and, for real rows, when t is the first row of a DIAL series (``observation_no`` 0:
DIAL's collector wrote it before any interval had elapsed; its duration is ~0 and its rate
meaningless).  t+1 may be idle: that is a real outcome (label 0).  NaN features stay NaN
(LightGBM treats them as missing).

The vectorised throughput and operation are the feature columns ``x_mbps`` and
``x_dominant_write``, which :mod:`pfstune.features` computes with exactly the definitions of
:func:`~pfstune.features.osc_throughput_mbps` and :func:`~pfstune.features.dominant_op`
(the tests check that they agree row by row).

>>> import pandas as pd
>>> from pfstune.features import FEATURE_COLUMNS
>>> rows = pd.DataFrame([dict.fromkeys(FEATURE_COLUMNS, 0.0) for _ in range(3)])
>>> rows["osc_rpc_configuration_current.mppr_value"] = [1024, 16, 256]
>>> rows["osc_rpc_configuration_current.mrif_value"] = [8, 64, 32]
>>> rows["x_mbps"], rows["x_dominant_write"] = [100.0, 200.0, 210.0], [0.0, 0.0, 0.0]
>>> rows["actual_record_duration"] = 0.5
>>> rows["workload"], rows["iteration"], rows["osc"], rows["observation_no"] = "w", 1, "osc0", [1, 2, 3]
>>> pairs = make_pairs(normalize(rows, "mem"))
>>> print(pairs[["observation_no", "op", "candidate_max_pages_per_rpc", "label"]].to_string(index=False))
 observation_no   op  candidate_max_pages_per_rpc  label
              1 read                           16      1
              2 read                          256      0
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pfstune.errors import UserError
from pfstune.features import FEATURE_COLUMNS, RAW_COLUMNS, from_dataset

__all__ = [
    "CANDIDATE_COLUMNS",
    "EPSILON",
    "META_COLUMNS",
    "OPS",
    "PAIR_COLUMNS",
    "dataset_files",
    "file_sha256",
    "load_dataset",
    "make_pairs",
    "normalize",
    "not_numbers",
    "select_iterations",
]

#: DIAL's improvement threshold: the label is thr(t+1) / thr(t) > 1 + EPSILON.
EPSILON = 0.15
#: The operations a model is trained for, in DIAL's order.
OPS: tuple[str, ...] = ("read", "write")
#: Columns that identify a row of a loaded dataset (``file``: the Parquet file it came from).
META_COLUMNS: tuple[str, ...] = ("source", "file", "workload", "iteration", "osc", "observation_no")
#: Configuration of interval t+1 (the candidate a model scores), by tunable name.
CANDIDATE_COLUMNS: dict[str, str] = {
    "max_pages_per_rpc": "candidate_max_pages_per_rpc",
    "max_rpcs_in_flight": "candidate_max_rpcs_in_flight",
}
#: Columns of :func:`make_pairs`'s frame: identity of t, op, label, throughputs, candidate, features of t.
PAIR_COLUMNS: tuple[str, ...] = (
    *META_COLUMNS,
    "op",
    "label",
    "mbps",
    "next_mbps",
    *CANDIDATE_COLUMNS.values(),
    *FEATURE_COLUMNS,
)

_ALIASES = {"workload": "scenario", "iteration": "seed"}
_SERIES = ["file", "workload", "iteration", "osc"]
_MPPR = "osc_rpc_configuration_current.mppr_value"
_MRIF = "osc_rpc_configuration_current.mrif_value"


def dataset_files(paths: Iterable[str | Path]) -> list[Path]:
    """The Parquet files named by ``paths`` (a directory: its ``*.parquet``, sorted); UserError if none."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(path.glob("*.parquet"))
            if not found:
                raise UserError(f"{path}: directory holds no *.parquet file")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{path}: no such dataset file or directory")
    if not files:
        raise UserError("no dataset given")
    return files


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (recorded in a model's metadata for each training file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parquet_columns(path: str | Path) -> list[str]:
    """The column names of a Parquet file; UserError, in the same words for every command, if it is not one."""
    import pyarrow.parquet as pq

    try:
        names: list[str] = pq.read_schema(path).names
    except Exception as err:  # pyarrow raises several types for a file that is not Parquet
        raise UserError(f"{path}: not a readable Parquet file ({type(err).__name__}: {err})") from None
    return names


def _read_parquet(path: Path) -> pd.DataFrame:
    names = parquet_columns(path)
    wanted = {*RAW_COLUMNS, *FEATURE_COLUMNS, *META_COLUMNS, *_ALIASES.values(), "client"}
    columns = [name for name in names if name in wanted]
    frame: pd.DataFrame = pd.read_parquet(path, columns=columns)
    return frame


def not_numbers(df: pd.DataFrame, names: Sequence[str]) -> str | None:
    """Which of ``names`` in ``df`` hold values that cannot be read as numbers, in words; None if none.

    The dataset loaders check this first so that a damaged file is reported by column, not by a
    conversion error deep in :func:`~pfstune.features.from_dataset`.
    """
    bad = []
    for name in dict.fromkeys(names):
        if name not in df.columns or pd.api.types.is_numeric_dtype(df[name]):
            continue  # a numeric column needs no trial conversion (it would copy every value)
        try:
            df[name].to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            bad.append(name)
    if not bad:
        return None
    shown = ", ".join(bad[:4]) + (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
    return f"column{'s' if len(bad) > 1 else ''} {shown} hold{'' if len(bad) > 1 else 's'} values that are not numbers"


def check_present(frame: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    """UserError naming ``name``, the column and the first row if one of ``columns`` holds a null.

    For the columns that name a row's series (``workload``, ``osc``): a row without them belongs
    to no series, and grouping would drop it silently.
    """
    for column in columns:
        missing = frame[column].isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise UserError(
                f"{name}: column {column} is empty (null) in {int(missing.sum())} row(s), the first at row {row}; "
                "every row needs its workload and osc"
            )


def whole_numbers(frame: pd.DataFrame, column: str, name: str) -> np.ndarray:
    """``frame[column]`` as int64; UserError naming ``name`` and the first row that is not a whole number.

    Numbers stored as text are read; NaN, fractions and values beyond int64 are refused (a NaN
    cast to int64 silently becomes -2^63).
    """
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    whole = np.isfinite(values) & (values == np.floor(values)) & (np.abs(values) < 2.0**63)
    if not whole.all():
        row = int(np.flatnonzero(~whole)[0])
        raise UserError(f"{name}: column {column} must hold whole numbers; row {row} has {frame[column].iloc[row]!r}")
    return values.astype(np.int64)


def normalize(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """One file's rows in the loaded layout (:data:`META_COLUMNS` + features); ``name`` names it in errors.

    Schema (a) goes through :func:`~pfstune.features.from_dataset`, schema (b) is taken as is (see
    the module docstring).  Raises :class:`~pfstune.errors.UserError` naming what is missing.
    """
    frame = frame.copy(deep=False)
    for column, alias in _ALIASES.items():
        if column not in frame.columns and alias in frame.columns:
            frame[column] = frame[alias]
    missing_meta = [column for column in ("workload", "iteration", "osc", "observation_no") if column not in frame]
    if missing_meta:
        raise UserError(f"{name}: not a pfstune dataset: no column {', '.join(missing_meta)} (see pfstune.datasets)")
    problem = not_numbers(frame, ["iteration", "observation_no", *FEATURE_COLUMNS, *RAW_COLUMNS])
    if problem:
        raise UserError(f"{name}: {problem}")
    check_present(frame, ["workload", "osc"], name)
    for column in ("iteration", "observation_no"):  # before anything orders series by them
        frame[column] = whole_numbers(frame, column, name)
    if all(column in frame.columns for column in FEATURE_COLUMNS):
        features = frame[list(FEATURE_COLUMNS)].astype(np.float64)
        default_source = "unknown"
    elif all(column in frame.columns for column in RAW_COLUMNS):
        features = from_dataset(frame)
        default_source = "real"
    else:
        missing = [column for column in FEATURE_COLUMNS if column not in frame.columns]
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise UserError(f"{name}: not a pfstune dataset: lacks feature columns {shown} (see pfstune.datasets)")
    iteration = frame["iteration"].to_numpy(dtype=np.int64)
    observation = frame["observation_no"].to_numpy(dtype=np.int64)
    source = frame["source"].astype(str) if "source" in frame.columns else default_source
    osc = frame["osc"].astype(str)
    if "client" in frame.columns and len(frame) and frame.groupby(osc)["client"].nunique().max() > 1:
        osc = frame["client"].astype(str) + "/" + osc
    meta = pd.DataFrame(
        {
            "source": source,
            "file": name,
            "workload": frame["workload"].astype(str),
            "iteration": iteration,
            "osc": osc,
            "observation_no": observation,
        },
        index=frame.index,
    )
    out: pd.DataFrame = pd.concat([meta, features], axis=1).reset_index(drop=True)
    return out


def load_dataset(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Every row of the dataset files ``paths`` in the loaded layout (module docstring).

    Raises :class:`~pfstune.errors.UserError` for a missing or unreadable file, a file of another
    schema, and a dataset without rows.
    """
    frames = []
    for path in dataset_files(paths):
        frames.append(normalize(_read_parquet(path), str(path)))
    frame = pd.concat(frames, ignore_index=True)
    if frame.empty:
        raise UserError(f"dataset {', '.join(map(str, paths))} holds no rows")
    for column in ("source", "file", "workload", "osc"):
        frame[column] = frame[column].astype("category")
    return frame


def make_pairs(frame: pd.DataFrame, epsilon: float = EPSILON) -> pd.DataFrame:
    """Training pairs (:data:`PAIR_COLUMNS`) from a loaded dataset; the rules are in the module docstring.

    The result is ordered by series and ``observation_no`` of t, with a fresh index.
    """
    missing = [column for column in (*META_COLUMNS, *FEATURE_COLUMNS) if column not in frame.columns]
    if missing:
        raise ValueError(f"make_pairs needs a frame from load_dataset; it lacks {', '.join(missing[:4])}")
    series = frame.groupby(_SERIES, sort=False, observed=True).ngroup().to_numpy()
    observation = frame["observation_no"].to_numpy(dtype=np.int64)
    order = np.lexsort((observation, series))
    now, after = order[:-1], order[1:]
    mbps = frame["x_mbps"].to_numpy(dtype=np.float64)
    write = frame["x_dominant_write"].to_numpy(dtype=np.float64)
    mppr = frame[_MPPR].to_numpy(dtype=np.float64)
    mrif = frame[_MRIF].to_numpy(dtype=np.float64)
    real_first = (frame["source"].astype(str).to_numpy() == "real") & (observation == 0)
    keep = (
        (series[now] == series[after])
        & (observation[after] == observation[now] + 1)
        & (mbps[now] > 0)  # not idle, positive duration (NaN compares False)
        & ~np.isnan(write[now])
        & ~np.isnan(mbps[after])  # t+1 had a positive duration and known byte counts
        & ~np.isnan(mppr[after])
        & ~np.isnan(mrif[after])
        & ~real_first[now]
    )
    now, after = now[keep], after[keep]
    pairs = frame.iloc[now].reset_index(drop=True)
    label = mbps[after] / mbps[now] > 1.0 + epsilon  # DIAL's s_t+1 / s_t > 1 + epsilon (mbps[now] > 0)
    extra = pd.DataFrame(
        {
            "op": pd.Categorical.from_codes(write[now].astype(np.int8), categories=pd.Index(list(OPS))),
            "label": label.astype(np.int8),
            "mbps": mbps[now],
            "next_mbps": mbps[after],
            CANDIDATE_COLUMNS["max_pages_per_rpc"]: mppr[after].astype(np.int64),
            CANDIDATE_COLUMNS["max_rpcs_in_flight"]: mrif[after].astype(np.int64),
        }
    )
    out: pd.DataFrame = pd.concat([pairs[list(META_COLUMNS)], extra, pairs[list(FEATURE_COLUMNS)]], axis=1)
    return out


def select_iterations(frame: pd.DataFrame, iterations: Sequence[int], *, keep: bool) -> pd.DataFrame:
    """Rows (of a dataset or of pairs) whose ``iteration`` is in ``iterations`` (``keep``) or not."""
    mask = frame["iteration"].isin(list(iterations)).to_numpy()
    out: pd.DataFrame = frame[mask if keep else ~mask].reset_index(drop=True)
    return out
