"""``pfstune collect``: record simulated training data the way DIAL's collector recorded the real data."""

from __future__ import annotations

import argparse
import os

from pfstune.cli._common import duration_text, out_path, positive_int, seed_list
from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.collect import collect


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``collect``."""
    parser = subparsers.add_parser(
        "collect",
        help="record simulated training data under random configurations",
        description=(
            "Run each SCENARIO on the simulator once per seed the way DIAL's collector ran on the "
            "real cluster: the agent probes every OSC every probe interval (0.5 s) and after every "
            "probe writes a random dial99 configuration (the random tuner) to every OSC. Every "
            "feature row the agent computes is written, one Parquet file per scenario and seed "
            "(<scenario>-seed<k>.parquet, rows of idle OSCs included), with manifest.json. Runs go to "
            "local worker processes, or to a Dask cluster with --scheduler; this process writes every "
            "file as its run finishes. If runs fail, the others' files and the manifest are still "
            "written, and the exit status is 1. Collecting into a directory that holds an earlier "
            "collection adds to it: its manifest lists the earlier runs whose files are still there "
            "beside the new ones (a file written again is listed with its new run)."
        ),
    )
    parser.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario YAML files")
    parser.add_argument(
        "--out",
        required=True,
        type=out_path,
        metavar="DIR",
        help="output directory (created if missing; an earlier collection there is added to)",
    )
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seeds", type=seed_list, metavar="N,N,...", help="seeds to run each scenario with (default: its own seed)"
    )
    seeds.add_argument("--repeat", type=positive_int, metavar="N", help="run each scenario with seeds 1..N")
    parser.add_argument(
        "--duration",
        type=duration_text,
        metavar="D",
        help="simulated duration of every run, e.g. 120s (default: each scenario's; a shorter one drops the jobs "
        "that would start after it)",
    )
    parser.add_argument("--jobs", type=positive_int, metavar="N", help="local worker processes (default: one per core)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS (tcp://host:8786)")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Collect and print one row per run (or the manifest)."""
    seeds = args.seeds if args.seeds is not None else list(range(1, args.repeat + 1)) if args.repeat else None
    # Simulated seconds of the finished runs: the bar moves when a run ends, not during it.
    with ProgressBar(1, "collecting", " s", enabled=not args.json) as bar:

        def progress(done: float, total: float) -> None:
            bar.total = round(total)
            bar.update(round(done))

        manifest = collect(
            args.scenarios, args.out, seeds, args.jobs, args.duration, progress, scheduler=args.scheduler
        )
    if args.json:
        print_json(manifest)
        return 0
    rows = [
        [run["file"], run["rows"], run["active_rows"], run["osc_mbps"], run["wall_seconds"]] for run in manifest["runs"]
    ]
    print(format_table(["file", "rows", "active rows", "OSC MB/s", "wall s"], rows))
    earlier = f", {manifest['earlier_runs']} of them from earlier collections," if manifest["earlier_runs"] else ""
    print(
        f"{manifest['rows']} rows ({manifest['active_rows']} with OSC traffic) in {len(rows)} files{earlier} "
        f"in {manifest['wall_seconds']:.1f} s; manifest: {os.path.join(args.out, 'manifest.json')}"
    )
    return 0
