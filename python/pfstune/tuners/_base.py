"""The Tuner interface: what every tuning policy implements, whatever it is inside.

A tuner decides, for each client OSC independently, the configuration
(``max_pages_per_rpc``, ``max_rpcs_in_flight``) of the next interval from what the OSC's own
statistics said about the last one.  One tuner object serves all the OSCs an agent manages and
keeps its per-OSC state keyed by device name, so that a tuner with a model can score every OSC
in one batch (:meth:`Tuner.suggest_batch`).

Lifecycle, driven by :class:`pfstune.agent.Agent` once per probe interval:

1. ``observe(osc, config, metrics)`` for every OSC that has a completed interval: ``config`` is
   what was in force during it (read back from the client), ``metrics`` its feature row
   (:func:`pfstune.features.osc_features`, the one feature path).
2. ``suggest_batch(contexts)`` (by default ``suggest`` per context) returns the configuration
   to apply for the next interval.  Returning the current configuration means "change nothing".
   A tuner must stay within ``context.bounds``; the actuator refuses anything else anyway.
3. ``forget(osc)`` when a device disappears.
4. ``state_dict()`` / ``load_state_dict()`` save and restore everything learned, as plain
   JSON-serialisable data (never pickle), so an agent restart continues where it stopped.

Safety is not the tuner's job: the actuator checks ranges, saves originals and restores them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: A configuration of one OSC: parameter name (``max_pages_per_rpc``) -> value.
Config = dict[str, int]

#: The parameters the tuners of seeds 000 and 001 tune.
TUNED_PARAMS: tuple[str, ...] = ("max_pages_per_rpc", "max_rpcs_in_flight")


@dataclass(frozen=True)
class Context:
    """What a tuner knows about one OSC when it is asked for the next configuration.

    ``metrics`` is the feature row of the interval that just ended (empty on the very first
    probe, before any interval completed); ``bounds`` the inclusive range the actuator allows
    for each tuned parameter on this device.
    """

    osc: str
    time: float
    config: Config
    bounds: Mapping[str, tuple[int, int]]
    metrics: Mapping[str, float] = field(default_factory=dict)


class Tuner(ABC):
    """A per-OSC tuning policy.  See the module docstring for the call order."""

    #: The name users pass to ``--tuner``.
    name: ClassVar[str]
    #: Whether what one OSC teaches the tuner changes its choices for others (the bandit's shared
    #: table); the offline replay then gives each recorded run a tuner of its own.
    shares_state_across_oscs: ClassVar[bool] = False

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:  # noqa: B027
        """Learn from one completed interval of ``osc`` run under ``config`` (default: ignore it)."""

    @abstractmethod
    def suggest(self, context: Context) -> Config:
        """The configuration ``context.osc`` should run under next."""

    def suggest_batch(self, contexts: Sequence[Context]) -> list[Config]:
        """:meth:`suggest` for many OSCs at once; tuners with a model override it to batch inference."""
        return [self.suggest(context) for context in contexts]

    def forget(self, osc: str) -> None:  # noqa: B027
        """Drop what is known about ``osc`` (the device went away)."""

    def interval_warning(self, seconds: float) -> str | None:
        """Why probing every ``seconds`` misleads this tuner, for the agent to log once; None if it does not."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """Everything learned, as JSON-serialisable data (default: nothing)."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:  # noqa: B027
        """Restore what :meth:`state_dict` returned (default: nothing to restore)."""


def tuned_part(config: Mapping[str, int]) -> Config:
    """The tuned parameters present in ``config``, as ints (e.g. to remember an OSC's originals)."""
    return {param: int(config[param]) for param in TUNED_PARAMS if param in config}


def keep(config: Mapping[str, int], context: Context) -> Config:
    """``config``, with what is in force for a parameter it lacks, clamped into ``context.bounds``."""
    base = {**context.config, **config}
    out: Config = {}
    for param in TUNED_PARAMS:
        bounds = context.bounds.get(param, (1, 1 << 30))
        out[param] = clamp(int(base.get(param, bounds[0])), bounds)
    return out


def clamp(value: int, bounds: tuple[int, int]) -> int:
    """``value`` limited to the inclusive ``bounds``."""
    low, high = bounds
    return max(low, min(high, value))
