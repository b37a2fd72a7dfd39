"""The ``oracle`` tuner: the best static dial99 configuration of a simulated scenario.

The oracle is the yardstick the other tuners are normalised to: the single configuration
(``max_pages_per_rpc``, ``max_rpcs_in_flight``), applied to every OSC for the whole run, under
which the scenario moves the most data.  Finding it takes one simulated run per configuration
of the dial99 grid (:func:`pfstune.sim.sweep.best_static`), so it exists only on the simulator:
``pfstune sim run --tuner oracle`` sweeps first, then reports the winner's run.

As a :class:`~pfstune.tuners._base.Tuner` it is that static policy: built with the configuration
(``--tuner-option max_pages_per_rpc=16 --tuner-option max_rpcs_in_flight=128``, e.g. the one a
sweep found), it writes it to every OSC and never changes it.  Without one it refuses to start,
because on a real client there is no sweep to take it from.
"""

from __future__ import annotations

import logging

from pfstune.errors import UserError
from pfstune.lustre.limits import OSC_MAX_RIF_MAX, rule
from pfstune.tuners._base import Config, Context, Tuner, clamp

log = logging.getLogger("pfstune.tuners.oracle")

#: The most each option may be: 64 MiB RPCs (Lustre's largest brw_size) and OSC_MAX_RIF_MAX.
LIMITS = {"max_pages_per_rpc": rule("osc", "max_pages_per_rpc").hi, "max_rpcs_in_flight": OSC_MAX_RIF_MAX}


class OracleTuner(Tuner):
    """One fixed configuration for every OSC, all the time (see the module docstring)."""

    name = "oracle"

    def __init__(self, max_pages_per_rpc: int = 0, max_rpcs_in_flight: int = 0) -> None:
        """The static configuration to hold; both values are required."""
        if max_pages_per_rpc == 0 and max_rpcs_in_flight == 0:
            raise UserError(
                "tuner oracle: the oracle is the best static configuration of a simulated scenario; "
                "`pfstune sim run --tuner oracle` finds it by sweeping, or give it with "
                "--tuner-option max_pages_per_rpc=N --tuner-option max_rpcs_in_flight=M"
            )
        self.config: Config = {"max_pages_per_rpc": max_pages_per_rpc, "max_rpcs_in_flight": max_rpcs_in_flight}
        for param, value in self.config.items():
            if not 1 <= value <= LIMITS[param]:
                both = "; give both max_pages_per_rpc and max_rpcs_in_flight" if value == 0 else ""
                raise UserError(f"tuner oracle: {param}={value} is not between 1 and {LIMITS[param]}{both}")
        self._warned: set[tuple[str, int]] = set()

    def suggest(self, context: Context) -> Config:
        """The fixed configuration, within the OSC's bounds (a warning names a value cut to them)."""
        config = {}
        for param, value in self.config.items():
            config[param] = clamp(value, context.bounds.get(param, (value, value)))
            if config[param] != value and (param, config[param]) not in self._warned:
                self._warned.add((param, config[param]))  # once, not every tick of every OSC
                log.warning(
                    "oracle: %s=%d is beyond what %s takes; %d is used", param, value, context.osc, config[param]
                )
        return config
