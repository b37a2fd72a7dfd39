"""``pfstune agent``: tune the OSCs of this client (or of a simulation) until stopped."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from types import FrameType

from pfstune.agent import Agent, TickListener
from pfstune.backends._base import Backend
from pfstune.cli._common import add_tuner_option_argument
from pfstune.config import DEFAULT_CONFIG, AgentOptions, resolve
from pfstune.errors import UserError
from pfstune.logs import setup_json_logging
from pfstune.systemd import notify
from pfstune.tuner_state import PeriodicSave, load_tuner_state, save_tuner_state
from pfstune.tuners import TUNERS, make_tuner

log = logging.getLogger("pfstune.agent")

DESCRIPTION = """\
Tune max_pages_per_rpc and max_rpcs_in_flight of every selected client OSC, online, from the
client's own statistics: every INTERVAL the agent reads the OSC statistics (rpc_stats, stats,
dirty and grant levels), computes one feature row per OSC, asks the tuner for the next
configuration, and writes what changed.

Safety. Only allow-listed parameters are written, within Lustre's ranges, and each write is
read back. Before the first write to a parameter its original value is saved in
STATE_DIR/originals.json; on exit, SIGTERM or SIGINT every original is written back, and an
agent started after a crash (SIGKILL, power loss) restores what the previous one left changed.
An OSC whose tuned values someone else changes (lctl set_param by hand) is left alone from then
on, and keeps those values at exit. One agent per node: a second one exits with an error
(STATE_DIR/agent.lock). Persistent settings (lctl set_param -P) are never used. --dry-run
prints the lctl set_param lines the agent would run (on stderr with --json) and writes nothing.
What the tuner has learned is saved in STATE_DIR/tuner.json (every 60 s and on exit) and loaded
by the next agent with the same tuner and options.
"""

EPILOG = f"""\
backends:
  lustre   a real client tree under --root (default /): 2.10 (procfs) and 2.15
           (sysfs, procfs, debugfs) layouts; also a `pfstune sim serve` directory
  sim      an in-process pfsim run of --scenario, every client, in simulated time
           (a 300 s scenario takes seconds)

tuners:
  {", ".join(sorted(TUNERS))}   (options: --tuner-option KEY=VALUE, e.g. period=10 for iopathtune)

files:
  {DEFAULT_CONFIG}   options (TOML; keys are the long option names with _,
                     e.g. state_dir = "/run/pfstune"); flags override it
  STATE_DIR/originals.json     original values, present while the agent has changed something
  STATE_DIR/tuner.json         what the tuner learned (saved every 60 s and on exit)
  STATE_DIR/agent.lock         held while an agent runs

signals:
  SIGTERM, SIGINT  restore every original value and exit 0

exit status:
  0 stopped normally (duration reached, end of scenario, SIGTERM/SIGINT); 1 internal error;
  2 a usage, configuration or permission problem (one line on stderr)

examples:
  pfstune agent --dry-run                        # what would change on this client
  pfstune agent --tuner iopathtune --metrics-port 9419
  pfstune agent --backend lustre --root /tmp/tree   # a `pfstune sim serve` tree
  pfstune agent --backend sim --scenario ../shared/scenarios/fivestream-mix.yaml --json
"""


def _option(name: str) -> Callable[[str], object]:
    """argparse type that converts with the option table's converter (one-line errors)."""
    convert = next(f for f in fields(AgentOptions) if f.name == name).metadata["convert"]

    def parse(text: str) -> object:
        try:
            return convert(text)
        except (ValueError, UserError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def setup_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``agent``."""
    parser = subparsers.add_parser(
        "agent",
        help="tune this client's OSCs online (or a simulated cluster's)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help=f"options file (default {DEFAULT_CONFIG} if present)"
    )
    metavars = {
        "backend": "{lustre,sim}",
        "root": "DIR",
        "scenario": "FILE",
        "tuner": "NAME",
        "state_dir": "DIR",
        "interval": "D",
        "duration": "D",
        "osc": "GLOB",
        "metrics_port": "PORT",
        "metrics_address": "ADDR",
        "log_level": "{debug,info,warning,error}",
    }
    shown = {"interval": "0.5s", "duration": "until stopped", "scenario": "none", "metrics_port": "0: off"}
    for option in fields(AgentOptions):
        if option.name in ("tuner_options", "dry_run"):
            continue
        parser.add_argument(
            "--" + option.name.replace("_", "-"),
            dest=option.name,
            type=_option(option.name),
            default=None,
            metavar=metavars[option.name],
            help=f"{option.metadata['help']} (default: {shown.get(option.name, option.default)})",
        )
    parser.add_argument(
        "--dry-run",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="print the lctl set_param lines, write nothing (--no-dry-run: write, whatever the config file says)",
    )
    add_tuner_option_argument(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON summary of the run on exit")
    parser.set_defaults(func=main)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _backend(options: AgentOptions, stop: threading.Event, json_output: bool = False) -> Backend:
    if options.backend == "sim":
        from pfstune.backends.sim import SimBackend

        if options.scenario is None:
            raise UserError("--backend sim needs --scenario FILE")
        return SimBackend.from_file(options.scenario, stop=stop, dry_run=options.dry_run)
    from pfstune.backends.lustre import LustreBackend

    return LustreBackend(
        options.root,
        state_dir=options.state_dir,
        osc_glob=options.osc,
        dry_run=options.dry_run,
        stop=stop,
        # with --json, stdout is the summary alone; the dry run's lines go beside the logs
        echo=_to_stderr if json_output else None,
    )


def _ignored_options(options: AgentOptions) -> list[str]:
    """What the chosen backend will not use, in words: a --scenario on a real client, say."""
    if options.backend == "lustre" and options.scenario is not None:
        return [f"--scenario {options.scenario} is ignored: only --backend sim runs a scenario"]
    if options.backend == "sim" and options.root != AgentOptions().root:
        return [f"--root {options.root} is ignored: --backend sim tunes the scenario's simulated clients"]
    return []


def main(args: argparse.Namespace) -> int:
    """Run the agent until its duration ends, the scenario ends, or SIGTERM/SIGINT."""
    flags = {f.name: getattr(args, f.name) for f in fields(AgentOptions)}
    flags["tuner_options"] = dict(args.tuner_options)
    options = resolve(args.config, flags)
    setup_json_logging(options.log_level)
    for unused in _ignored_options(options):
        log.warning("%s", unused)
    tuner = make_tuner(options.tuner, options.tuner_options)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %s: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with _backend(options, stop, json_output=args.json) as backend:
            listeners: list[TickListener] = []
            if options.metrics_port:
                from pfstune.exporter import Exporter

                exporter = Exporter()
                try:
                    exporter.serve(options.metrics_port, options.metrics_address)
                except OSError as err:
                    raise UserError(
                        f"--metrics-port {options.metrics_port}: cannot listen on "
                        f"{options.metrics_address}: {err.strerror or err}"
                    ) from None
                listeners.append(exporter)
            # what the tuner learned survives a restart, on a real client (not in a dry run, which
            # writes nothing, nor in a simulation, which starts from its scenario)
            keep_state = options.backend == "lustre" and not options.dry_run
            if keep_state:
                load_tuner_state(options.state_dir, tuner, options.tuner_options)
                listeners.append(PeriodicSave(options.state_dir, tuner, options.tuner_options))
            agent = Agent(backend, tuner, interval=options.interval, osc_glob=options.osc, listeners=listeners)
            log.info(
                "started",
                extra={"backend": options.backend, "tuner": options.tuner, "interval_s": options.interval},
            )
            notify("READY=1")
            summary = agent.run(options.duration)
            notify("STOPPING=1")
            if keep_state:
                save_tuner_state(options.state_dir, tuner, options.tuner_options)
            log.info("stopping; restoring original values", extra=summary.as_dict())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if args.json:
        result = {"backend": options.backend, "tuner": options.tuner, **summary.as_dict()}
        result.update(getattr(backend, "result", dict)())
        json.dump(result, sys.stdout, indent=2)
        print()
    return 0
