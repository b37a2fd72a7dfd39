"""The sim backend: an in-process pfsim run, every client of it tuned by one agent, in simulated time.

It reads the same text a real client prints (pfsim's exact Lustre files, through
:mod:`pfstune.lustre.parse`), so the agent, the features and the tuners cannot tell it from a
client tree; only the clock differs: :class:`SimClock` advances the simulation instead of
sleeping.  Writes go through pfsim's own parameter handlers, which apply Lustre's ranges and
errors (ERANGE, EINVAL) and its coupling (``max_dirty_mb`` raised with the RPC window).  Like the
Lustre backend it remembers the original values and writes them back on close, so a simulation
ends the way a real node would be left.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pfstune._pfsim import StatsReader
from pfstune.backends._base import Backend
from pfstune.clock import Clock
from pfstune.lustre.actuator import brw_pages_from_import
from pfstune.lustre.limits import ActuatorError
from pfstune.lustre.parse import parse_rpc_stats, parse_scalar, parse_stats
from pfstune.lustre.snapshot import unpack_reading, with_mounts
from pfstune.lustre.table import TUNABLES, ProbeTable
from pfstune.lustre.types import LliteSnapshot, OscSnapshot, Snapshot
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.tuners._base import TUNED_PARAMS, Config

log = logging.getLogger("pfstune.sim")

#: The scalar files the agent needs each probe (features and the configuration in force).
OSC_SCALARS = ("max_pages_per_rpc", "max_rpcs_in_flight", "max_dirty_mb", "cur_dirty_bytes", "cur_grant_bytes")
#: What the sim backend lets a tuner write: the tuned parameters and the dirty limit.
WRITABLE = (*TUNED_PARAMS, "max_dirty_mb")


class SimClock(Clock):
    """Simulated seconds since the start of the scenario; sleeping runs the simulation."""

    def __init__(self, engine: Engine, stop: threading.Event | None = None) -> None:
        """A clock over ``engine``; ``stop`` (a signal) or the end of the scenario ends sleeps."""
        self.engine = engine
        self.stop = stop or threading.Event()

    def now(self) -> float:
        """Simulated time in seconds."""
        return self.engine.now_ns / 1e9

    def sleep_until(self, when: float) -> bool:
        """Run the simulation to ``when``; False at the end of the scenario or when stopped."""
        if self.stop.is_set():
            return False
        end_ns = self.engine.scenario.duration_ns
        target_ns = min(end_ns, math.ceil(when * 1e9))
        if target_ns > self.engine.now_ns:
            self.engine.run(until_ns=target_ns)
        return target_ns >= when * 1e9 and not self.stop.is_set()

    def stopped(self) -> bool:
        """Whether ``stop`` is set."""
        return self.stop.is_set()


class SimBackend(Backend):
    """Every client of a pfsim run, probed and tuned through its Lustre text."""

    def __init__(self, engine: Engine, stop: threading.Event | None = None, dry_run: bool = False) -> None:
        """Wrap ``engine``; with ``dry_run`` changes are logged, not applied (the run stays default)."""
        self.engine = engine
        self.clock = SimClock(engine, stop)
        self.dry_run = dry_run
        self._client_of: dict[str, int] = {}
        self._llites: dict[str, tuple[int, list[str]]] = {}
        for info in engine.clients():
            self._llites[info["llite"]] = (info["index"], list(info["osc"]))
            for osc in info["osc"]:
                self._client_of[osc] = info["index"]
        self._bounds: dict[str, dict[str, tuple[int, int]]] = {}
        self._originals: dict[tuple[str, str], str] = {}
        # the extension's reader of every device's files and each OSC's mount row, made at the
        # first probe_table() (the devices of a simulation never change)
        self._reader: Any = None
        self._mount_rows: list[int] = []
        # the run's wall time, for result(): from here to the first close (originals restored)
        self._started = time.perf_counter()
        self._closed: float | None = None

    @classmethod
    def from_file(
        cls,
        path: Path,
        stop: threading.Event | None = None,
        dry_run: bool = False,
        overrides: Mapping[str, Any] | None = None,
    ) -> SimBackend:
        """A backend running the scenario file ``path`` (UserError if it is not valid)."""
        return cls(Engine(load_scenario(path, dict(overrides or {}))), stop=stop, dry_run=dry_run)

    def _get(self, client: int, kind: str, device: str, param: str) -> str:
        return self.engine.get_param(client, f"{kind}.{device}.{param}")

    def probe(self) -> Snapshot:
        """Every OSC's scalars, rpc_stats and stats, and every llite's stats, parsed from pfsim's text."""
        oscs: dict[str, OscSnapshot] = {}
        for osc, client in self._client_of.items():
            tunables: dict[str, int | str] = {}
            for name in OSC_SCALARS:
                tunables[name] = parse_scalar(self._get(client, "osc", osc, name))
            header, counters = parse_stats(self._get(client, "osc", osc, "stats"))
            oscs[osc] = {
                "tunables": tunables,
                "rpc_stats": parse_rpc_stats(self._get(client, "osc", osc, "rpc_stats")),
                "stats": counters,
                "stats_header": header,
            }
        llites: dict[str, LliteSnapshot] = {}
        for llite, (client, members) in self._llites.items():
            header, counters = parse_stats(self._get(client, "llite", llite, "stats"))
            llites[llite] = {"stats": counters, "stats_header": header, "osc": list(members)}
        return {"time": self.clock.now(), "osc": oscs, "llite": llites}

    def probe_table(self) -> ProbeTable:
        """:meth:`probe` packed into arrays, the files parsed by the extension's reader of real client
        files (the Lustre backend's) instead of Python's parsers: the same numbers (tested), without a
        Python string and parse per file. One agent over a simulated cluster of 1,000 clients reads
        512,000 OSCs a tick."""
        oscs, mounts_n = tuple(self._client_of), len(self._llites)
        if self._reader is None:
            # each file's "path" is CLIENT:lctl name (pfsim's Simulation.read_stats)
            files = ("rpc_stats", "stats", *OSC_SCALARS)
            devices = [(True, [(f, f"{c}:osc.{osc}.{f}") for f in files]) for osc, c in self._client_of.items()]
            devices += [(False, [("stats", f"{c}:llite.{llite}.stats")]) for llite, (c, _) in self._llites.items()]
            self._reader = StatsReader(devices, list(TUNABLES))
            mount_of = {osc: k for k, (_, members) in enumerate(self._llites.values()) for osc in members}
            self._mount_rows = [mount_of.get(osc, mounts_n) for osc in oscs]
        got = self.engine.read_stats(self._reader)
        status, scalars, table, mounts = unpack_reading(got, len(oscs), mounts_n)
        if status.any():  # pfsim printed something the reader refused: the Python parsers say what
            log.warning("sim: the fast reader refused %s; this probe is parsed in Python", got["refused"][:3])
            return super().probe_table()
        table = with_mounts(table, mounts, self._mount_rows)
        return ProbeTable(self.clock.now(), oscs, tuple(found or {} for found in scalars[: len(oscs)]), table)

    def bounds(self, osc: str) -> dict[str, tuple[int, int]]:
        """max_pages_per_rpc up to the negotiated brw_size (``import``), max_rpcs_in_flight 1..256."""
        if osc not in self._bounds:
            # the line the Lustre actuator reads: a parse of the whole import costs 0.5 ms, and a
            # simulated cluster may have 500,000 OSCs
            max_pages = brw_pages_from_import(self._get(self._client_of[osc], "osc", osc, "import"))
            if max_pages is None:
                log.warning("%s: no max_brw_size in import; assuming 4 MiB RPCs", osc)
                max_pages = 1024
            self._bounds[osc] = {"max_pages_per_rpc": (1, max_pages), "max_rpcs_in_flight": (1, 256)}
        return dict(self._bounds[osc])

    def apply(self, osc: str, config: Config) -> Config:
        """Write each changed value through pfsim's handlers; return the configuration now in force."""
        client = self._client_of.get(osc)
        if client is None:
            raise ActuatorError(f"{osc}: no such simulated OSC")
        for param, value in config.items():
            if param not in WRITABLE:
                raise ActuatorError(f"osc.{osc}.{param}: not a parameter the agent may write")
            name = f"osc.{osc}.{param}"
            if self.dry_run:
                log.info("dry run: lctl set_param %s=%d", name, value)
                continue
            before = self.engine.get_param(client, name)
            self._originals.setdefault((osc, param), before.strip())
            if param != "max_dirty_mb":  # raising the RPC window may raise the dirty limit
                self._originals.setdefault((osc, "max_dirty_mb"), self._get(client, "osc", osc, "max_dirty_mb").strip())
            try:
                self.engine.set_param(client, name, str(value))
            except OSError as err:
                raise ActuatorError(f"set_param {name}={value}: {err.strerror or err}") from None
            now = parse_scalar(self.engine.get_param(client, name))
            if now != value:
                raise ActuatorError(f"set_param {name}={value}: reads back {now}")
        in_force = {p: int(parse_scalar(self._get(client, "osc", osc, p))) for p in TUNED_PARAMS}
        if self.dry_run:  # what would be in force, as the Lustre backend's dry run answers
            in_force.update((p, v) for p, v in config.items() if p in in_force)
        return in_force

    def close(self) -> None:
        """Write every original value back (dirty limits last: the RPC window may raise them)."""
        originals = sorted(self._originals.items(), key=lambda item: item[0][1] == "max_dirty_mb")
        self._originals = {}
        for (osc, param), value in originals:
            try:
                self.engine.set_param(self._client_of[osc], f"osc.{osc}.{param}", value)
            except OSError as err:
                log.error("restoring osc.%s.%s=%s: %s", osc, param, value, err.strerror or err)
        if self._closed is None:
            self._closed = time.perf_counter()

    def result(self) -> dict[str, Any]:
        """The run summary of ``pfstune sim run --tuner ... --json`` for what has been simulated so far.

        As there, ``wall_seconds`` and ``speedup`` count the whole run, the agent's ticks included
        (from this backend's creation to its close, or to now while it is open), and
        ``sim_wall_seconds`` the engine's loop alone.
        """
        result = self.engine.result()
        wall = (self._closed or time.perf_counter()) - self._started
        return {
            **result,
            "wall_seconds": wall,
            "sim_wall_seconds": result["wall_seconds"],
            "speedup": result["sim_seconds"] / wall if wall > 0 else 0.0,
        }
