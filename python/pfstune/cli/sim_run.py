"""``pfstune sim run``: simulate a scenario once and report its throughput."""

from __future__ import annotations

import argparse

from pfstune.cli._common import add_scenario_arguments, add_tuner_option_argument, scenario_overrides
from pfstune.cli._output import ProgressBar, format_table, print_json
from pfstune.runs import check_tuner_choice, simulate
from pfstune.sim.scenario import load_scenario
from pfstune.tuners import TUNERS


def format_speedup(speedup: float) -> str:
    """Simulated over wall time, as ``0.761x`` or ``36.3x``: three significant digits below 100,
    where a rounded ``1x`` would hide a run slower than real time; whole numbers above."""
    return f"{speedup:.0f}x" if speedup >= 100 else f"{speedup:.3g}x"


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``run``."""
    parser = subparsers.add_parser(
        "run",
        help="simulate a scenario once",
        description=(
            "Simulate SCENARIO to its end and print the application and OSC throughput "
            "(MB = 10^6 bytes per simulated second), the events processed and the wall time; for IOR "
            "jobs also IOR's own bandwidth of each finished phase (MiB/s), for h5bench jobs h5bench's "
            "observed rate over the finished timesteps (MiB/s, compute time between timesteps left out), "
            "for DLIO jobs DLIO's training throughput (samples/s, MiB/s) and accelerator utilisation."
        ),
    )
    add_scenario_arguments(parser)
    parser.add_argument(
        "--tuner",
        default="default",
        metavar="NAME",
        help=(
            f"tuner in the loop, one agent over every client (available: {', '.join(sorted(TUNERS))}; "
            "default: default, which changes nothing); oracle sweeps the dial99 grid first (99 runs; fewer on a "
            "cluster whose brw_size is below 4m, which refuses the larger max_pages_per_rpc) and "
            "reports the best static one. With a tuner the wall time counts the agent's ticks too"
        ),
    )
    add_tuner_option_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run the scenario and print the result."""
    options = dict(args.tuner_options)
    check_tuner_choice(args.tuner, options)  # a bad name or option fails before the scenario is loaded
    scenario = load_scenario(args.scenario, scenario_overrides(args))
    with ProgressBar(scenario.duration_ns / 1e9, "simulating", "s", enabled=not args.json) as bar:
        result = simulate(scenario, args.tuner, options, progress=bar.update)
    if args.json:
        print_json(result)
        return 0
    rows = [
        ["scenario", result["scenario"]],
        ["tuner", args.tuner],
        ["simulated", f"{result['sim_seconds']:.1f} s"],
        ["wall time", f"{result['wall_seconds']:.2f} s ({format_speedup(result['speedup'])} real time)"],
        *([["  simulating", f"{result['sim_wall_seconds']:.2f} s"]] if "sim_wall_seconds" in result else []),
        ["events", f"{result['events']} ({result['events_per_second']:.3g}/s)"],
        ["throughput", f"{result['mbps']:.1f} MB/s"],
        ["  read", f"{result['read_mbps']:.1f} MB/s"],
        ["  write", f"{result['write_mbps']:.1f} MB/s"],
        ["OSC RPC bytes", f"{result['osc_mbps']:.1f} MB/s"],
        ["decisions", str(result["decisions"])],
    ]
    for job, figures in result.get("ior", {}).items():  # IOR's own bw(MiB/s), phase by phase
        for kind in ("write", "read"):
            phases = figures[f"{kind}_mibps"]
            shown = ", ".join(f"{bw:.0f}" for bw in phases) + " MiB/s" if phases else "none finished"
            rows.append([f"IOR {job} {kind}", shown])
    for job, h5 in result.get("h5bench", {}).items():  # h5bench's observed rate
        rate = h5["observed_mibps"]
        shown = f"{rate:.1f} MiB/s over {h5['timesteps']} timesteps" if rate is not None else "no timestep finished"
        rows.append([f"h5bench {job} observed", shown])
    for job, dlio in result.get("dlio", {}).items():  # DLIO's training throughput and AU
        if dlio["samples_per_second"] is None:
            shown = "not started"
        else:
            shown = (
                f"{dlio['samples_per_second']:.1f} samples/s, {dlio['io_mibps']:.1f} MiB/s, "
                f"AU {dlio['au_percent']:.1f}%"
            )
        rows.append([f"DLIO {job} training", shown])
    if "oracle_config" in result:
        rows.append(["oracle sweep", f"{result['sweep_runs']} runs in {result['sweep_wall_seconds']:.1f} s"])
        rows.append(
            [
                "oracle configuration",
                ", ".join(f"{k.partition('.')[2]}={v}" for k, v in result["oracle_config"].items()),
            ]
        )
    print(format_table(["metric", "value"], rows))
    return 0
