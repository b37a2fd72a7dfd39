"""The ``pfstune`` command: builds the argument parser from the subcommand modules and
dispatches to them.

Every subcommand module has ``setup_parser(subparsers)``, which registers its parser and sets
``func``, and ``main(args) -> int``.  A :class:`~pfstune.errors.UserError` becomes one line
``pfstune: error: <message>`` on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from pfstune import __version__
from pfstune.cli import (
    agent,
    bench,
    collect,
    demo,
    lustre_parse,
    lustre_snapshot,
    model_eval,
    overhead,
    replay,
    sim_presets,
    sim_run,
    sim_serve,
    sim_sweep,
    train,
)
from pfstune.errors import PfstuneError, UserError
from pfstune.logs import json_logging


class _Parser(argparse.ArgumentParser):
    """argparse with README's error contract: a usage mistake is one line on stderr, status 2.

    argparse's own ``error`` prints the whole usage block first; the line here names the
    command and says where the usage is instead.  Sub-command parsers are of this class too
    (``add_subparsers`` makes parsers of its parent's type).
    """

    def error(self, message: str) -> NoReturn:
        """Print ``<command>: error: <message>`` and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but a sub-command refuses options it does not know itself.

        argparse hands a sub-command's unknown options up to the top parser, whose error would
        name ``pfstune`` instead of the command they were given to.
        """
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and " " in self.prog:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    """The full ``pfstune`` argument parser."""
    # typed as the base class: sub-command modules take argparse's own types
    parser: argparse.ArgumentParser = _Parser(
        prog="pfstune",
        description=(
            "Tune the I/O path of parallel file systems (Lustre) while applications run, "
            "and study tuners on a simulated cluster."
        ),
    )
    parser.add_argument("--version", action="version", version=f"pfstune {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    demo.setup_parser(commands)
    agent.setup_parser(commands)
    collect.setup_parser(commands)
    replay.setup_parser(commands)
    overhead.setup_parser(commands)
    bench.setup_parser(commands)
    sim = commands.add_parser(
        "sim",
        help="run, sweep and serve simulated Lustre clusters",
        description=(
            "Simulate a Lustre cluster described by a scenario file (pfsim core): run it once, "
            "sweep static configurations, or serve one client's /sys and /proc tree live."
        ),
    )
    sim_commands = sim.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module in (sim_run, sim_sweep, sim_serve, sim_presets):
        module.setup_parser(sim_commands)
    lustre = commands.add_parser(
        "lustre",
        help="read a real Lustre client's statistics and tunables",
        description=(
            "Read a Lustre client's statistics and tunables: probe a client tree once (snapshot), "
            "or parse saved `lctl get_param` output (parse)."
        ),
    )
    lustre_commands = lustre.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for lustre_module in (lustre_snapshot, lustre_parse):
        lustre_module.setup_parser(lustre_commands)
    train.setup_parser(commands)
    model = commands.add_parser(
        "model",
        help="inspect and evaluate trained models",
        description="Evaluate a model directory (pfstune train's output, or 'default': the shipped model) on datasets.",
    )
    model_commands = model.add_subparsers(title="commands", metavar="COMMAND", required=True)
    model_eval.setup_parser(model_commands)
    return parser


def attach_negative_values(argv: Sequence[str]) -> list[str]:
    """``--duration -1s`` -> ``--duration=-1s``, so that the option's own check rejects the value.

    argparse reads a token that starts with ``-`` and is not a plain number as the next option,
    and would answer "expected one argument" instead of saying what is wrong with the value.
    """
    out: list[str] = []
    for token in argv:
        if out and re.match(r"-[\d.]", token) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _error(err: Exception, status: int) -> None:
    """The one line a failed command leaves: JSON once a command logs in JSON (the agent), so that
    the line saying why it stopped reaches a log collector in the same form as the others."""
    if json_logging():
        logging.getLogger("pfstune").error("%s", err, extra={"exit_status": status})
    else:
        print(f"pfstune: error: {err}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pfstune`` command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    args = build_parser().parse_args(attach_negative_values(sys.argv[1:] if argv is None else argv))
    try:
        status: int = args.func(args)
    except UserError as err:
        _error(err, 2)
        return 2
    except PfstuneError as err:
        _error(err, 1)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`pfstune ... | head`): stop quietly, as other Unix tools do, and
        # point stdout at /dev/null so the interpreter's final flush does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return status
