"""``pfstune demo``: the first thing a new user runs.

Two short scenarios on a simulated cluster of DIAL's testbed (``cloudlab-c6525``) are benchmarked
with the harness of ``pfstune bench`` under Lustre's default configuration, the IOPathTune and
DIAL tuners (the agent in the loop, the shipped model for DIAL) and the oracle (the best static
dial99 configuration, found by sweeping all 99).  The terminal gets a table; the output directory
gets the bench report (``report.md`` with plots, ``bench.json``, ``runs.csv``) and the scenario
files, so every figure can be reproduced with ``pfstune bench``.

The scenarios are the cases the tuners exist for: random 16 MiB reads, where DIAL's real
measurements show small RPCs with many in flight beating the default (1024 pages, 8 in flight),
and a workload that changes halfway (sequential 16 MiB writes, then random 1 MiB reads), which a
tuner must follow.  The random reads last 60 s because IOPathTune decides once per 10 s period
(seed 001) and judges a step by the period after it: 20 s left it one step, judged as the run
ended.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pfstune.bench.harness import summary
from pfstune.cli._common import out_path, positive_int
from pfstune.cli._output import format_table, print_json
from pfstune.cli.bench import bench_and_report, check_out
from pfstune.errors import UserError

#: The demo's scenarios, by file name (written into the output directory, then benchmarked).
SCENARIOS: dict[str, str] = {
    "randomread-16m.yaml": """\
name: randomread-16m
# One client of DIAL's testbed reads 16 MiB at random offsets of a 100 GiB file on one OST.
seed: 1
duration: 60s
cluster:
  preset: cloudlab-c6525
  clients: 1
jobs:
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 100g}
""",
    "phase-change.yaml": """\
name: phase-change
# One client writes 16 MiB sequentially for 15 s, then reads 1 MiB at random offsets for 15 s.
seed: 1
duration: 30s
cluster:
  preset: cloudlab-c6525
  clients: 1
jobs:
  - {name: writer, client: 0, workload: filebench.seqwrite, iosize: 16m, filesize: 100g, stop: 15s}
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 1m, filesize: 100g, start: 15s}
""",
}

#: Printed under the table: why IOPathTune moves slowly (its period is seed 001's).
PERIOD_NOTE = (
    "iopathtune takes one step per 10 s period (seed 001) and judges it by the period after, "
    "so phase-change's 15 s phases leave it about one step each."
)

#: The tuners compared, in table order.
TUNERS = ("default", "iopathtune", "dial", "oracle")


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="benchmark the default, IOPathTune, DIAL and the oracle on two simulated scenarios",
        description=(
            "Simulate two short scenarios on one client of DIAL's testbed (cloudlab-c6525): 60 s of "
            "16 MiB random reads, and 30 s that change from 16 MiB sequential writes to 1 MiB random "
            "reads. Each runs under Lustre's default configuration, with the IOPathTune and DIAL "
            "tuners in the loop, and under the oracle (the best of the 99 static dial99 "
            "configurations, found by sweeping). Prints a table and writes report.md with plots, "
            "bench.json, runs.csv and the scenario files into --out. Takes about a minute on 2 idle cores."
        ),
    )
    parser.add_argument(
        "--out", type=out_path, default=Path("pfstune-demo"), metavar="DIR", help="report directory (./pfstune-demo)"
    )
    parser.add_argument("--jobs", type=positive_int, metavar="N", help="local worker processes (default: one per core)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON (without time series)")
    parser.set_defaults(func=main)


def write_scenarios(out: Path) -> list[str]:
    """Write the demo's scenario files under ``out/scenarios``; return their paths."""
    folder = out / "scenarios"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in SCENARIOS.items():
            (folder / name).write_text(text, encoding="utf-8")
    except OSError as err:
        raise UserError(f"--out {out}: cannot write there: {err.strerror or err}") from None
    return [str(folder / name) for name in SCENARIOS]


def table_rows(document: dict[str, Any]) -> list[list[str]]:
    """One row per scenario and tuner: MB/s, ratio to the default and to the oracle, configuration."""
    rows = []
    for scenario in document["scenarios"]:
        for tuner, r in scenario["results"].items():
            vs_default, vs_oracle = r.get("vs_default"), r.get("vs_oracle")
            config = scenario["oracle_configs"].get("1") if tuner == "oracle" else None
            # (max_pages_per_rpc, max_rpcs_in_flight) of the static oracle; tuners change theirs
            rows.append(
                [
                    scenario["name"],
                    tuner,
                    f"{r['mbps']:.1f}",
                    "-" if vs_default is None else f"{(vs_default - 1) * 100:+.0f}%",
                    "-" if vs_oracle is None else f"{vs_oracle:.2f}",
                    "" if not config else "static ({}, {})".format(*config.values()),
                ]
            )
    return rows


def main(args: argparse.Namespace) -> int:
    """Run the demo bench, write the report, print the table (or JSON)."""
    check_out(args.out)
    paths = write_scenarios(args.out)

    def show(document: dict[str, Any], report: Path | None) -> None:
        if args.json:
            print_json(summary(document))
            return
        print("Simulated cluster: DIAL's testbed (cloudlab-c6525), one client; MB/s of application I/O.\n")
        headers = ["scenario", "tuner", "MB/s", "vs default", "vs oracle", "configuration"]
        print(format_table(headers, table_rows(document)))
        print(f"\n{PERIOD_NOTE}")
        if report is not None:
            print(f"\nreport with plots: {report}")
        print(f"reproduce or extend: pfstune bench {' '.join(paths)} --tuners {','.join(TUNERS)}")

    bench_and_report(
        args.out, "simulating", args.json, show, scenario_paths=paths, tuners=TUNERS, seeds=[1], jobs=args.jobs
    )
    return 0
