"""The ``bandit`` tuner: seed 004's contextual epsilon-greedy bandit, arms per access pattern.

Bez et al. tune the TWINS scheduler's time window at the I/O forwarding layer with a contextual
bandit: one k-armed bandit per access pattern, learning online while applications run, with no
prior training, and reusing what was learned for every application that shows the same pattern.
Here the arms are Lustre configurations (``max_pages_per_rpc``, ``max_rpcs_in_flight``) and the
reward is an OSC's throughput:

- **Context**: the access pattern of the interval that just ended (operation, sequential or
  random, request-size class; :func:`pfstune.tuners._pattern.access_pattern`).  The pattern is
  assumed to last into the next interval (the paper's detection also lags by one step).
- **Arms**: a grid of configurations, ``coarse`` by default (``max_pages_per_rpc`` 16, 64, 256,
  1024 x ``max_rpcs_in_flight`` 2, 8, 32, 128: 16 arms, Lustre's defaults among them) or the whole
  ``dial99`` grid; arms outside the actuator's bounds are never chosen.
- **Values**: Q(pattern, configuration) is the mean OSC throughput (MB/s) of the intervals
  observed in that pattern under that configuration (a sample average; with ``step_size`` > 0
  the sample average of an arm's first 1/step_size rewards, then an exponential
  recency-weighted average with that step, for drifting systems).  Rewards are raw MB/s, not
  normalised per OSC: where OSCs of one pattern carry very different loads, an arm tried
  mostly on the busier one looks better than it is (normalising was not tried).
  Every interval of every OSC updates the table, whichever configuration was in force.
- **Choice**: while the pattern has arms never tried, one of them at random (every arm is tried
  once before the greedy phase, the usual optimistic start); then with probability ``epsilon``
  a random arm, else the arm of highest Q.
- **Sharing**: the table is per pattern, not per OSC: every OSC of the node that shows a pattern
  learns for the others (the paper's "re-use learned information for all applications that
  share similar patterns").  OSCs with different patterns never influence each other, and each
  OSC draws its random numbers from its own stream.
- **Idle**: an OSC that moved no data goes back to the configuration it had when first seen.

Random draws are SHA-256 of (seed, OSC, draw number), so a run is reproducible, independent of
the order in which OSCs are asked, and the state to save is one counter per OSC.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pfstune.errors import UserError
from pfstune.features import osc_throughput_mbps
from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner, keep, tuned_part
from pfstune.tuners._pattern import access_pattern, spatiality_of

Arm = tuple[int, int]  # (max_pages_per_rpc, max_rpcs_in_flight)

#: The arm grids ``grid=`` may name.
GRIDS: dict[str, tuple[Arm, ...]] = {
    "coarse": tuple((p, f) for p in (16, 64, 256, 1024) for f in (2, 8, 32, 128)),
    "dial99": tuple((2**i, 2**j) for i in range(11) for j in range(9)),
}


@dataclass
class _Osc:
    """What the bandit remembers about one OSC."""

    original: Config | None = None
    spatiality: str | None = None
    draws: int = 0  # random numbers drawn so far (the position in the OSC's stream)


class BanditTuner(Tuner):
    """Contextual epsilon-greedy over configurations, one arm set per access pattern."""

    name = "bandit"
    shares_state_across_oscs = True

    def __init__(self, epsilon: float = 0.1, grid: str = "coarse", step_size: float = 0.0, seed: int = 0) -> None:
        """``epsilon``: exploration probability; ``grid``: ``coarse`` or ``dial99``; ``step_size``: 0 = sample mean."""
        if not 0.0 <= epsilon <= 1.0:
            raise UserError(f"tuner bandit: epsilon={epsilon} is not between 0 and 1")
        if grid not in GRIDS:
            raise UserError(f"tuner bandit: unknown grid {grid!r}; known: {', '.join(GRIDS)}")
        if not 0.0 <= step_size <= 1.0:
            raise UserError(f"tuner bandit: step_size={step_size} is not between 0 and 1 (0: sample average)")
        self.epsilon = float(epsilon)
        self.grid = grid
        self.step_size = float(step_size)
        self.seed = int(seed)
        self._q: dict[str, dict[Arm, list[float]]] = {}  # pattern -> arm -> [count, value]
        self._oscs: dict[str, _Osc] = {}

    # --- learning ------------------------------------------------------------------------------

    def _osc(self, osc: str) -> _Osc:
        state = self._oscs.get(osc)
        if state is None:
            state = self._oscs[osc] = _Osc()
        return state

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        """Credit the interval's throughput to (its access pattern, the configuration in force)."""
        state = self._osc(osc)
        if state.original is None:
            state.original = tuned_part(config)
        pattern = access_pattern(metrics, state.spatiality)
        if pattern is None:
            return
        state.spatiality = spatiality_of(pattern)
        reward = osc_throughput_mbps(metrics)
        if math.isnan(reward) or not all(param in config for param in TUNED_PARAMS):
            return
        arm = (int(config["max_pages_per_rpc"]), int(config["max_rpcs_in_flight"]))
        entry = self._q.setdefault(pattern, {}).setdefault(arm, [0.0, 0.0])
        entry[0] += 1
        step = max(self.step_size, 1.0 / entry[0])  # the first reward sets the value outright
        entry[1] += step * (reward - entry[1])

    # --- choosing ------------------------------------------------------------------------------

    def _uniform(self, osc: str, state: _Osc) -> float:
        """The OSC's next number in [0, 1) (see the module docstring)."""
        digest = hashlib.sha256(f"pfstune.bandit\0{self.seed}\0{osc}\0{state.draws}".encode()).digest()
        state.draws += 1
        return int.from_bytes(digest[:8], "little") / 2.0**64

    def _pick(self, osc: str, state: _Osc, arms: list[Arm]) -> Arm:
        return arms[min(len(arms) - 1, int(self._uniform(osc, state) * len(arms)))]

    def suggest(self, context: Context) -> Config:
        """An untried arm, a random arm (probability epsilon) or the best arm of the OSC's pattern."""
        state = self._osc(context.osc)
        if state.original is None:
            state.original = tuned_part(context.config)
        bounds = {param: context.bounds.get(param, (1, 1 << 30)) for param in TUNED_PARAMS}
        pattern = access_pattern(context.metrics, state.spatiality)
        if pattern is None:  # idle or first probe: the configuration the OSC had
            return keep(state.original or {}, context)
        pages, flight = bounds["max_pages_per_rpc"], bounds["max_rpcs_in_flight"]
        arms = [a for a in GRIDS[self.grid] if pages[0] <= a[0] <= pages[1] and flight[0] <= a[1] <= flight[1]]
        if not arms:
            return keep({}, context)
        table = self._q.get(pattern, {})
        untried = [arm for arm in arms if arm not in table]
        if untried:
            arm = self._pick(context.osc, state, untried)
        elif self.epsilon > 0 and self._uniform(context.osc, state) < self.epsilon:
            arm = self._pick(context.osc, state, arms)
        else:
            arm = max(arms, key=lambda a: table[a][1])  # ties: the first in grid order
        return {"max_pages_per_rpc": arm[0], "max_rpcs_in_flight": arm[1]}

    # --- lifecycle -----------------------------------------------------------------------------

    def q_values(self, pattern: str) -> dict[Arm, float]:
        """The learned mean throughput (MB/s) of every arm tried in ``pattern``."""
        return {arm: entry[1] for arm, entry in self._q.get(pattern, {}).items()}

    def forget(self, osc: str) -> None:
        """Drop ``osc``'s own state; what its patterns taught stays in the shared table."""
        self._oscs.pop(osc, None)

    def state_dict(self) -> dict[str, Any]:
        """The value table and each OSC's original configuration, spatiality and draw count."""
        return {
            "seed": self.seed,
            "q": {
                pattern: [[arm[0], arm[1], entry[0], entry[1]] for arm, entry in sorted(arms.items())]
                for pattern, arms in sorted(self._q.items())
            },
            "oscs": {
                osc: {"original": s.original, "spatiality": s.spatiality, "draws": s.draws}
                for osc, s in sorted(self._oscs.items())
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from what :meth:`state_dict` saved."""
        try:
            self.seed = int(state.get("seed", self.seed))
            self._q = {
                str(pattern): {(int(p), int(f)): [float(n), float(v)] for p, f, n, v in rows}
                for pattern, rows in dict(state.get("q", {})).items()
            }
            self._oscs = {
                str(osc): _Osc(
                    original=None if s.get("original") is None else {k: int(v) for k, v in s["original"].items()},
                    spatiality=s.get("spatiality"),
                    draws=int(s.get("draws", 0)),
                )
                for osc, s in dict(state.get("oscs", {})).items()
            }
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise UserError(f"tuner bandit: invalid saved state ({err})") from None
