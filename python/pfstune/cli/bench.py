"""``pfstune bench``: scenarios x tuners x seeds on the simulator, with a report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pfstune.bench.harness import run_bench, summary
from pfstune.bench.report import write_report
from pfstune.cli._common import duration_text, out_path, positive_int, seed_list
from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.errors import UserError
from pfstune.outputs import no_empty_directory
from pfstune.tuners import TUNERS

DEFAULT_TUNERS = "default,dial,iopathtune,oracle"


def _tuners(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in TUNERS]
    if not names or unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give distinct tuners separated by commas, from {', '.join(sorted(TUNERS))}"
        )
    return names


def _tuner_option(text: str) -> tuple[str, str, str]:
    tuner, sep, rest = text.partition(":")
    key, eq, value = rest.partition("=")
    if not sep or not eq or not tuner or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not TUNER:KEY=VALUE (e.g. iopathtune:period=5)")
    return tuner, key, value


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bench``."""
    parser = subparsers.add_parser(
        "bench",
        help="compare tuners on simulated scenarios, with a report",
        description=(
            "Run every SCENARIO under every tuner with every seed on the simulator and report application "
            "throughput (mean and spread over seeds), the ratio to the oracle (the best static dial99 "
            "configuration, found by sweeping: 99 extra runs per scenario and seed) and to the default, "
            "convergence after each phase change, and decision time. Writes bench.json, runs.csv, "
            "report.md and PNG plots into --out. Runs go to local worker processes, or to a Dask cluster "
            "with --scheduler."
        ),
    )
    parser.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML files")
    parser.add_argument(
        "--tuners", type=_tuners, default=_tuners(DEFAULT_TUNERS), metavar="LIST", help=f"default {DEFAULT_TUNERS}"
    )
    parser.add_argument("--seeds", type=seed_list, default=[1], metavar="N,N,...", help="seeds (default 1)")
    parser.add_argument(
        "--duration",
        type=duration_text,
        metavar="D",
        help="override every scenario's duration (a shorter one drops the jobs that would start after it)",
    )
    parser.add_argument(
        "--tuner-option",
        dest="tuner_options",
        type=_tuner_option,
        action="append",
        default=[],
        metavar="TUNER:KEY=VALUE",
        help="an option of one tuner, e.g. iopathtune:period=5 (repeatable)",
    )
    parser.add_argument("--jobs", type=positive_int, metavar="N", help="local worker processes (default: one per core)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS (tcp://host:8786)")
    parser.add_argument(
        "--out", type=out_path, default=Path("pfstune-bench"), metavar="DIR", help="report directory (./pfstune-bench)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON (without time series)")
    parser.set_defaults(func=main)


def check_out(out: Path) -> None:
    """Make the report directory before any run, so that a bad ``--out`` costs no simulation."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"--out {out}: cannot make the directory: {err.strerror or err}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UserError(f"--out {out}: directory is not writable")
    if (out / "bench.json").exists():
        # replaced file by file: an earlier report's plots of scenarios not run now would stay
        # beside the new report, so say so rather than mix two runs unnoticed
        print(
            f"pfstune: {out} holds a report already: its bench.json, runs.csv, report.md and the plots "
            "of this run's scenarios are replaced; other files stay",
            file=sys.stderr,
        )


def bench_and_report(
    out: Path, label: str, quiet: bool, show: Callable[[dict[str, Any], Path | None], None], **bench: Any
) -> None:
    """:func:`run_bench` (keyword arguments ``bench``) under a progress bar, the report in ``out``, then
    ``show(document, report.md's path)``.

    If the report cannot be written, ``out`` keeps what it held (the files are replaced together),
    the results are still shown (``show(document, None)``: hours of runs are not lost from sight)
    and a one-line UserError follows.
    """
    with ProgressBar(1, label, " runs", enabled=not quiet) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done)

        document = run_bench(**bench, progress=progress)
    try:
        files = write_report(document, out)
    except OSError as err:
        show(document, None)
        raise UserError(
            f"--out {out}: cannot write the report: {err.strerror or err}; the results shown are not saved "
            "and the directory keeps what it held"
        ) from None
    show(document, files[2])


def main(args: argparse.Namespace) -> int:
    """Run the bench, write the report, print the table or JSON."""
    options: dict[str, dict[str, str]] = {}
    for tuner, key, value in args.tuner_options:
        if tuner not in args.tuners:
            raise UserError(f"--tuner-option {tuner}:{key}: {tuner} is not among --tuners")
        options.setdefault(tuner, {})[key] = value
    overrides: dict[str, Any] = {"duration": args.duration} if args.duration else {}

    def show(document: dict[str, Any], report: Path | None) -> None:
        if args.json:
            print_json(summary(document))
            return
        rows = []
        for scenario in document["scenarios"]:
            for tuner, r in scenario["results"].items():
                vs = r["vs_oracle"]
                rows.append(
                    [
                        scenario["name"],
                        tuner,
                        f"{r['mbps']:.1f}",
                        f"{r['mbps_std']:.1f}",
                        "-" if vs is None else f"{vs:.3f}",
                    ]
                )
        print(format_table(["scenario", "tuner", "MB/s", "std", "vs oracle"], rows))
        if report is not None:
            print(f"\nreport: {report}")

    with no_empty_directory(args.out):  # made before the scenarios and tuners are checked
        check_out(args.out)
        bench_and_report(
            args.out,
            "benchmarking",
            args.json,
            show,
            scenario_paths=args.scenarios,
            tuners=args.tuners,
            seeds=args.seeds,
            overrides=overrides,
            options=options,
            jobs=args.jobs,
            scheduler=args.scheduler,
        )
    return 0
