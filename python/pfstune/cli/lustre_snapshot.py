"""``pfstune lustre snapshot``: read a Lustre client's statistics and tunables once."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

from pfstune.cli._output import format_table, print_json
from pfstune.errors import UserError
from pfstune.lustre.snapshot import MINIMAL_FILES, Prober
from pfstune.lustre.types import Snapshot


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``snapshot``."""
    parser = subparsers.add_parser(
        "snapshot",
        help="read a Lustre client's statistics and tunables once",
        description=(
            "Read every client OSC's tunables, rpc_stats, stats, import and osc_stats and every "
            "llite's stats, read-ahead statistics and tunables from a client tree (a real client's /, "
            "or a tree kept by `pfstune sim serve`) and print them. Files that cannot be read "
            "(debugfs without root) are left out with a warning."
        ),
    )
    parser.add_argument("--root", default="/", metavar="DIR", help="root of the client tree (default: /)")
    parser.add_argument(
        "--osc", default="*", metavar="GLOB", help="read only the OSC devices matching GLOB (default: all)"
    )
    parser.add_argument(
        "--minimal",
        action="store_true",
        help="read only what the tuning agent needs (OSC rpc_stats, stats, RPC and dirty/grant values)",
    )
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    parser.set_defaults(func=main)


@contextlib.contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Show the ``pfstune.lustre`` warnings as ``pfstune: warning: ...`` lines, unless logging is set up."""
    logger = logging.getLogger("pfstune.lustre")
    if logger.hasHandlers():
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("pfstune: warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _value(mapping: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(mapping, dict) or key not in mapping:
            return "-"
        mapping = mapping[key]
    return mapping


def _rpcs(osc: dict[str, object], direction: str) -> object:
    # rpc_stats is readable without root; the stats counters are the fallback.
    column = _value(osc, "rpc_stats", "pages_per_rpc", direction)
    if isinstance(column, dict):
        return sum(column.values())
    return _value(osc, "stats", f"ost_{direction}", "samples")


def snapshot_table(snapshot: Snapshot) -> str:
    """A short table of a snapshot: one row per OSC, then one line per llite."""
    rows = []
    for name, osc in snapshot["osc"].items():
        entry: dict[str, object] = dict(osc)
        rows.append(
            [
                name,
                _value(entry, "tunables", "max_pages_per_rpc"),
                _value(entry, "tunables", "max_rpcs_in_flight"),
                _value(entry, "tunables", "cur_dirty_bytes"),
                _value(entry, "tunables", "cur_grant_bytes"),
                _rpcs(entry, "read"),
                _rpcs(entry, "write"),
                # FULL, or IDLE once the pinger disconnected an OSC unused for idle_timeout
                _value(entry, "import", "state"),
            ]
        )
    headers = ["osc", "mppr", "mrif", "dirty bytes", "grant bytes", "read RPCs", "write RPCs", "import"]
    lines = [format_table(headers, rows)] if rows else ["no client OSC"]
    for name, llite in snapshot["llite"].items():
        lines.append(f"llite {name}: {len(llite.get('osc', []))} OSC(s) in this snapshot")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Probe the tree once and print the snapshot."""
    root = Path(args.root)
    if not root.is_dir():
        raise UserError(f"--root {root}: no such directory (give a client's / or a `pfstune sim serve` tree)")
    prober = Prober(root, args.osc, files=MINIMAL_FILES if args.minimal else None)
    with warnings_to_stderr():
        snapshot = prober.probe()
    if not snapshot["osc"] and snapshot["llite"] and args.osc != "*":
        raise UserError(
            f"no client OSC under {root} matches --osc {args.osc!r} (mounts: {', '.join(snapshot['llite'])})"
        )
    if not snapshot["osc"] and not snapshot["llite"]:
        which = "" if args.osc == "*" else f" matching --osc {args.osc!r}"
        places = [str(root / part) for part in ("sys/fs/lustre", "proc/fs/lustre", "sys/kernel/debug/lustre")]
        raise UserError(
            f"no Lustre client devices{which} under {root} (looked in {places[0]}, {places[1]} and "
            f"{places[2]}); is a Lustre file system mounted?"
        )
    if args.json:
        print_json(snapshot)
    else:
        print(snapshot_table(snapshot))
    return 0
