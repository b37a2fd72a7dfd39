"""The ``default`` tuner: changes nothing, so the client runs with what it had (the baseline)."""

from __future__ import annotations

from pfstune.tuners._base import Config, Context, Tuner


class DefaultTuner(Tuner):
    """Keeps every OSC's configuration as it is."""

    name = "default"

    def suggest(self, context: Context) -> Config:
        """The configuration already in force."""
        return dict(context.config)
