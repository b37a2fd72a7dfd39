"""A typed wrapper around the compiled simulator core, ``pfstune._pfsim``.

This is the only module that imports the core.  :class:`Engine` builds a simulation from a
:class:`~pfstune.sim.scenario.Scenario`, advances it in probe-interval steps, reads and writes
parameters by their lctl names (``osc.hasanfs-OST0000-osc-ffff9fe9d28c3000.max_rpcs_in_flight``),
and summarises a run as the ``pfstune sim run --json`` dictionary.

Example::

    engine = Engine(load_scenario("rnd_r_1_io_16m.yaml"))
    engine.set_all("osc.max_rpcs_in_flight", "32")   # every OSC of every client; returns the count
    engine.run()                                     # to the end of the scenario
    print(engine.result()["mbps"])
"""

from __future__ import annotations

import fnmatch
import json
import re
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypedDict

from pfstune._pfsim import Simulation
from pfstune.errors import ScenarioError, UserError
from pfstune.sim.scenario import Scenario

#: ``progress(now_ns, end_ns)``, called after every probe-interval step of :meth:`Engine.run`.
ProgressCallback = Callable[[int, int], None]


class ClientInfo(TypedDict):
    """One simulated client and the Lustre device names of its mount."""

    index: int
    hostname: str
    llite: str
    osc: list[str]
    mdc: list[str]


class Param(NamedTuple):
    """One parameter file of a client's tree."""

    path: str  # relative to the tree root, e.g. "sys/fs/lustre/osc/<dev>/max_rpcs_in_flight"
    name: str  # lctl name, e.g. "osc.<dev>.max_rpcs_in_flight"
    writable: bool


class Engine:
    """One simulation run of a scenario.

    Lifecycle: construct (the scenario's tunables are applied to every matching device at
    t = 0), then alternate :meth:`run` with reads (:meth:`get_param`) and writes
    (:meth:`set_param`, :meth:`set_all`) as a tuner would, then read :meth:`result`.
    """

    def __init__(self, scenario: Scenario) -> None:
        """Start a simulation of ``scenario``.

        The core checks what only it can (tunable ranges, e.g. ``max_rpcs_in_flight: 0``); what
        it refuses becomes a :class:`ScenarioError` naming the scenario file, or the command line
        for a tunable an override gave (``--set``).
        """
        self.scenario = scenario
        self._names: dict[int, list[str]] = {}
        self._wall_ns = 0
        try:
            self._sim = Simulation(json.dumps(scenario.to_engine_config()))
        except ValueError as err:
            refused = re.match(r"tunable ([\w.]+)=", str(err))
            if refused and refused.group(1) in scenario.overridden_tunables:  # not the file's value
                raise ScenarioError(f"{err} (given on the command line, not in {scenario.source})") from None
            raise ScenarioError(f"{scenario.source}: {err}") from None

    @property
    def now_ns(self) -> int:
        """Current simulated time in nanoseconds since the start of the scenario."""
        return int(self._sim.now_ns)

    @property
    def events(self) -> int:
        """Number of events the core has processed so far."""
        return int(self._sim.events)

    def check_invariants(self) -> None:
        """Check the simulator's internal bookkeeping (for tests); raises ValueError if broken."""
        self._sim.check_invariants()

    def run(self, until_ns: int | None = None, progress: ProgressCallback | None = None) -> None:
        """Advance simulated time to ``until_ns`` (default: the scenario duration).

        Time advances in steps that end on multiples of the probe interval, and ``progress`` is
        called after each step.  Wall time spent here is what :meth:`result` reports.
        """
        end_ns = self.scenario.duration_ns if until_ns is None else until_ns
        step = self.scenario.probe_interval_ns
        while (now := self.now_ns) < end_ns:
            target = min(end_ns, (now // step + 1) * step)
            started = time.perf_counter_ns()
            self._sim.run_until(target)
            self._wall_ns += time.perf_counter_ns() - started
            if progress is not None:
                progress(target, end_ns)

    def clients(self) -> list[ClientInfo]:
        """The simulated clients with their hostnames and device names."""
        return list(self._sim.clients())

    def list_params(self, client: int) -> list[Param]:
        """Every parameter file of ``client``'s tree: relative path, lctl name, writability."""
        return [Param(*entry) for entry in self._sim.list_params(client)]

    def get_param(self, client: int, name: str) -> str:
        """The exact text of a parameter file (``name`` is an lctl name with the exact device)."""
        return str(self._sim.get_param(client, name))

    def read_stats(self, reader: Any) -> dict[str, Any]:
        """``reader.read()`` of a ``pfstune._pfsim.StatsReader`` whose paths are ``CLIENT:lctl name``:
        this simulation's files, parsed by the reader of real client files (see ``SimBackend.probe_table``)."""
        return dict(self._sim.read_stats(reader))

    def set_param(self, client: int, name: str, value: str) -> None:
        """Write ``value`` to a parameter; raises OSError (ERANGE, EINVAL, ...) as the kernel would."""
        self._sim.set_param(client, name, value)

    def set_all(self, name: str, value: str, clients: Iterable[int] | None = None) -> int:
        """Write ``value`` to every device of every client matching ``name`` and return how many.

        ``name`` is an lctl name without the device, e.g. ``osc.max_pages_per_rpc`` sets
        ``osc.*.max_pages_per_rpc``; ``clients`` limits it to those clients (default: all).
        Raises :class:`UserError` if nothing matches and OSError if the core refuses the value.
        """
        kind, _, param = name.partition(".")
        pattern = f"{kind}.*.{param}"
        count = 0
        for client in range(self.scenario.cluster["clients"]) if clients is None else clients:
            if client not in self._names:
                self._names[client] = [p.name for p in self.list_params(client)]
            for lctl_name in fnmatch.filter(self._names[client], pattern):
                self.set_param(client, lctl_name, value)
                count += 1
        if count == 0:
            raise UserError(f"no simulated parameter matches {pattern!r}")
        return count

    def totals(self) -> dict[str, int]:
        """Whole-run counters of all clients: sim_ns, events, app and OSC bytes read and written."""
        return {key: int(value) for key, value in self._sim.totals().items()}

    def ior_bandwidth(self) -> dict[str, dict[str, list[float]]]:
        """IOR's own figures for each ``ior`` job: MiB/s of every write and read phase that ended.

        As IOR reports ``bw(MiB/s)``: the bytes of a phase (block x segments x processes) over
        the time from its start until every rank has finished it (for a write phase with
        ``fsync``, the fsync included), 2^20-byte MiB.  A phase starts at the job's start or at
        the barrier that ended the previous repetition's removal; the time of the removal is not
        counted, as IOR does not count it.  Phases cut off by the end of the run are left out.
        """
        barriers = self._sim.barrier_times()
        figures: dict[str, dict[str, list[float]]] = {}
        for index, job in enumerate(self.scenario.jobs):
            if job.ior is None:
                continue
            mib = job.ior.block * job.ior.segments * job.ior.processes / 2**20
            marks = [int(t) for t in barriers[index]]  # after write, after read, after removal, ...
            writes: list[float] = []
            reads: list[float] = []
            start = job.start_ns
            for rep in range(0, len(marks), 3):
                written_at = marks[rep]
                writes.append(_mib_per_second(mib, start, written_at))
                if rep + 1 < len(marks):
                    reads.append(_mib_per_second(mib, written_at, marks[rep + 1]))
                if rep + 2 < len(marks):
                    start = marks[rep + 2]
            figures[job.name] = {"write_mibps": writes, "read_mibps": reads}
        return figures

    def h5bench_rate(self) -> dict[str, dict[str, Any]]:
        """h5bench's own figure for each h5bench job: its "observed rate" over the finished timesteps.

        h5bench_write and h5bench_read print the data size over the run's time less the
        emulated compute time between timesteps: ``size / (t_end - t_start - (nts - 1) x
        compute_time)``.  Here ``nts`` is the number of timesteps every rank finished within the
        run, ``t_end`` when the last rank finished the last of them, ``t_start`` the job's start;
        MiB = 2^20 bytes (h5bench prints MB of 2^20 bytes, GB of 2^30 in its newer releases).
        ``observed_mibps`` is None before every rank has finished a timestep.  Ranks that
        compute while others still read make the figure exceed what the OSTs deliver, as it
        does in h5bench.
        """
        figures: dict[str, dict[str, Any]] = {}
        for job, (step_bytes, done) in zip(self.scenario.jobs, self._sim.h5_timesteps(), strict=True):
            if job.h5bench is None:
                continue
            steps = len(done)
            rate = None
            if steps:
                busy_ns = int(done[-1]) - job.start_ns - (steps - 1) * job.h5bench.compute_ns
                rate = _mib_per_second(steps * int(step_bytes) / 2**20, 0, busy_ns)
            figures[job.name] = {"timesteps": steps, "observed_mibps": rate}
        return figures

    def dlio_rate(self) -> dict[str, dict[str, Any]]:
        """DLIO's own figures for each ``dlio`` job, as dlio_benchmark reports them.

        ``samples_per_second`` (its ``train_throughput_samples_per_second``): the samples of the
        training steps that ended, over the job's time so far (from its start to the run's end or
        its stop); ``io_mibps`` (``train_io_mean_MB_per_second``): those samples' bytes, MiB =
        2^20 bytes; ``au_percent`` (``train_au_percentage``): the share of that time the ranks
        spent in training steps.  Each of a rank's ``read_threads`` loaders assembles its share
        of every batch and runs its share's step, so the rank's steps are its loaders' mean.
        None before the job starts.
        """
        figures: dict[str, dict[str, Any]] = {}
        for job, done in zip(self.scenario.jobs, self._sim.dlio_steps(), strict=True):
            if job.dlio is None:
                continue
            elapsed_ns = min(self.now_ns, job.stop_ns) - job.start_ns
            if elapsed_ns <= 0 or not done:
                figures[job.name] = {"samples_per_second": None, "io_mibps": None, "au_percent": None}
                continue
            dlio = job.dlio
            samples = sum(done) * dlio.batch_size / dlio.read_threads
            per_second = samples / (elapsed_ns / 1e9)
            figures[job.name] = {
                "samples_per_second": per_second,
                "io_mibps": per_second * dlio.sample_size / 2**20,
                "au_percent": 100.0 * statistics.fmean(done) * dlio.computation_ns / elapsed_ns,
            }
        return figures

    def result(self) -> dict[str, Any]:
        """The run summary printed by ``pfstune sim run --json`` (MB = 10^6 bytes).

        ``mbps`` counts application bytes read and written per simulated second, ``osc_mbps``
        the bytes carried by OSC RPCs; ``wall_seconds`` is the wall time spent simulating (the
        engine's loop, which is what a run without a tuner takes), ``speedup`` simulated seconds
        per wall second.  A scenario with ``ior`` jobs adds ``ior``: :meth:`ior_bandwidth`, by job
        name; one with h5bench jobs adds ``h5bench``: :meth:`h5bench_rate`, and one with dlio
        jobs ``dlio``: :meth:`dlio_rate`, by job name.
        """
        totals = self.totals()
        sim_seconds = totals["sim_ns"] / 1e9
        wall_seconds = self._wall_ns / 1e9

        def mbps(nbytes: int) -> float:
            return nbytes / sim_seconds / 1e6 if sim_seconds else 0.0

        return {
            "scenario": self.scenario.name,
            "sim_seconds": sim_seconds,
            "wall_seconds": wall_seconds,
            "events": totals["events"],
            "mbps": mbps(totals["app_read_bytes"] + totals["app_write_bytes"]),
            "read_mbps": mbps(totals["app_read_bytes"]),
            "write_mbps": mbps(totals["app_write_bytes"]),
            "osc_mbps": mbps(totals["osc_read_bytes"] + totals["osc_write_bytes"]),
            "events_per_second": totals["events"] / wall_seconds if wall_seconds else 0.0,
            "speedup": sim_seconds / wall_seconds if wall_seconds else 0.0,
            **({"ior": ior} if (ior := self.ior_bandwidth()) else {}),
            **({"h5bench": h5} if (h5 := self.h5bench_rate()) else {}),
            **({"dlio": dlio} if (dlio := self.dlio_rate()) else {}),
        }


def _mib_per_second(mib: float, begin_ns: int, end_ns: int) -> float:
    """``mib`` over the time from ``begin_ns`` to ``end_ns`` (at least 1 ns: never divide by 0)."""
    return mib / (max(end_ns - begin_ns, 1) / 1e9)
