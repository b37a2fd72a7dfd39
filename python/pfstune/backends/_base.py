"""The Backend interface: probe a client's statistics, apply a configuration, keep time.

Lifecycle: use a backend as a context manager.  ``__enter__`` prepares it (the Lustre backend
takes the node's agent lock and restores what a crashed agent left changed); inside, the agent
alternates :meth:`Backend.probe_table` and :meth:`Backend.apply_all` on :attr:`Backend.clock`;
``__exit__`` (normal exit, exception, or a signal turned into a normal exit) puts every changed
parameter back to its original value.  ``__exit__`` must be safe to call after a failed
``__enter__`` and more than once.

Every backend hands the agent the same thing: a :class:`~pfstune.lustre.types.Snapshot` parsed
from Lustre's own text by :mod:`pfstune.lustre.parse`, or the same numbers packed into arrays
(:meth:`Backend.probe_table`, what the agent reads), so features are computed one way only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType

from pfstune.clock import Clock
from pfstune.lustre.limits import ActuatorError
from pfstune.lustre.table import ProbeTable
from pfstune.lustre.types import Snapshot
from pfstune.tuners._base import Config


class Backend(ABC):
    """A client (real or simulated) that can be probed and tuned."""

    #: The clock the agent runs on (real time, or simulated time for the sim backend).
    clock: Clock
    #: A dry run: applies are printed, nothing is written, the client keeps its values.
    dry_run: bool = False

    def __enter__(self) -> Backend:
        """Prepare for probing and applying (default: nothing to do)."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Restore every original value (default: :meth:`close`)."""
        self.close()

    @abstractmethod
    def probe(self) -> Snapshot:
        """Read every client OSC and llite instance the agent manages, now."""

    def probe_table(self) -> ProbeTable:
        """A probe as the agent uses it: :meth:`probe` packed into arrays (:mod:`pfstune.lustre.table`).

        A backend that can read its client straight into a table overrides this (the Lustre
        backend does); the numbers must be the same as packing :meth:`probe`'s snapshot.
        """
        return ProbeTable.from_snapshot(self.probe())

    @abstractmethod
    def bounds(self, osc: str) -> dict[str, tuple[int, int]]:
        """The inclusive range of each tuned parameter that may be written on ``osc``."""

    @abstractmethod
    def apply(self, osc: str, config: Config) -> Config:
        """Write ``config`` (only the parameters that change) to ``osc``; return what is now in force.

        Raises :class:`pfstune.lustre.actuator.ActuatorError` for a value that was refused or
        did not stick; the agent logs it and goes on.
        """

    def apply_all(self, configs: Mapping[str, Config]) -> dict[str, Config | ActuatorError]:
        """:meth:`apply` on every OSC of ``configs``, as one tick does: per OSC, what is now in force,
        or the :class:`~pfstune.lustre.limits.ActuatorError` that :meth:`apply` raised.

        The default calls :meth:`apply` once per OSC; a backend that can share work between
        OSCs overrides it (the Lustre backend saves every original of the tick in one write).
        """
        results: dict[str, Config | ActuatorError] = {}
        for osc, config in configs.items():
            try:
                results[osc] = self.apply(osc, config)
            except ActuatorError as err:
                results[osc] = err
        return results

    def left_alone(self) -> frozenset[str]:
        """OSCs the backend will not write any more (someone else changed their values); default none."""
        return frozenset()

    def close(self) -> None:  # noqa: B027
        """Restore originals and release resources; idempotent (default: nothing)."""
