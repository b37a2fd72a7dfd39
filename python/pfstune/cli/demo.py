"""``pfstune demo``: a short simulated run under the default and a few static configurations.

The scenario is built in: one client of the ``cloudlab-c6525`` preset (DIAL's testbed) reading
16 MiB at random offsets for 20 simulated seconds, the workload where DIAL's data shows small
RPCs with many in flight beating Lustre's default (1024 pages, 8 in flight).  The runs go in
parallel worker processes.  (The full demo, with the DIAL, IOPathTune and oracle tuners and a
report in ``./pfstune-demo/``, comes with the tuners.)
"""

from __future__ import annotations

import argparse
import os

from pfstune.cli._output import ProgressBar, format_table, print_json
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
        help="simulate a short scenario under a few configurations",
        description=(
            "Simulate 20 s of 16 MiB random reads on one client of DIAL's testbed (cloudlab-c6525) "
            "under Lustre's default configuration and a few static (max_pages_per_rpc, "
            "max_rpcs_in_flight) configurations, and print the throughput of each."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=main)


def _label(config: Config) -> str:
    if not config:
        return "default (1024, 8)"
    return f"({config['osc.max_pages_per_rpc']}, {config['osc.max_rpcs_in_flight']})"


def main(args: argparse.Namespace) -> int:
    """Run the demo configurations and print their throughput."""
    with ProgressBar(len(CONFIGS), "simulating", " runs", enabled=not args.json) as bar:
        report = sweep(DEMO_SCENARIO, "<demo>", {}, CONFIGS, os.cpu_count() or 1, lambda done, _total: bar.update(done))
    for result in report["results"]:
        result["label"] = _label(result["config"])
    if args.json:
        print_json(report)
        return 0
    baseline = report["results"][0]["mbps"]
    rows = [
        [r["label"], r["mbps"], f"{(r['mbps'] / baseline - 1) * 100:+.0f}%" if baseline else "-"]
        for r in report["results"]
    ]
    print(f"{report['scenario']}: 20 s of 16 MiB random reads, 1 client, cloudlab-c6525 (simulated)\n")
    print(format_table(["(max_pages_per_rpc, max_rpcs_in_flight)", "MB/s", "vs default"], rows))
    return 0
