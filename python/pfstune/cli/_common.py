"""Arguments shared by the commands that run a scenario: SCENARIO, --seed, --duration, --set."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pfstune.errors import UserError
from pfstune.sim.scenario import TUNABLES
from pfstune.units import parse_duration


def duration_text(text: str) -> str:
    """argparse type for a scenario's duration (``20s``, ``500ms``): checked here, kept as text for the scenario."""
    try:
        positive = parse_duration(text) > 0
    except UserError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not positive:  # here, not in the scenario, whose file is not what was wrong
        raise argparse.ArgumentTypeError(f"{text!r} must be longer than zero")
    return text


def seed_list(text: str) -> list[int]:
    """argparse type for ``1,2,3``: distinct integers from 0 to 2^64 - 1 (a scenario's seed range)."""
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of distinct non-negative integers, e.g. 1,2,3")
    for seed in seeds:
        if not 0 <= seed <= 2**64 - 1:
            raise argparse.ArgumentTypeError(f"seed {seed} is not between 0 and {2**64 - 1}")
    return seeds


def tunable_name(name: str) -> str:
    """Return ``name`` if it is a tunable a scenario may set, else raise ArgumentTypeError."""
    if name not in TUNABLES:
        raise argparse.ArgumentTypeError(f"unknown tunable {name!r}; known: {', '.join(TUNABLES)}")
    return name


def _assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not value:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE (e.g. osc.max_pages_per_rpc=64)")
    return tunable_name(name), value


def positive_int(text: str) -> int:
    """argparse type for a positive integer (``--jobs``, ``--threads``)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def int_between(low: int, high: int) -> Callable[[str], int]:
    """argparse type for an integer from ``low`` to ``high``."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low} and {high}")
        return value

    return check


def out_path(text: str) -> Path:
    """argparse type for ``--out``: a path, not the empty string (which would mean the current directory)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path; name the output, e.g. ./out (. for the current directory)")
    return Path(text)


def add_tuner_option_argument(parser: argparse.ArgumentParser) -> None:
    """``--tuner-option KEY=VALUE`` (repeatable), collected in ``args.tuner_options``."""
    parser.add_argument(
        "--tuner-option",
        dest="tuner_options",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the tuner, e.g. period=10 for iopathtune (repeatable)",
    )


def key_value(text: str) -> tuple[str, str]:
    """argparse type for ``KEY=VALUE`` options (``--tuner-option period=10``)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the SCENARIO argument and the options that override parts of the scenario."""
    parser.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    parser.add_argument(
        "--seed", type=int_between(0, 2**64 - 1), metavar="N", help="random seed (default: the scenario's)"
    )
    parser.add_argument(
        "--duration",
        type=duration_text,
        metavar="D",
        help="simulated duration, e.g. 20s (default: the scenario's; a shorter one drops the jobs that would "
        "start after it)",
    )
    parser.add_argument(
        "--set",
        dest="tunables",
        type=_assignment,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="initial tunable on every matching device, e.g. osc.max_pages_per_rpc=64 (repeatable)",
    )


def scenario_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The partial scenario document that the options of :func:`add_scenario_arguments` give."""
    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.duration is not None:
        overrides["duration"] = args.duration
    if args.tunables:
        overrides["tunables"] = dict(args.tunables)
    return overrides
