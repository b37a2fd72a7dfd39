"""The ``random`` tuner: DIAL's data collector as a policy -- a random dial99 configuration every probe.

DIAL's training data (seed 000, ``../shared/data/dial-lustre``) was recorded by writing, after every
probe, a configuration drawn uniformly from the dial99 grid (``max_pages_per_rpc`` in 2^0..2^10
x ``max_rpcs_in_flight`` in 2^0..2^8) to every OSC.  This tuner does the same, so that
``pfstune collect`` can record simulated data the way the real data was recorded.

- **What**: each :meth:`RandomTuner.suggest` returns a grid point drawn uniformly from those
  inside ``context.bounds`` (points outside are skipped, not clipped, so the draw stays uniform
  over what may be written).  A parameter whose bounds hold no grid value keeps its current
  value, clamped into the bounds.  Metrics are ignored.
- **Per OSC**: every OSC has its own random stream, derived from ``seed`` and the OSC's device
  name with SHA-256 (never Python's per-process ``hash()``), so one OSC's draws do not depend on
  which other OSCs exist or in which order they are asked, and a run is reproducible.
- **The draw**: 64-bit outputs of a PCG64 bit generator (a stream numpy guarantees across
  versions) turned into an index by rejection sampling written out here, so the sequence of
  configurations does not depend on the numpy or Python version.
- **State**: the seed and each OSC's PCG64 state (128-bit integers as hexadecimal strings).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from pfstune.errors import UserError
from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner, clamp

#: DIAL's grid (seed 000): 11 x 9 = 99 configurations.
DIAL99: dict[str, tuple[int, ...]] = {
    "max_pages_per_rpc": tuple(2**i for i in range(11)),
    "max_rpcs_in_flight": tuple(2**i for i in range(9)),
}

_TWO_64 = 1 << 64


def _generator(seed: int, osc: str) -> np.random.PCG64:
    """The PCG64 stream of ``osc``: seeded from SHA-256 of the seed and the device name."""
    digest = hashlib.sha256(f"pfstune.random\0{seed}\0{osc}".encode()).digest()
    return np.random.PCG64(int.from_bytes(digest[:16], "little"))


def _below(generator: np.random.PCG64, n: int) -> int:
    """A uniform integer in 0..n-1 from 64-bit outputs (rejection sampling, no modulo bias)."""
    limit = _TWO_64 - _TWO_64 % n
    while True:
        value = int(generator.random_raw())
        if value < limit:
            return value % n


def _export(generator: np.random.PCG64) -> dict[str, Any]:
    state = generator.state
    return {
        "state": format(int(state["state"]["state"]), "x"),
        "inc": format(int(state["state"]["inc"]), "x"),
        "has_uint32": int(state["has_uint32"]),
        "uinteger": int(state["uinteger"]),
    }


def _import(data: Mapping[str, Any]) -> np.random.PCG64:
    generator = np.random.PCG64()
    generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": int(str(data["state"]), 16), "inc": int(str(data["inc"]), 16)},
        "has_uint32": int(data["has_uint32"]),
        "uinteger": int(data["uinteger"]),
    }
    return generator


class RandomTuner(Tuner):
    """A uniformly random dial99 configuration after every probe, per OSC (see the module docstring)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        """Draw from streams derived from ``seed`` (the same seed and OSC name give the same draws)."""
        self.seed = int(seed)
        self._streams: dict[str, np.random.PCG64] = {}

    def _stream(self, osc: str) -> np.random.PCG64:
        stream = self._streams.get(osc)
        if stream is None:
            stream = self._streams[osc] = _generator(self.seed, osc)
        return stream

    def suggest(self, context: Context) -> Config:
        """A grid point drawn uniformly among those within ``context.bounds``."""
        choices: dict[str, tuple[int, ...]] = {}
        config: Config = {}
        for param in TUNED_PARAMS:
            low, high = context.bounds.get(param, (1, 1 << 30))
            inside = tuple(value for value in DIAL99[param] if low <= value <= high)
            if inside:
                choices[param] = inside
            else:  # no grid value allowed: keep what is in force, within bounds
                config[param] = clamp(int(context.config.get(param, low)), (low, high))
        if choices:
            sizes = [len(values) for values in choices.values()]
            index = _below(self._stream(context.osc), int(np.prod(sizes)))
            for param, values in reversed(choices.items()):  # the last parameter varies fastest
                index, position = divmod(index, len(values))
                config[param] = values[position]
        return {param: config[param] for param in TUNED_PARAMS}

    def forget(self, osc: str) -> None:
        """Drop ``osc``'s stream (a device that comes back starts its stream from the beginning)."""
        self._streams.pop(osc, None)

    def state_dict(self) -> dict[str, Any]:
        """The seed and every OSC's generator state (hex strings: JSON numbers cannot hold 128 bits)."""
        return {"seed": self.seed, "streams": {osc: _export(g) for osc, g in sorted(self._streams.items())}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue every stream where :meth:`state_dict` left it."""
        try:
            self.seed = int(state.get("seed", self.seed))
            self._streams = {str(osc): _import(data) for osc, data in dict(state.get("streams", {})).items()}
        except (KeyError, TypeError, ValueError) as err:
            raise UserError(f"tuner random: invalid saved state ({err})") from None
