"""``pfstune sim presets``: list the cluster presets a scenario can name."""

from __future__ import annotations

import argparse

from pfstune.cli._output import format_table, print_json
from pfstune.sim.presets import PRESETS


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``presets``."""
    parser = subparsers.add_parser(
        "presets",
        help="list the cluster presets",
        description=(
            "List the cluster presets that a scenario names with `cluster: {preset: NAME}`. "
            "Any field can be overridden in the scenario. Sizes are binary (128g = 128 GiB), "
            "bandwidths decimal bytes per second (500m = 500 MB/s)."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print every field of every preset as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Print the presets as a table, or all their fields as JSON."""
    if args.json:
        print_json(PRESETS)
        return 0
    rows = [
        [
            name,
            p["clients"],
            f"{p['oss']}x{p['osts_per_oss']} {p['ost_kind']}",
            p["net_bandwidth"],
            p["description"],
        ]
        for name, p in PRESETS.items()
    ]
    print(format_table(["preset", "clients", "OSTs", "link B/s", "description"], rows))
    return 0
