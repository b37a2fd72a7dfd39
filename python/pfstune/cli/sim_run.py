"""``pfstune sim run``: simulate a scenario once and report its throughput."""

from __future__ import annotations

import argparse

from pfstune.cli._common import add_scenario_arguments, scenario_overrides
from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.errors import UserError
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario

#: Tuners this command can run; ``default`` leaves Lustre's (and the scenario's) values alone.
TUNERS = ("default",)


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``run``."""
    parser = subparsers.add_parser(
        "run",
        help="simulate a scenario once",
        description=(
            "Simulate SCENARIO to its end and print the application and OSC throughput "
            "(MB = 10^6 bytes per simulated second), the events processed and the wall time."
        ),
    )
    add_scenario_arguments(parser)
    parser.add_argument(
        "--tuner", default="default", metavar="NAME", help=f"tuner to run (available: {', '.join(TUNERS)})"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run the scenario and print the result."""
    if args.tuner not in TUNERS:
        raise UserError(f"unknown tuner {args.tuner!r}; available: {', '.join(TUNERS)}")
    scenario = load_scenario(args.scenario, scenario_overrides(args))
    engine = Engine(scenario)
    with ProgressBar(scenario.duration_ns / 1e9, "simulating", "s", enabled=not args.json) as bar:
        engine.run(progress=lambda now_ns, _end_ns: bar.update(now_ns / 1e9))
    result = engine.result()
    if args.json:
        print_json(result)
        return 0
    rows = [
        ["scenario", result["scenario"]],
        ["tuner", args.tuner],
        ["simulated", f"{result['sim_seconds']:.1f} s"],
        ["wall time", f"{result['wall_seconds']:.2f} s ({result['speedup']:.0f}x real time)"],
        ["events", f"{result['events']} ({result['events_per_second']:.3g}/s)"],
        ["throughput", f"{result['mbps']:.1f} MB/s"],
        ["  read", f"{result['read_mbps']:.1f} MB/s"],
        ["  write", f"{result['write_mbps']:.1f} MB/s"],
        ["OSC RPC bytes", f"{result['osc_mbps']:.1f} MB/s"],
    ]
    print(format_table(["metric", "value"], rows))
    return 0
