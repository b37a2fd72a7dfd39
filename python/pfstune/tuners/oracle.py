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

from pfstune.errors import UserError
from pfstune.tuners._base import Config, Context, Tuner, clamp


class OracleTuner(Tuner):
    """One fixed configuration for every OSC, all the time (see the module docstring)."""

    name = "oracle"

    def __init__(self, max_pages_per_rpc: int = 0, max_rpcs_in_flight: int = 0) -> None:
        """The static configuration to hold; both values are required."""
        if max_pages_per_rpc < 1 or max_rpcs_in_flight < 1:
            raise UserError(
                "tuner oracle: the oracle is the best static configuration of a simulated scenario; "
                "`pfstune sim run --tuner oracle` finds it by sweeping, or give it with "
                "--tuner-option max_pages_per_rpc=N --tuner-option max_rpcs_in_flight=M"
            )
        self.config: Config = {
            "max_pages_per_rpc": int(max_pages_per_rpc),
            "max_rpcs_in_flight": int(max_rpcs_in_flight),
        }

    def suggest(self, context: Context) -> Config:
        """The fixed configuration, within the OSC's bounds."""
        return {param: clamp(value, context.bounds.get(param, (value, value))) for param, value in self.config.items()}
