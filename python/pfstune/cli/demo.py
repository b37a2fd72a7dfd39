"""``pfstune demo``: a short simulated run under the default, the tuners, and a few static configurations.

The scenario is built in: one client of the ``cloudlab-c6525`` preset (DIAL's testbed) reading
16 MiB at random offsets for 20 simulated seconds, the workload where DIAL's data shows small
RPCs with many in flight beating Lustre's default (1024 pages, 8 in flight).  It runs with the
``iopathtune`` and ``dial`` tuners in the loop (the agent on the sim backend), and under a few
static configurations; the static runs go in parallel worker processes.  (The full demo, with
the oracle and a report in ``./pfstune-demo/``, comes with the benchmark harness.)
"""

from __future__ import annotations

import argparse
import os

from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.runs import simulate
from pfstune.sim.scenario import parse_scenario
from pfstune.sim.sweep import Config, sweep

DEMO_SCENARIO = """\
name: demo-randomread-16m
seed: 1
duration: 20s
cluster:
  preset: cloudlab-c6525
  clients: 1
jobs:
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 100g}
"""

#: Tuners run in the loop, beside the static configurations.
TUNERS = ("iopathtune", "dial")

#: The empty configuration is Lustre's default (max_pages_per_rpc 1024, max_rpcs_in_flight 8).
CONFIGS: list[Config] = [
    {},
    {"osc.max_pages_per_rpc": 256, "osc.max_rpcs_in_flight": 32},
    {"osc.max_pages_per_rpc": 16, "osc.max_rpcs_in_flight": 128},
    {"osc.max_pages_per_rpc": 8, "osc.max_rpcs_in_flight": 128},
]


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="simulate a short scenario: default, tuners and static configurations",
        description=(
            "Simulate 20 s of 16 MiB random reads on one client of DIAL's testbed (cloudlab-c6525) "
            "under Lustre's default configuration, with the IOPathTune and DIAL tuners in the loop, and "
            "under a few static (max_pages_per_rpc, max_rpcs_in_flight) configurations; print the "
            "throughput of each."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=main)


def _label(config: Config) -> str:
    if not config:
        return "default (1024, 8)"
    return f"({config['osc.max_pages_per_rpc']}, {config['osc.max_rpcs_in_flight']})"


def _figures(run: dict[str, object]) -> dict[str, object]:
    return {key: run[key] for key in ("mbps", "osc_mbps", "read_mbps", "write_mbps")}


def main(args: argparse.Namespace) -> int:
    """Run the demo configurations and print their throughput."""
    with ProgressBar(len(CONFIGS) + len(TUNERS), "simulating", " runs", enabled=not args.json) as bar:
        report = sweep(DEMO_SCENARIO, "<demo>", {}, CONFIGS, os.cpu_count() or 1, lambda done, _total: bar.update(done))
        for result in report["results"]:
            result["label"] = _label(result["config"])
        scenario = parse_scenario(DEMO_SCENARIO, "<demo>")
        for done, tuner in enumerate(TUNERS, start=len(CONFIGS) + 1):
            run = simulate(scenario, tuner)
            changes = int(run["decisions"])
            label = f"tuner {tuner} ({changes} change{'' if changes == 1 else 's'})"
            report["results"].insert(
                done - len(CONFIGS), {"config": {}, "tuner": tuner, "label": label, **_figures(run)}
            )
            bar.update(done)
    if args.json:
        print_json(report)
        return 0
    baseline = report["results"][0]["mbps"]
    rows = [
        [r["label"], r["mbps"], f"{(r['mbps'] / baseline - 1) * 100:+.0f}%" if baseline else "-"]
        for r in report["results"]
    ]
    print(f"{report['scenario']}: 20 s of 16 MiB random reads, 1 client, cloudlab-c6525 (simulated)\n")
    print(format_table(["tuner or (max_pages_per_rpc, max_rpcs_in_flight)", "MB/s", "vs default"], rows))
    return 0
