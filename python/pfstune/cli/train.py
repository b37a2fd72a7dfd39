"""``pfstune train``: fit DIAL's read and write classifiers on datasets and save them as a model directory."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # imported where used: every pfstune command loads this module

from pfstune.cli._common import int_between, out_path, positive_int
from pfstune.cli._output import format_table, print_json
from pfstune.errors import UserError
from pfstune.outputs import no_empty_directory

#: Share of the series of each workload held out to measure AUC when no --holdout-iterations is given.
DEFAULT_VALIDATION_FRACTION = 0.2


#: The most iterations a list may name (a dataset has tens; a typo like 1-1000000000 must not
#: fill the memory).
MAX_ITERATIONS = 1_000_000


def iteration_list(text: str) -> list[int]:
    """argparse type: ``17,18`` or ``17-20`` or a mix (``1,3-5``) -> sorted unique iterations."""
    values: set[int] = set()
    try:
        for part in text.split(","):
            low, sep, high = part.strip().partition("-")
            first, last = int(low), int(high) if sep else int(low)
            if last < first or last - first >= MAX_ITERATIONS or len(values) >= MAX_ITERATIONS:
                raise ValueError
            values.update(range(first, last + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of iterations like 17,18 or 17-20 (at most {MAX_ITERATIONS:,} of them)"
        ) from None
    return sorted(values)


def _ranges(values: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``1-3,7``: iterations as ``--holdout-iterations`` takes them."""
    runs: list[list[int]] = []
    for value in sorted(set(values)):
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction in [0, 1)")
    return value


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``train``."""
    parser = subparsers.add_parser(
        "train",
        help="train the DIAL model (read and write classifiers) on datasets",
        description=(
            "Build training pairs (features of interval t, configuration of t+1) -> [throughput of t+1 > 1.15 x "
            "throughput of t] from DATASET files (the real dataset's schema or pfstune collect's; see "
            "pfstune.datasets), train one LightGBM classifier for reads and one for writes, report the ROC AUC "
            "on a held-out part and save the model (LightGBM text + model.json) in MODELDIR."
        ),
    )
    parser.add_argument("datasets", nargs="+", metavar="DATASET", help="Parquet file or directory of them")
    parser.add_argument(
        "--out",
        required=True,
        type=out_path,
        metavar="MODELDIR",
        help="directory to write the model into; a model already there is replaced only once the new one is "
        "written in full",
    )
    parser.add_argument(
        "--holdout-iterations",
        type=iteration_list,
        metavar="LIST",
        help="iterations (e.g. 17-20) kept out of training and used for the AUC; the saved model never saw them",
    )
    parser.add_argument(
        "--validation-fraction",
        type=_fraction,
        default=DEFAULT_VALIDATION_FRACTION,
        metavar="F",
        help="without --holdout-iterations: share of the series of each workload held out by a first fit that measures "
        "the AUC, before the saved model is fit on everything (0: skip; default %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int_between(0, _MAX_SEED),
        default=0,
        metavar="N",
        help=f"random seed, 0 to {_MAX_SEED} (default 0)",
    )
    parser.add_argument(
        "--threads",
        type=_threads,
        default=2,
        metavar="N",
        help=f"LightGBM threads, 1 to {MAX_THREADS} (4 per CPU of this machine; default 2)",
    )
    parser.add_argument("--rounds", type=positive_int, metavar="N", help="boosting rounds per classifier")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=main)


def _say(args: argparse.Namespace, text: str) -> None:
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)


def _counts(pairs: pd.DataFrame) -> dict[str, int]:
    from pfstune.datasets import OPS

    ops = pairs["op"].astype(str)
    return {op: int((ops == op).sum()) for op in OPS}


#: The most LightGBM threads: more than a few per CPU only adds switching, and tens of thousands
#: make thread creation fail or crash the process.
MAX_THREADS = 4 * (os.cpu_count() or 1)


def _threads(text: str) -> int:
    """argparse type for ``--threads``: 1 to :data:`MAX_THREADS`."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"{value} is more than {MAX_THREADS} (4 per CPU of this machine)")
    return value


#: LightGBM takes its seed as a C int.
_MAX_SEED = 2**31 - 1


def _validation_split(pairs: pd.DataFrame, fraction: float, seed: int) -> np.ndarray:
    """Mask of the pairs of a random ``fraction`` of whole series (file, workload, iteration, osc).

    Drawn per (source, workload), at least one series of each that has two or more, so that
    every workload is both trained on and scored.
    """
    import pandas as pd

    keys = ["file", "workload", "iteration", "osc"]
    series = pairs[["source", *keys]].drop_duplicates(keys).sort_values(keys, kind="stable")
    rng = np.random.default_rng(seed)
    chosen = []
    for _, group in series.groupby(["source", "workload"], sort=True, observed=True):
        if len(group) >= 2:
            take = min(len(group) - 1, max(1, round(fraction * len(group))))
            chosen.append(group.iloc[rng.permutation(len(group))[:take]])
    if not chosen:
        return np.zeros(len(pairs), dtype=bool)
    held = pd.concat(chosen)[keys]
    mask: np.ndarray = pairs[keys].merge(held.assign(_held=True), on=keys, how="left")["_held"].notna().to_numpy()
    return mask


def run_training(
    datasets: Sequence[str],
    out: str | Path,
    *,
    holdout_iterations: Sequence[int] | None = None,
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
    seed: int = 0,
    threads: int = 2,
    rounds: int | None = None,
    say: Any = None,
) -> dict[str, Any]:
    """Load, pair, (hold out, evaluate,) fit and save; return the report ``pfstune train --json`` prints."""

    def note(text: str) -> None:
        if say is not None:
            say(text)

    # Before the minutes of training, not after them: the model directory must be writable.
    with no_empty_directory(Path(out)):
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            reason = "it exists and is not a directory" if isinstance(err, FileExistsError) else err.strerror or err
            raise UserError(f"--out {out}: cannot create the model directory: {reason}") from None
        return _train(datasets, out, holdout_iterations, validation_fraction, seed, threads, rounds, note)


def _train(
    datasets: Sequence[str],
    out: str | Path,
    holdout_iterations: Sequence[int] | None,
    validation_fraction: float,
    seed: int,
    threads: int,
    rounds: int | None,
    note: Any,
) -> dict[str, Any]:
    """The body of :func:`run_training`, once ``out`` exists."""
    from pfstune.datasets import dataset_files, file_sha256, load_dataset, make_pairs
    from pfstune.models.evaluation import evaluate
    from pfstune.models.gbdt import DEFAULT_ROUNDS, GBDTModel

    started = time.perf_counter()
    files = dataset_files(datasets)
    note(f"reading {len(files)} dataset file(s)")
    frame = load_dataset(files)
    rows_per_file = frame["file"].astype(str).value_counts()
    data: list[dict[str, Any]] = [
        {
            "path": str(path),
            "name": path.name,
            "sha256": file_sha256(path),
            "rows": int(rows_per_file.get(str(path), 0)),
        }
        for path in files
    ]
    sources = {str(k): int(v) for k, v in frame["source"].astype(str).value_counts().sort_index().items()}
    pairs = make_pairs(frame)
    del frame
    if pairs.empty:
        raise UserError("the dataset gives no training pairs (every interval idle, or no consecutive intervals)")
    note(f"{sum(d['rows'] for d in data):,} rows -> {len(pairs):,} pairs ({_describe_counts(_counts(pairs))})")

    def new_model() -> GBDTModel:
        return GBDTModel(num_boost_round=rounds or DEFAULT_ROUNDS, seed=seed, threads=threads)

    holdout: dict[str, Any]
    if holdout_iterations:
        held = pairs["iteration"].isin(list(holdout_iterations)).to_numpy()
        holdout = {"kind": "iterations", "iterations": list(holdout_iterations)}
    elif validation_fraction > 0 and (held := _validation_split(pairs, validation_fraction, seed)).any():
        holdout = {"kind": "series", "fraction": validation_fraction, "seed": seed}
    else:
        held = np.zeros(len(pairs), dtype=bool)
        holdout = {"kind": "none"}
        if validation_fraction > 0:
            note("no workload has two series: no validation fit, no AUC")
    train, test = pairs[~held], pairs[held]
    if holdout["kind"] != "none" and (train.empty or test.empty):
        if holdout["kind"] == "iterations":
            asked = _ranges(list(holdout_iterations or []))
            present = _ranges([int(i) for i in pairs["iteration"].unique()])
            what = f"--holdout-iterations {asked} (the data has iterations {present})"
        else:
            what = f"--validation-fraction {validation_fraction}"
        raise UserError(f"{what} leaves {len(train)} training and {len(test)} held-out pairs")
    holdout["pairs"] = _counts(test)

    evaluation = None
    fit_seconds = 0.0
    if holdout["kind"] == "series":
        note(f"validation fit on {len(train):,} pairs, {len(test):,} held out")
        check = new_model()
        check.fit(train)
        evaluation = evaluate(check, test)
        train = pairs  # the saved model sees every pair
    model = new_model()
    note(f"training on {len(train):,} pairs ({_describe_counts(_counts(train))})")
    fit_start = time.perf_counter()
    model.fit(train, provenance={"data": data, "sources": sources})
    fit_seconds = time.perf_counter() - fit_start
    if holdout["kind"] == "iterations":
        evaluation = evaluate(model, test)
    training = model.metadata["training"]
    training["holdout"] = holdout
    training["evaluation"] = evaluation
    training["fit_seconds"] = round(fit_seconds, 3)
    try:
        model.save(out)
    except OSError as err:
        raise UserError(f"--out {out}: cannot write the model: {err.strerror or err}") from None
    note(f"model saved in {out}")
    return {
        "out": str(out),
        "files": data,
        "rows": sum(d["rows"] for d in data),
        "sources": sources,
        "pairs": _counts(pairs),
        "train_pairs": _counts(train),
        "holdout": holdout,
        "evaluation": evaluation,
        "fit_seconds": round(fit_seconds, 3),
        "seconds": round(time.perf_counter() - started, 3),
    }


def _describe_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{op} {n:,}" for op, n in counts.items())


def evaluation_table(evaluation: dict[str, dict[str, Any]]) -> str:
    """The per-op figures of an evaluation as a text table."""
    rows = []
    for op, figures in evaluation.items():
        precision_key = next(key for key in figures if key.startswith("precision_at_"))
        rows.append(
            [
                op,
                figures["rows"],
                figures["positives"],
                "-" if figures["auc"] is None else f"{figures['auc']:.4f}",
                "-" if figures[precision_key] is None else f"{figures[precision_key]:.3f}",
                figures["above_threshold"],
            ]
        )
    threshold = precision_key.removeprefix("precision_at_")
    headers = ["op", "pairs", "positives", "ROC AUC", f"precision@{threshold}", f"p>{threshold}"]
    return format_table(headers, rows)


def main(args: argparse.Namespace) -> int:
    """Train and save; print rows, pairs and the held-out figures."""
    report = run_training(
        args.datasets,
        args.out,
        holdout_iterations=args.holdout_iterations,
        validation_fraction=args.validation_fraction,
        seed=args.seed,
        threads=args.threads,
        rounds=args.rounds,
        say=lambda text: _say(args, text),
    )
    if args.json:
        print_json(report)
        return 0
    print(f"trained in {report['fit_seconds']:.1f} s ({report['seconds']:.1f} s in all)")
    if report["evaluation"] is None:
        print("no held-out pairs: no AUC (give --holdout-iterations or --validation-fraction)")
    else:
        holdout = report["holdout"]
        what = (
            f"iterations {','.join(map(str, holdout['iterations']))}"
            if holdout["kind"] == "iterations"
            else f"{holdout['fraction']:g} of the series (validation fit; the saved model saw all pairs)"
        )
        print(f"held out: {what}")
        print(evaluation_table(report["evaluation"]))
    return 0
