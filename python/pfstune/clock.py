"""The agent's clock, injected so that the same loop runs in real time or in simulated time.

:class:`Clock` is the interface; :class:`RealClock` is wall time for a real client.  The sim
backend's clock (:class:`pfstune.backends.sim.SimClock`) advances the simulation instead of
sleeping, so a 300 s scenario takes as long as the simulator needs, not 300 s.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod


class Clock(ABC):
    """Seconds on some monotonic timeline, and a way to wait for a point on it."""

    @abstractmethod
    def now(self) -> float:
        """The current time in seconds (only differences are meaningful)."""

    @abstractmethod
    def sleep_until(self, when: float) -> bool:
        """Wait until ``now() >= when``; False if the wait was cut short (stop requested, end of time)."""

    def stopped(self) -> bool:
        """Whether a stop was requested (checked before the first tick, which no sleep precedes)."""
        return False


class RealClock(Clock):
    """Monotonic wall time; ``stop`` (set by a signal handler) interrupts a sleep at once."""

    def __init__(self, stop: threading.Event | None = None) -> None:
        """A clock whose sleeps end early when ``stop`` is set."""
        self.stop = stop or threading.Event()

    def now(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def sleep_until(self, when: float) -> bool:
        """Sleep until ``when`` unless ``stop`` is set first (then return False at once)."""
        delay = when - time.monotonic()
        if delay > 0:
            return not self.stop.wait(delay)
        return not self.stop.is_set()

    def stopped(self) -> bool:
        """Whether ``stop`` is set."""
        return self.stop.is_set()
