"""The Lustre backend: a real client's tree (``/``), or any directory laid out like one.

Probes go through :class:`pfstune.lustre.snapshot.Prober` (discovery, the 2.10 and 2.15
layouts, damaged files left out rather than guessed) reading only what the agent needs
(:data:`~pfstune.lustre.snapshot.MINIMAL_FILES`); writes go through
:class:`pfstune.lustre.actuator.Actuator` (allow-list, ranges, originals saved before the first
write, read-back, restore on exit and after a crash, one agent per node, dry run).  Time is the
real monotonic clock; a stop request (SIGTERM) cuts a sleep short.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from pfstune.backends._base import Backend
from pfstune.clock import RealClock
from pfstune.errors import UserError
from pfstune.lustre.actuator import Actuator
from pfstune.lustre.limits import ActuatorError, rule
from pfstune.lustre.snapshot import MINIMAL_FILES, Prober
from pfstune.lustre.state import DEFAULT_STATE_DIR
from pfstune.lustre.table import ProbeTable
from pfstune.lustre.types import Snapshot
from pfstune.tuners._base import TUNED_PARAMS, Config

log = logging.getLogger("pfstune.lustre")


class LustreBackend(Backend):
    """The client OSCs under ``root`` matching ``osc_glob``, probed and tuned in real time."""

    def __init__(
        self,
        root: Path = Path("/"),
        state_dir: Path = DEFAULT_STATE_DIR,
        osc_glob: str = "*",
        dry_run: bool = False,
        stop: threading.Event | None = None,
        echo: Callable[[str], None] | None = None,
    ) -> None:
        """Prepare the backend; nothing is read, locked or written until ``__enter__``.

        ``echo`` receives the dry run's ``lctl set_param`` lines (default: stdout).
        """
        root = Path(root)
        if not root.is_dir():
            raise UserError(f"--root {root}: not a directory")
        self.clock = RealClock(stop)
        self.prober = Prober(root, osc_glob=osc_glob, files=MINIMAL_FILES)
        self.dry_run = dry_run
        self.actuator = Actuator(root, state_dir, dry_run=dry_run, logger=log, echo=echo)
        # The tuned parameters' bounds depend on the OSC's server limits (read once per OSC and
        # kept by the actuator until remount) and the node's RAM, not on other parameters, so
        # they are asked for once per OSC rather than on every tick (~15 µs each, 1,000 OSCs).
        self._bounds: dict[str, dict[str, tuple[int, int]]] = {}
        self._fixed_bounds = all(rule("osc", param).bound_by is None for param in TUNED_PARAMS)

    def __enter__(self) -> LustreBackend:
        """Take the node's agent lock and restore what a crashed agent left changed."""
        self.actuator.__enter__()
        return self

    def probe(self) -> Snapshot:
        """Read every selected client OSC and llite instance now."""
        return self.prober.probe(self.clock.now())

    def probe_table(self) -> ProbeTable:
        """Read what the features need of every client OSC now, straight into arrays (see Prober.probe_table)."""
        return self.prober.probe_table(self.clock.now())

    def bounds(self, osc: str) -> dict[str, tuple[int, int]]:
        """Lustre's range of each tuned parameter on ``osc`` (max_pages_per_rpc up to the brw_size)."""
        found = self._bounds.get(osc)
        if found is None:
            found = {param: self.actuator.bounds(osc, param) for param in TUNED_PARAMS}
            if self._fixed_bounds:
                self._bounds[osc] = found
        return dict(found)

    def apply(self, osc: str, config: Config) -> Config:
        """Write the changed values through the actuator; return what is now in force."""
        return dict(self.actuator.apply(osc, config))

    def apply_all(self, configs: Mapping[str, Config]) -> dict[str, Config | ActuatorError]:
        """Write every OSC's changes, with the originals of all of them saved in one write first."""
        results = self.actuator.apply_many(configs)
        return {osc: r if isinstance(r, ActuatorError) else dict(r) for osc, r in results.items()}

    def left_alone(self) -> frozenset[str]:
        """The OSCs whose tuned values someone else changed (the actuator no longer writes them)."""
        return self.actuator.left_alone

    def close(self) -> None:
        """Write every original value back and release the lock (idempotent)."""
        self.actuator.close()
