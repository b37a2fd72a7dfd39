"""One benchmark run: a scenario under a tuner, with its throughput and configurations over time.

:func:`tuned_run` is what an executor's worker runs (a top-level function of plain arguments, so
local processes and Dask workers can both call it).  The agent drives the sim backend as in
``pfstune sim run --tuner``; a listener records every tick:

- ``series``: time (s) and the OSC RPC throughput summed over every OSC (MB/s) of each interval,
  with its read and write RPCs' shares;
- ``trajectories``: ``max_pages_per_rpc`` and ``max_rpcs_in_flight`` in force on the OSCs that
  carried the most data (up to :data:`TRACKED_OSCS`), tick by tick;
- ``decide_ms``: the tuner's mean decision time per tick (wall clock) for every OSC of every
  client of the scenario (one agent drives them all), the overhead a tuner adds, without the
  first tick that decided: ``decide_first_ms``, where a model's first call pays its set-up
  (LightGBM's, 0.2-0.4 s), which a long-running agent pays once;
- ``ior`` (scenarios with IOR jobs): IOR's own bandwidth of each finished phase
  (:meth:`pfstune.sim.engine.Engine.ior_bandwidth`);
- ``h5bench`` (scenarios with h5bench jobs): h5bench's own observed rate over the finished
  timesteps (:meth:`pfstune.sim.engine.Engine.h5bench_rate`);
- ``dlio`` (scenarios with DLIO jobs): DLIO's training throughput and accelerator utilisation
  (:meth:`pfstune.sim.engine.Engine.dlio_rate`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from pfstune.agent import TickReport
from pfstune.runs import simulate
from pfstune.sim.scenario import parse_scenario

#: How many OSCs' configuration trajectories a run keeps (the busiest ones).
TRACKED_OSCS = 3


def tuned_run(
    text: str, source: str, overrides: Mapping[str, Any], tuner: str, options: Mapping[str, str]
) -> dict[str, Any]:
    """Run the scenario (YAML ``text`` with ``overrides``) under ``tuner``; return its record."""
    scenario = parse_scenario(text, source, overrides)
    times: list[float] = []
    totals: list[float] = []
    reads: list[float] = []
    writes: list[float] = []
    configs: list[dict[str, tuple[int, int]]] = []
    carried: dict[str, float] = {}
    decide: list[float] = []

    def listen(report: TickReport) -> None:
        if not report.mbps:  # the first probe: no interval yet
            return
        times.append(report.time)
        totals.append(sum(report.mbps.values()))
        reads.append(sum(report.read_mbps.values()))
        writes.append(sum(report.write_mbps.values()))
        for osc, mbps in report.mbps.items():
            carried[osc] = carried.get(osc, 0.0) + mbps
        configs.append({osc: (c["max_pages_per_rpc"], c["max_rpcs_in_flight"]) for osc, c in report.configs.items()})
        decide.append(report.decide_seconds)

    result = simulate(scenario, tuner, dict(options) or None, listeners=[listen])
    busiest = sorted(carried, key=lambda osc: (-carried[osc], osc))[:TRACKED_OSCS]
    return {
        "scenario": scenario.name,
        "file": source,
        "seed": scenario.seed,
        "tuner": tuner,
        "options": dict(options),
        **{key: result[key] for key in ("mbps", "read_mbps", "write_mbps", "osc_mbps", "decisions")},
        **({"ior": result["ior"]} if "ior" in result else {}),
        **({"h5bench": result["h5bench"]} if "h5bench" in result else {}),
        **({"dlio": result["dlio"]} if "dlio" in result else {}),
        "decide_ms": 1e3 * statistics.fmean(decide[1:] or decide) if decide else 0.0,
        "decide_first_ms": 1e3 * decide[0] if decide else 0.0,
        "series": {"time": times, "osc_mbps": totals, "osc_read_mbps": reads, "osc_write_mbps": writes},
        "trajectories": {
            osc: {
                "max_pages_per_rpc": [tick.get(osc, (0, 0))[0] for tick in configs],
                "max_rpcs_in_flight": [tick.get(osc, (0, 0))[1] for tick in configs],
            }
            for osc in busiest
        },
    }
