"""``pfstune replay``: score a tuner offline on recorded per-OSC measurements (../shared/docs/design.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pfstune.cli._common import add_tuner_option_argument, out_path
from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.errors import UserError
from pfstune.outputs import replacing
from pfstune.tuners import TUNERS, make_tuner, tuner_options


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``replay``."""
    parser = subparsers.add_parser(
        "replay",
        help="score a tuner offline on recorded measurements",
        description=(
            "Replay a tuner over every OSC series of DATASET (the schema of ../shared/data/dial-lustre): at each "
            "row it proposes the next configuration; the proposal is scored by the dataset's own mean "
            "throughput of that configuration for that workload, over the best configuration's. The "
            "default (1024, 8) is scored the same way (the 'default' column). The recording does not "
            "follow the proposals, so '--tuner default', which keeps what is in force, keeps each row's "
            "recorded configuration and scores the collector's own (random) choices."
        ),
    )
    parser.add_argument("dataset", nargs="+", metavar="DATASET", help="Parquet file(s)")
    parser.add_argument("--tuner", required=True, metavar="NAME", help=f"one of {', '.join(sorted(TUNERS))}")
    parser.add_argument("--model", metavar="MODELDIR", help="model directory (tuners with a model, e.g. dial)")
    add_tuner_option_argument(parser)
    parser.add_argument(
        "--out",
        type=out_path,
        metavar="DECISIONS.parquet",
        help="write one decision per input row (not over a DATASET file; an earlier file is replaced once the new "
        "one is written in full)",
    )
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.set_defaults(func=main)


def _same_file(out: Path, dataset: str) -> bool:
    """Whether ``out`` names the file ``dataset`` (by another path or link too)."""
    try:
        return os.path.samefile(out, dataset)
    except OSError:  # either is missing: replay reports a missing dataset itself
        return False


def main(args: argparse.Namespace) -> int:
    """Replay and print the scores."""
    # here, not at the top: pandas is most of every pfstune command's start-up time
    from pfstune.replay import DEFAULT_CONFIG, load_recording, replay

    options = dict(args.tuner_options)
    if args.model:
        if args.tuner in TUNERS and "model" not in tuner_options(args.tuner):
            with_model = [name for name in TUNERS if "model" in tuner_options(name)]
            raise UserError(f"--model: tuner {args.tuner} takes no model (tuners with one: {', '.join(with_model)})")
        options["model"] = args.model
    if args.tuner == "oracle" and not options:
        raise UserError(
            "the oracle is replay's yardstick: every score is value(proposal) / value(best configuration "
            "of the workload), so the oracle scores 1.0 by definition"
        )
    tuner = make_tuner(args.tuner, options)
    if args.out is not None and args.out.is_dir():
        raise UserError(f"--out {args.out}: is a directory; name the file, e.g. {args.out / 'decisions.parquet'}")
    if args.out is not None and not args.out.parent.is_dir():
        raise UserError(f"--out {args.out}: {args.out.parent} is not a directory")
    if args.out is not None and not os.access(args.out.parent, os.W_OK):
        raise UserError(f"--out {args.out}: directory {args.out.parent} is not writable")
    if args.out is not None and any(_same_file(args.out, path) for path in args.dataset):
        raise UserError(f"--out {args.out}: is one of the DATASET files; the decisions would replace the recording")
    data = load_recording(args.dataset)
    with ProgressBar(len(data), "replaying", "rows", enabled=not args.json) as bar:
        done = 0

        def advance(rows: int) -> None:
            nonlocal done
            done += rows
            bar.update(done)

        result = replay(data, tuner, progress=advance)
    if args.out is not None:
        try:
            with replacing(args.out) as partial:  # an earlier file stays whole if the write fails
                result.decisions.to_parquet(partial, index=False)
        except OSError as err:
            raise UserError(f"--out {args.out}: cannot write the decisions: {err.strerror or err}") from None
    summary = {"tuner": args.tuner, **result.summary()}
    if args.json:
        print_json(summary)
        return 0
    rows = [
        [
            name,
            "-" if w["score"] is None else f"{w['score']:.3f}",
            "-" if w["default_score"] is None else f"{w['default_score']:.3f}",
            str(w["rows"]),
        ]
        for name, w in summary["workloads"].items()
    ]
    print(format_table(["workload", args.tuner, "default", "rows"], rows))
    if summary["mean_score"] is not None:
        default = summary["mean_default_score"]
        shown = "-" if default is None else f"{default:.3f}"
        print(f"mean: {args.tuner} {summary['mean_score']:.3f}, default {shown}")
    if summary["no_score"]:
        print("no interval moved data in: " + ", ".join(summary["no_score"]) + " (no score; left out of the means)")
    if summary["no_default_score"]:
        print(
            f"no interval under the default {DEFAULT_CONFIG} was recorded for: "
            + ", ".join(summary["no_default_score"])
            + " (left out of the default's mean)"
        )
    return 0
