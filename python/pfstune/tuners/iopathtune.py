"""The ``iopathtune`` tuner: IOPathTune's model-free heuristic (seed 001), per OSC.

The poster describes the policy in a few lines; this is the reading implemented here:

- **What**: ``max_pages_per_rpc`` and ``max_rpcs_in_flight`` of each OSC, independently of
  every other OSC and client, from the OSC's own statistics.
- **When**: one decision per tuning period (10 s in the paper; ``period``).  The throughput of
  a period is measured over its second half only ("collects the snapshot in the middle"): right
  after a change the OSC still drains RPCs and dirty pages formed under the old configuration.
- **How**: like TCP congestion control, each step multiplies or divides one parameter by two.
  When the measured throughput beat the baseline (the period before the step) by more than
  ``tolerance``, the trend continues (the same step again).  When it fell by more than
  ``tolerance``, the step is reversed (the old value comes back) and that parameter's direction
  flips.  When it stayed within ``tolerance``, the step is kept and the other parameter is tried.
  A step that would leave the actuator's bounds tries the other direction, then the other
  parameter.
- **Workload changes**: the workload signature (read, write or mixed, by the share of bytes
  read: more than 70% is read, less than 30% write; and the mean llite request size, in powers
  of two, rounded, so that a short read at the end of a file does not change it) is compared
  period to period; a change drops the baseline and the trend and tuning starts again from the
  configuration in force ("adapts quickly when workloads change").
- **Settling**: after ``patience`` consecutive steps without a gain the tuner goes back to the
  best configuration it measured since the workload (or the last hold) began and holds it for
  ``hold_periods`` periods before probing again, so a converged OSC is not disturbed every
  period and small losses within ``tolerance`` do not add up.  A configuration becomes the best
  only by beating the best so far by more than ``tolerance``: on a flat surface the search
  returns to where it started, not to whichever configuration the noise favoured last.  A period whose measured half
  moved nothing (idle, or a burst that ended early) changes nothing.
- **Steps that do not take effect**: a reversal puts back the value before the step; a step the
  actuator refused or changed (the OSC is not at the value asked for) is dropped, and the next
  period measures a fresh baseline.

Throughput is the OSC's RPC throughput (bytes carried by read and write RPCs per second), the
same measure DIAL's data and the replay use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pfstune.errors import UserError
from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner, clamp

_READ_BYTES = "ost_read_rpc_bytes_data.samples_sum"
_WRITE_BYTES = "ost_write_rpc_bytes_data.samples_sum"
_DURATION = "actual_record_duration"


@dataclass
class _OscState:
    """What IOPathTune remembers about one OSC (JSON-serialisable through ``asdict``)."""

    elapsed: float = 0.0  # seconds of the current period observed so far
    window_bytes: float = 0.0  # bytes moved in the measured (second) half of the period
    window_seconds: float = 0.0
    read_bytes: float = 0.0  # whole-period llite/OSC mix, for the workload signature
    write_bytes: float = 0.0
    llite_bytes: float = 0.0
    llite_requests: float = 0.0
    baseline: float | None = None  # MB/s of the configuration before the step under evaluation
    step: list[Any] | None = None  # [param, direction, value before, value asked] of the step under evaluation
    best: list[float] | None = None  # [MB/s, max_pages_per_rpc, max_rpcs_in_flight] since the last start
    param: str = "max_rpcs_in_flight"  # the parameter the next step changes
    directions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TUNED_PARAMS, 1))
    misses: int = 0  # consecutive steps without a gain
    hold: int = 0  # periods left to hold before probing again
    signature: str | None = None


#: Shares of bytes read above which a period is a read workload, below which a write one.
READ_SHARE, WRITE_SHARE = 0.7, 0.3


def _signature(state: _OscState) -> str | None:
    """Read, write or mixed, and the llite request-size class (log2 of the mean over 4 KiB, rounded);
    None when idle.  Request sizes are powers of two, so rounding keeps them away from the class
    edges, and a 50/50 mix is "mixed" rather than flipping between read and write."""
    moved = state.read_bytes + state.write_bytes
    if moved <= 0:
        return None
    share = state.read_bytes / moved
    op = "read" if share > READ_SHARE else "write" if share < WRITE_SHARE else "mixed"
    if state.llite_requests <= 0:
        return op
    mean = state.llite_bytes / state.llite_requests
    size_class = max(0, round(math.log2(max(mean, 1.0) / 4096.0)))
    return f"{op}:{size_class}"


class IOPathTuneTuner(Tuner):
    """Double or halve one parameter per period; continue while it helps, reverse when it hurts."""

    name = "iopathtune"

    def __init__(
        self,
        period: float = 10.0,
        tolerance: float = 0.05,
        patience: int = 4,
        hold_periods: int = 3,
        objective: str = "osc",
    ) -> None:
        """``period`` seconds per decision; ``tolerance`` the relative change that counts as one."""
        if not 0 < period < math.inf:
            raise UserError(f"iopathtune: period must be a positive number of seconds, got {period}")
        if not 0 <= tolerance < 1:
            raise UserError(f"iopathtune: tolerance must be in [0, 1), got {tolerance}")
        if patience < 1 or hold_periods < 0:
            raise UserError("iopathtune: patience must be >= 1 and hold_periods >= 0")
        if objective not in ("osc", "llite"):
            raise UserError(f"iopathtune: objective must be osc or llite, got {objective!r}")
        self.objective = objective
        self.period = period
        self.tolerance = tolerance
        self.patience = patience
        self.hold_periods = hold_periods
        self._states: dict[str, _OscState] = {}

    def _state(self, osc: str) -> _OscState:
        if osc not in self._states:
            self._states[osc] = _OscState()
        return self._states[osc]

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        """Add one interval to the current period of ``osc``."""
        seconds = _value(metrics, _DURATION)
        if not seconds > 0:
            return
        state = self._state(osc)
        read = _value(metrics, _READ_BYTES)
        write = _value(metrics, _WRITE_BYTES)
        state.read_bytes += read
        state.write_bytes += write
        llite = 0.0
        for op in ("read", "write"):
            llite += _value(metrics, f"llite_stats_{op}_bytes.samples_sum")
            state.llite_requests += _value(metrics, f"llite_stats_{op}_bytes.no_of_samples")
        state.llite_bytes += llite
        state.elapsed += seconds
        if state.elapsed > self.period / 2:  # the interval ended in the measured half
            state.window_bytes += (read + write) if self.objective == "osc" else llite
            state.window_seconds += seconds

    def suggest(self, context: Context) -> Config:
        """The configuration for the next interval: unchanged until the period is over."""
        state = self._state(context.osc)
        config = dict(context.config)
        if state.elapsed < self.period:
            return config
        measured = state.window_seconds > 0 and state.window_bytes > 0
        throughput = state.window_bytes / state.window_seconds / 1e6 if measured else 0.0
        signature = _signature(state)
        self._new_period(state)
        if signature is None or not measured:  # idle, or nothing in the measured half: nothing to judge
            return config
        if signature != state.signature:  # a new workload: start over from here, trend included
            state.signature = signature
            state.baseline, state.step, state.best, state.misses, state.hold = None, None, None, 0, 0
            state.directions, state.param = dict.fromkeys(TUNED_PARAMS, 1), _OscState.param
        if state.step is not None and len(state.step) == 4 and config[state.step[0]] != state.step[3]:
            # the step did not take effect (refused, or changed since): judge nothing, start again
            state.baseline, state.step = None, None
        if state.hold == 0 and (state.best is None or throughput > state.best[0] * (1 + self.tolerance)):
            state.best = [throughput, config["max_pages_per_rpc"], config["max_rpcs_in_flight"]]
        return self._decide(state, config, context.bounds, throughput)

    @staticmethod
    def _new_period(state: _OscState) -> None:
        state.elapsed = state.window_bytes = state.window_seconds = 0.0
        state.read_bytes = state.write_bytes = state.llite_bytes = state.llite_requests = 0.0

    def _decide(
        self, state: _OscState, config: Config, bounds: Mapping[str, tuple[int, int]], throughput: float
    ) -> Config:
        if state.hold > 0:
            state.hold -= 1
            return config
        if state.step is None or state.baseline is None:  # measuring a fresh baseline: take a step
            state.baseline = throughput
            return self._step(state, config, bounds, state.param)
        param, direction = state.step[0], state.step[1]
        before = state.step[2] if len(state.step) == 4 else None  # states saved before 2026-11-26: [param, direction]
        gained = throughput > state.baseline * (1 + self.tolerance)
        lost = throughput < state.baseline * (1 - self.tolerance)
        if gained:  # continue the trend
            state.baseline, state.misses = throughput, 0
            return self._step(state, config, bounds, param)
        state.misses += 1
        if lost:  # reverse: put the old value back, flip that parameter's direction
            state.directions[param] = -direction
            old = before if before is not None else _apply(config[param], -direction)
            config[param] = clamp(old, bounds[param])
            state.step = None  # the next period re-measures the restored configuration
            state.param = param if state.misses == 1 else _other(param)
        else:  # no change worth having: keep the step and try the other parameter
            state.baseline = throughput
        if state.misses >= self.patience:  # settled: hold the best, then probe again from a fresh baseline
            state.misses, state.hold, state.baseline, state.step = 0, self.hold_periods, None, None
            if state.best is not None:
                for name, value in zip(TUNED_PARAMS, state.best[1:], strict=True):
                    config[name] = clamp(int(value), bounds[name])
            state.best = None  # the hold's end starts a new search, with its own best
            return config
        if lost:
            return config
        return self._step(state, config, bounds, _other(param))

    def _step(self, state: _OscState, config: Config, bounds: Mapping[str, tuple[int, int]], param: str) -> Config:
        """Double or halve ``param`` (or the other direction, or the other parameter, at a bound)."""
        for candidate in (param, _other(param)):
            for direction in (state.directions[candidate], -state.directions[candidate]):
                value = clamp(_apply(config[candidate], direction), bounds[candidate])
                if value != config[candidate]:
                    state.directions[candidate] = direction
                    state.step = [candidate, direction, config[candidate], value]
                    state.param = candidate
                    return {**config, candidate: value}
        state.step = None  # both parameters pinned (bounds of one value): nothing to try
        return config

    def forget(self, osc: str) -> None:
        """Drop the state of a device that went away."""
        self._states.pop(osc, None)

    def state_dict(self) -> dict[str, Any]:
        """Per-OSC state and the settings, as JSON data."""
        return {
            "settings": {
                "period": self.period,
                "tolerance": self.tolerance,
                "patience": self.patience,
                "hold_periods": self.hold_periods,
                "objective": self.objective,
            },
            "oscs": {osc: asdict(state) for osc, state in self._states.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore per-OSC state saved by :meth:`state_dict` (settings stay as constructed)."""
        self._states = {osc: _OscState(**fields) for osc, fields in state.get("oscs", {}).items()}


def _value(metrics: Mapping[str, float], key: str) -> float:
    """A metric as a float; 0 when it is missing or unknown (NaN: the file was unreadable)."""
    value = float(metrics.get(key, 0.0) or 0.0)
    return value if math.isfinite(value) else 0.0


def _other(param: str) -> str:
    return TUNED_PARAMS[1] if param == TUNED_PARAMS[0] else TUNED_PARAMS[0]


def _apply(value: int, direction: int) -> int:
    return value * 2 if direction > 0 else max(1, value // 2)
