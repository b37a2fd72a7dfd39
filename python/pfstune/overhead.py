"""What one real agent tick costs over N OSCs: ``pfstune overhead --oscs N``.

A virtual client tree with N OSC devices is laid out in a temporary directory (in ``/dev/shm``
where there is one: sysfs and procfs live in memory, and an ext4 ``/tmp`` makes every write of
a tunable a journalled truncation, ~15x slower per write here), in the 2.15 layout
(sysfs, procfs, debugfs) with the exact text pfsim prints for a busy OSC (one simulated client
writing and reading; every device gets a copy of its files).  The agent then runs as it would
on a client, with the Lustre backend (files opened, read, parsed; writes through the actuator
with its state file and read-back) and the chosen tuner (default ``dial`` with the shipped model):

1. a first tick: discovery and a probe, with nothing to compare yet, so learned tuners only
   observe; a tuner that decides without history (``random``) writes every OSC here, and the
   originals of all those parameters are saved first;
2. the statistics move on by one probe interval (every device's files rewritten), and a
   warm-up tick, the first that decides: a model's first call pays its set-up there
   (LightGBM's, 0.1-0.4 s), once per agent (``warmup_tick_ms``, not timed with the others);
3. the statistics move on again, and a timed tick: probe, features, decision (model
   inference for every OSC and all 99 candidates in one batch), apply.

Step 3 repeats ``repeat`` times and the median of each phase is reported, in milliseconds for
the whole tick and per OSC.  The first tick is reported apart (``first_tick_ms``,
``first_apply_ms``, ``first_writes``): with ``--tuner random`` it is the cost of a node's first
changes, originals included, which the median hides.  Every tick must see all N OSCs (device
names past ``OSTffff`` take more hex digits, as Lustre's ``%04x`` prints them).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfstune.agent import Agent, TickReport
from pfstune.backends.lustre import LustreBackend
from pfstune.errors import PfstuneError
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import parse_scenario
from pfstune.tuners import make_tuner

_SCENARIO = """\
name: overhead-source
seed: 11
duration: 60s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: writer, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 4g, stripe_count: 1}
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 1m, filesize: 4g, stripe_count: 1}
"""


class _Source:
    """One busy simulated OSC whose files are copied to every virtual device."""

    def __init__(self) -> None:
        self.engine = Engine(parse_scenario(_SCENARIO, "<overhead>"))
        self.engine.run(until_ns=2_000_000_000)
        client = self.engine.clients()[0]
        busiest = max(client["osc"], key=self._rpc_bytes)
        self.device = busiest
        self.llite = client["llite"]
        self.params = [p for p in self.engine.list_params(0) if f"/{busiest}/" in p.path or f"/{self.llite}/" in p.path]

    def _rpc_bytes(self, device: str) -> int:
        """Bytes carried by the device's read and write RPCs so far (from its ``stats`` text)."""
        total = 0
        for line in self.engine.get_param(0, f"osc.{device}.stats").splitlines():
            fields = line.split()
            if fields and fields[0] in ("read_bytes", "write_bytes"):
                total += int(fields[6])
        return total

    def advance(self, seconds: float) -> None:
        self.engine.run(until_ns=self.engine.now_ns + int(seconds * 1e9))

    def files(self) -> dict[str, tuple[str, bool]]:
        """Relative path template (``{dev}`` for the device) -> (text, writable)."""
        out = {}
        for param in self.params:
            text = self.engine.get_param(0, param.name)
            out[param.path.replace(self.device, "{dev}")] = (text, param.writable)
        return out


@dataclass
class Tree:
    """N copies of the source OSC under ``root``."""

    root: Path
    devices: list[str]
    instance: str

    def write(self, files: dict[str, tuple[str, bool]], tunables_too: bool) -> None:
        """Write every device's files; tunables only the first time (the agent owns them after)."""
        for template, (text, writable) in files.items():
            if writable and not tunables_too and not template.endswith(("/stats", "/rpc_stats")):
                continue
            if "{dev}" not in template:
                path = self.root / template
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                continue
            for device in self.devices:
                path = self.root / template.format(dev=device)
                if tunables_too:
                    path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)


def tree_parent() -> str | None:
    """Where the virtual tree goes: ``/dev/shm`` (tmpfs) if usable, else the default temp dir."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def measure(
    oscs: int,
    tuner: str = "dial",
    repeat: int = 5,
    interval: float = 0.5,
    tuner_options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Median per-phase times of one agent tick over ``oscs`` virtual OSCs (see the module docstring).

    ``probe_ms`` ... ``tick_ms`` are for all the OSCs of the tick; ``per_osc`` gives each phase
    divided by the OSCs (the design's "per-OSC probe, feature, inference and apply times").
    """
    source = _Source()
    fsname, _, instance = source.llite.rpartition("-")  # an fsname may contain '-'
    devices = [f"{fsname}-OST{i:04x}-osc-{instance}" for i in range(oscs)]
    reports: list[TickReport] = []
    parent = tree_parent()
    with tempfile.TemporaryDirectory(prefix="pfstune-overhead-", dir=parent) as tmp:
        tree = Tree(Path(tmp) / "root", devices, instance)
        tree.write(source.files(), tunables_too=True)
        policy = make_tuner(tuner, tuner_options)
        with LustreBackend(tree.root, state_dir=Path(tmp) / "state") as backend:
            agent = Agent(backend, policy, interval=interval)
            first = agent.tick()
            source.advance(interval)
            tree.write(source.files(), tunables_too=False)
            warmup = agent.tick()
            for _ in range(max(1, repeat)):
                source.advance(interval)
                tree.write(source.files(), tunables_too=False)
                reports.append(agent.tick())
    seen = {report.oscs for report in [first, warmup, *reports]}
    if seen != {oscs}:  # per-OSC figures would be divided by the wrong number
        raise PfstuneError(f"the agent saw {sorted(seen)} of the {oscs} virtual OSCs")

    def median_ms(field: str) -> float:
        return float(statistics.median(float(getattr(r, field)) for r in reports)) * 1e3

    phases = {
        "probe_ms": median_ms("probe_seconds"),
        "features_ms": median_ms("features_seconds"),
        "inference_ms": median_ms("decide_seconds"),
        "apply_ms": median_ms("apply_seconds"),
        "tick_ms": median_ms("seconds"),
    }
    return {
        "oscs": oscs,
        "tuner": tuner,
        "repeat": len(reports),
        "tree_dir": parent or tempfile.gettempdir(),
        **phases,
        "per_osc_ms": phases["tick_ms"] / oscs,
        "per_osc": {name: value / oscs for name, value in phases.items()},
        "writes_per_tick": float(statistics.median(sum(len(c) for c in r.changes.values()) for r in reports)),
        "warmup_tick_ms": warmup.seconds * 1e3,
        "first_tick_ms": first.seconds * 1e3,
        "first_apply_ms": first.apply_seconds * 1e3,
        "first_writes": sum(len(c) for c in first.changes.values()),
    }
