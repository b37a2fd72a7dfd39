"""``pfstune sim sweep``: one static run per configuration of tunables, in parallel."""

from __future__ import annotations

import argparse
import os
import sys

from pfstune.cli._common import add_scenario_arguments, positive_int, scenario_overrides, tunable_name
from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.errors import UserError
from pfstune.sim.scenario import parse_scenario, read_scenario_text
from pfstune.sim.sweep import GRIDS, grid_configs, scenario_grid, sweep


def _param(text: str) -> tuple[str, list[int]]:
    name, sep, values = text.partition("=")
    try:
        numbers = [int(v, 0) for v in values.split(",")]
    except ValueError:
        numbers = []
    if not sep or not numbers:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=V1,V2,... with integer values")
    return tunable_name(name), numbers


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sweep``."""
    parser = subparsers.add_parser(
        "sweep",
        help="run a scenario once per static configuration",
        description=(
            "Run SCENARIO once per configuration, each applied to every matching device at t = 0 "
            "and kept for the whole run, and report the throughput of each. The configurations "
            "are a named grid (dial99, the default: max_pages_per_rpc 2^0..2^10 x max_rpcs_in_flight 2^0..2^8; "
            "on a cluster whose brw_size is below 4m, the max_pages_per_rpc values above brw_size / 4 KiB, "
            "which Lustre refuses, are left out, and a note on stderr says so) or the product of the --param lists."
        ),
    )
    add_scenario_arguments(parser)
    configs = parser.add_mutually_exclusive_group()  # argparse names the command in its error
    configs.add_argument(
        "--grid", choices=sorted(GRIDS), help="a named grid of configurations (default: dial99 unless --param)"
    )
    configs.add_argument(
        "--param",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="values of one tunable, e.g. osc.max_pages_per_rpc=16,256 (repeatable; product)",
    )
    parser.add_argument(
        "--jobs", type=positive_int, default=os.cpu_count() or 1, metavar="N", help="parallel runs (default: CPUs)"
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster at ADDRESS (tcp://host:8786) instead of local processes; --jobs is then not used",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Sweep the configurations and print one row per configuration."""
    names = [name for name, _ in args.param]
    if len(set(names)) != len(names):
        raise UserError("each tunable may be given to --param once")
    text = read_scenario_text(args.scenario)
    overrides = scenario_overrides(args)
    if not args.param:
        configs, note = scenario_grid(parse_scenario(text, args.scenario, overrides), args.grid or "dial99")
        if note:
            print(f"pfstune: note: {note}", file=sys.stderr)
    else:
        configs = grid_configs(dict(args.param))
    with ProgressBar(len(configs), "sweeping", " runs", enabled=not args.json) as bar:
        report = sweep(
            text, args.scenario, overrides, configs, args.jobs, lambda done, _total: bar.update(done), args.scheduler
        )
    if args.json:
        print_json(report)
        return 0
    params = list(configs[0])
    rows = [
        [*(r["config"][p] for p in params), r["mbps"], r["read_mbps"], r["write_mbps"], r["osc_mbps"]]
        for r in report["results"]
    ]
    headers = [p.partition(".")[2] for p in params] + ["MB/s", "read MB/s", "write MB/s", "OSC MB/s"]
    print(format_table(headers, rows))
    return 0
