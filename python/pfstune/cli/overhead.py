"""``pfstune overhead``: what one real agent tick costs over a virtual tree of N OSCs."""

from __future__ import annotations

import argparse
import signal

from pfstune.cli._common import add_tuner_option_argument, int_between, positive_int
from pfstune.cli._output import format_table, print_json
from pfstune.overhead import measure

#: The most OSCs a virtual tree may have (a real client mounts a few thousand at most).
MAX_OSCS = 100_000


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``overhead``."""
    parser = subparsers.add_parser(
        "overhead",
        help="time one agent tick over a virtual tree of N OSCs",
        description=(
            "Lay out a virtual client tree with N OSCs (pfsim's text of a busy OSC, 2.15 layout), run the "
            "agent over it with the Lustre backend, and report the median time of each phase of a tick: "
            "probe (read + parse), features, inference (the tuner's decision for all OSCs), apply; and, "
            "apart, the agent's first tick (with --tuner random: every OSC's first writes, originals saved)."
        ),
    )
    parser.add_argument(
        "--oscs", type=int_between(1, MAX_OSCS), default=100, metavar="N", help="number of OSCs (default 100)"
    )
    parser.add_argument("--tuner", default="dial", metavar="NAME", help="tuner (default dial, the shipped model)")
    add_tuner_option_argument(parser)
    parser.add_argument(
        "--repeat", type=positive_int, default=5, metavar="K", help="timed ticks, median reported (default 5)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Measure and print."""
    # SIGTERM (timeout, kill, systemd) unwinds like Ctrl-C, so the temporary tree in /dev/shm goes
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        result = measure(args.oscs, tuner=args.tuner, repeat=args.repeat, tuner_options=dict(args.tuner_options))
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.json:
        print_json(result)
        return 0
    phases = ("probe_ms", "features_ms", "inference_ms", "apply_ms", "tick_ms")
    rows = [[key, f"{result[key]:.2f}", f"{result['per_osc'][key]:.4f}"] for key in phases]
    rows.append(["writes_per_tick", f"{result['writes_per_tick']:g}", ""])
    rows.append(["warmup_tick_ms", f"{result['warmup_tick_ms']:.2f}", ""])
    rows.append(["first_tick_ms", f"{result['first_tick_ms']:.2f}", ""])
    rows.append(["first_apply_ms", f"{result['first_apply_ms']:.2f}", ""])
    rows.append(["first_writes", str(result["first_writes"]), ""])
    print(format_table(["phase", f"ms ({args.oscs} OSCs, {args.tuner})", "per OSC"], rows))
    return 0
