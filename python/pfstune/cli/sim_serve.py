"""``pfstune sim serve``: keep one simulated client's Lustre tree live under a directory.

Simulated time follows real time times ``--speed``; the tree is refreshed every probe interval
of simulated time, and values written into its writable files (``max_rpcs_in_flight``,
``max_pages_per_rpc``, ...) are applied to the simulation as ``lctl set_param`` would apply them
on a real client, within a tenth of a second of real time (at the simulated time the tree last
showed).  ``DIR/.pfsim-serve.json`` holds ``{"pid", "sim_ns", "scenario"}`` after every
step.  The command stops at the end of the scenario or on SIGINT/SIGTERM, with status 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from pfstune.cli._common import add_scenario_arguments, scenario_overrides
from pfstune.errors import UserError
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree, write_atomically

STATUS_FILE = ".pfsim-serve.json"
#: How often (real seconds) the tunable files are checked for writes between two refreshes;
#: a check of a 200-file tree takes about 2 ms.
WRITE_POLL_S = 0.1


#: Far beyond what pfsim runs at (about 10^3); above it simulated nanoseconds per real second
#: stop being exact integers, and the simulator simply runs as fast as it can anyway.
MAX_SPEED = 1e6


def _speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        speed = 0.0
    if not 0 < speed < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive speed factor")
    if speed > MAX_SPEED:
        raise argparse.ArgumentTypeError(f"{text!r} is above the largest speed factor, {MAX_SPEED:g}")
    return speed


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``serve``."""
    parser = subparsers.add_parser(
        "serve",
        help="serve a simulated client's /sys, /proc and debugfs tree live",
        description=(
            "Lay out one simulated client's Lustre files under DIR (sys/fs/lustre, proc/fs/lustre, "
            "sys/kernel/debug/lustre), refresh them as simulated time passes, and apply the values "
            f"written into its tunable files. DIR/{STATUS_FILE} reports the simulated time. "
            "Stops at the end of the scenario or on SIGINT/SIGTERM."
        ),
    )
    add_scenario_arguments(parser)
    parser.add_argument("--root", required=True, metavar="DIR", help="directory to lay the tree out in")
    parser.add_argument(
        "--speed", type=_speed, default=1.0, metavar="X", help="simulated seconds per real second (default 1)"
    )
    parser.add_argument("--client", type=int, default=0, metavar="N", help="index of the client to serve (default 0)")
    parser.set_defaults(func=main)


def _is_a_live_system(root: Path) -> bool:
    """``root`` is ``/``, or a directory whose ``proc`` or ``sys`` is a mount (a chroot, a container)."""
    return root.resolve() == Path("/").resolve() or any(os.path.ismount(root / name) for name in ("proc", "sys"))


def main(args: argparse.Namespace) -> int:
    """Serve the tree until the scenario ends or a signal arrives."""
    scenario = load_scenario(args.scenario, scenario_overrides(args))
    n_clients = scenario.cluster["clients"]
    if not 0 <= args.client < n_clients:
        raise UserError(f"--client {args.client}: the scenario has {n_clients} clients (0..{n_clients - 1})")
    root = Path(args.root)
    if _is_a_live_system(root):
        # its files would go into the node's own /sys/fs/lustre and /proc/fs/lustre
        raise UserError(
            f"--root {root}: this is a live system's root (its proc or sys is mounted); "
            "give sim serve a directory of its own, e.g. --root /tmp/pfsim-tree"
        )
    engine = Engine(scenario)  # its set-up checks first: a refused scenario makes no directory
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        reason = "exists and is not a directory" if isinstance(err, FileExistsError) else err.strerror or err
        raise UserError(f"--root {root}: {reason}") from None
    tree = VirtualTree(engine, args.client, root, log=lambda line: print(line, file=sys.stderr, flush=True))

    def publish() -> None:
        tree.refresh()
        status = {"pid": os.getpid(), "sim_ns": engine.now_ns, "scenario": scenario.name}
        write_atomically(root / STATUS_FILE, json.dumps(status) + "\n")

    stopping = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(
            f"pfstune: serving client {args.client} of {scenario.name} under {root} at {args.speed:g}x",
            file=sys.stderr,
            flush=True,
        )
        publish()
        step, end = scenario.probe_interval_ns, scenario.duration_ns
        ns_per_second = args.speed * 1e9
        started = time.monotonic()
        while engine.now_ns < end:
            next_ns = min(end, engine.now_ns + step)
            deadline = started + next_ns / ns_per_second
            # Writes into tunable files are picked up every WRITE_POLL_S of real time, not only at
            # the next probe interval: a real sysfs write takes effect (or fails) at once.
            while not stopping.wait(max(0.0, min(WRITE_POLL_S, deadline - time.monotonic()))):
                tree.apply_writes()
                if time.monotonic() >= deadline:
                    break
            if stopping.is_set():
                break
            # Catch up in whole probe intervals if the simulation fell behind real time.
            due_ns = int((time.monotonic() - started) * ns_per_second)
            engine.run(until_ns=min(end, max(next_ns, due_ns - due_ns % step)))
            publish()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
