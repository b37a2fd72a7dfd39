"""``pfstune lustre parse``: parse saved ``lctl get_param`` output into a snapshot."""

from __future__ import annotations

import argparse
import sys

from pfstune.cli._output import print_json
from pfstune.cli.lustre_snapshot import snapshot_table, warnings_to_stderr
from pfstune.errors import UserError
from pfstune.lustre.lctl import snapshot_from_get_param
from pfstune.lustre.parse import ParseError
from pfstune.textfiles import check_is_a_file


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``parse``."""
    parser = subparsers.add_parser(
        "parse",
        help="parse saved `lctl get_param` output",
        description=(
            "Parse the output of `lctl get_param osc.*.* llite.*.*` (or any subset) saved in FILE "
            "into the structure `pfstune lustre snapshot` prints."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="saved lctl get_param output ('-' reads standard input)")
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Parse the file and print the snapshot."""
    if args.file == "-":
        text = sys.stdin.read()
    else:
        check_is_a_file(args.file, "saved `lctl get_param` output")
        try:
            with open(args.file, encoding="utf-8", errors="replace") as file:
                text = file.read()
        except OSError as err:
            raise UserError(f"{args.file}: cannot read ({err.strerror or err})") from None
    try:
        with warnings_to_stderr():
            snapshot = snapshot_from_get_param(text)
    except ParseError as err:
        raise UserError(f"{args.file}: {err} (expected the output of `lctl get_param`)") from None
    if not snapshot["osc"] and not snapshot["llite"]:
        # Not an error: a saved MDC- or server-only excerpt is valid lctl output.  But say why it is empty.
        print(
            f"pfstune: warning: {args.file}: no client OSC or llite parameter in it "
            "(osc.<fs>-OST<idx>-osc-<id>.* or llite.<fs>-<id>.*; other devices are skipped)",
            file=sys.stderr,
        )
    if args.json:
        print_json(snapshot)
    else:
        print(snapshot_table(snapshot))
    return 0
