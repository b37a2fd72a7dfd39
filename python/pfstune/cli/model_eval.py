"""``pfstune model eval``: ROC AUC, precision at DIAL's threshold and calibration of a model on datasets."""

from __future__ import annotations

import argparse

from pfstune.cli._output import print_json
from pfstune.cli.train import evaluation_table, iteration_list
from pfstune.errors import UserError


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``eval`` (under ``pfstune model``)."""
    parser = subparsers.add_parser(
        "eval",
        help="score a model on datasets: ROC AUC, precision at 0.8, calibration",
        description=(
            "Build the training pairs of DATASET (as pfstune train does) and score MODELDIR's classifiers on them: "
            "per operation the ROC AUC, the precision of the predictions above DIAL's threshold 0.8, and a "
            "calibration table [mean predicted, observed rate, count] per probability decile. MODELDIR 'default' "
            "is the model shipped with pfstune."
        ),
    )
    parser.add_argument("model", metavar="MODELDIR", help="model directory, or 'default'")
    parser.add_argument("datasets", nargs="+", metavar="DATASET", help="Parquet file or directory of them")
    parser.add_argument(
        "--iterations", type=iteration_list, metavar="LIST", help="only these iterations, e.g. 17-20 (held out)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Evaluate and print the figures."""
    from pfstune.datasets import load_dataset, make_pairs, select_iterations
    from pfstune.models import load_model
    from pfstune.models.evaluation import evaluate

    model = load_model(args.model)
    pairs = make_pairs(load_dataset(args.datasets))
    if args.iterations:
        pairs = select_iterations(pairs, args.iterations, keep=True)
    if pairs.empty:
        raise UserError(
            "the dataset gives no pairs to evaluate on" + (" in those iterations" if args.iterations else "")
        )
    report = evaluate(model, pairs)
    if args.json:
        print_json(report)
        return 0
    print(evaluation_table(report))
    for op, figures in report.items():
        print(f"\n{op} calibration (mean predicted, observed rate, pairs):")
        for predicted, observed, count in figures["calibration"]:
            print(f"  {predicted:5.3f}  {observed:5.3f}  {count:>8,}")
    return 0
