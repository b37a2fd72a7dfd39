"""Static sweeps: run one scenario once per configuration of tunables, in parallel processes.

A configuration maps tunable names to values, e.g. ``{"osc.max_pages_per_rpc": 16,
"osc.max_rpcs_in_flight": 128}``; it is applied to every matching device at t = 0 and kept for
the whole run (a *static* configuration).  The empty configuration is Lustre's default.

>>> grid_configs({"osc.a": [1, 2], "osc.b": [8]})
[{'osc.a': 1, 'osc.b': 8}, {'osc.a': 2, 'osc.b': 8}]
>>> len(grid_configs(GRIDS["dial99"]))
99
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pfstune.executor import open_executor
from pfstune.executor import run_all as run_each
from pfstune.lustre.limits import PAGE_SIZE
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import Scenario, parse_scenario

#: Named grids of static configurations.  dial99 is the 11 x 9 grid of DIAL (seed 000).
GRIDS: dict[str, dict[str, list[int]]] = {
    "dial99": {
        "osc.max_pages_per_rpc": [2**i for i in range(11)],
        "osc.max_rpcs_in_flight": [2**i for i in range(9)],
    },
}

#: The tunable a cluster bounds: at most the OSTs' ``brw_size`` in pages of :data:`PAGE_SIZE`
#: bytes (Lustre refuses more with ERANGE), so a grid is cut to what the scenario's cluster
#: takes (:func:`scenario_grid`).
_PAGES = "osc.max_pages_per_rpc"

#: Keys of :meth:`Engine.result` that a sweep reports for each configuration.
RESULT_KEYS = ("mbps", "osc_mbps", "read_mbps", "write_mbps")

Config = dict[str, int]


def grid_configs(params: Mapping[str, Sequence[int]]) -> list[Config]:
    """Every combination of the given parameter values, the first parameter varying slowest."""
    names = list(params)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*params.values())]


def scenario_grid(scenario: Scenario, grid: str = "dial99") -> tuple[list[Config], str | None]:
    """The configurations of ``GRIDS[grid]`` that ``scenario``'s cluster accepts, and a note on what was left out.

    A cluster whose ``brw_size`` is below 4 MiB refuses the grid's larger ``max_pages_per_rpc``
    values, so they are left out (the note, None when none is, says which and why).
    """
    limit = scenario.cluster["brw_size_bytes"] // PAGE_SIZE
    params = dict(GRIDS[grid])
    if _PAGES in params and max(params[_PAGES]) > limit:
        params[_PAGES] = [value for value in params[_PAGES] if value <= limit]
        size = limit * PAGE_SIZE
        shown = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        note = (
            f"{grid}: max_pages_per_rpc above {limit} left out: the cluster's brw_size is {shown} "
            f"({limit} pages), the most an RPC may carry"
        )
        return grid_configs(params), note
    return grid_configs(params), None


def _with_config(overrides: Mapping[str, Any], config: Config) -> dict[str, Any]:
    return {**overrides, "tunables": {**overrides.get("tunables", {}), **config}}


def run_config(text: str, source: str, overrides: Mapping[str, Any], config: Config) -> dict[str, Any]:
    """Run the scenario (YAML ``text``) to its end under ``config``; return :meth:`Engine.result`."""
    return run_scenario(parse_scenario(text, source, _with_config(overrides, config)))


def run_scenario(scenario: Scenario, marks_s: Sequence[float] = ()) -> dict[str, Any]:
    """Run ``scenario`` to its end; return :meth:`Engine.result` (a worker process's job).

    With ``marks_s`` (increasing times in seconds, the first 0), the result also holds
    ``phase_osc_mbps``: the OSC MB/s of each span from one mark to the next (the last to the end),
    and ``phase_osc_read_mbps`` and ``phase_osc_write_mbps``, its read and write RPCs' shares,
    which is how the bench finds the best static configuration of each phase.
    """
    engine = Engine(scenario)
    if not marks_s:
        engine.run()
        return engine.result()
    end_ns = scenario.duration_ns
    bounds = [round(t * 1e9) for t in marks_s] + [end_ns]
    phases: dict[str, list[float]] = {"read": [], "write": []}
    carried = {"read": 0, "write": 0}
    for start, stop in itertools.pairwise(bounds):
        engine.run(until_ns=stop)
        totals = engine.totals()
        for op, moved in phases.items():
            now = totals[f"osc_{op}_bytes"]
            moved.append((now - carried[op]) / ((stop - start) / 1e9) / 1e6 if stop > start else 0.0)
            carried[op] = now
    return {
        **engine.result(),
        "phase_osc_mbps": [r + w for r, w in zip(phases["read"], phases["write"], strict=True)],
        "phase_osc_read_mbps": phases["read"],
        "phase_osc_write_mbps": phases["write"],
    }


def with_tunables(scenario: Scenario, config: Config) -> Scenario:
    """``scenario`` with ``config`` applied on top of its initial tunables."""
    return dataclasses.replace(scenario, tunables={**scenario.tunables, **{k: str(v) for k, v in config.items()}})


def run_all(
    scenarios: Sequence[Scenario],
    jobs: int | None = None,
    on_done: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
) -> list[dict[str, Any]]:
    """:func:`run_scenario` for each scenario on ``jobs`` local processes or a Dask ``scheduler``."""
    with open_executor(min(jobs or os.cpu_count() or 1, max(1, len(scenarios))), scheduler) as executor:
        return run_each(executor, run_scenario, [(scenario,) for scenario in scenarios], on_done)


def sweep(
    text: str,
    source: str,
    overrides: Mapping[str, Any],
    configs: Sequence[Config],
    jobs: int,
    on_done: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    """Run the scenario once per configuration in up to ``jobs`` worker processes, or on the
    Dask cluster at ``scheduler`` (then ``jobs`` is not used).

    Every configuration is validated before any run starts, so a bad tunable name fails at
    once.  Returns the ``pfstune sim sweep --json`` document: ``{"scenario": NAME, "results":
    [{"config", "mbps", "osc_mbps", "read_mbps", "write_mbps"}, ...]}`` in the order of
    ``configs``; ``on_done(finished, total)`` is called as runs finish.
    """
    scenarios = [parse_scenario(text, source, _with_config(overrides, config)) for config in configs]
    name = scenarios[-1].name if scenarios else ""
    results = run_all(scenarios, jobs, on_done, scheduler)
    return {
        "scenario": name,
        "results": [
            {"config": dict(config), **{key: result[key] for key in RESULT_KEYS}}
            for config, result in zip(configs, results, strict=True)
        ],
    }


def best_index(results: Sequence[Mapping[str, Any]]) -> int:
    """Index of the result of highest application throughput (``mbps``); ties: the first."""
    return max(range(len(results)), key=lambda i: (results[i]["mbps"], -i))


def best_static(
    scenario: Scenario,
    grid: str = "dial99",
    jobs: int | None = None,
    on_done: Callable[[int, int], None] | None = None,
) -> tuple[Config, dict[str, Any], list[dict[str, Any]]]:
    """The oracle: the static configuration of ``grid`` under which ``scenario`` moves the most data.

    The grid is cut to what the cluster accepts (:func:`scenario_grid`).

    Runs the scenario once per configuration (in ``jobs`` processes, default one per core) and
    returns the winner by application throughput (``mbps``; ties: the first in grid order), its
    full :meth:`Engine.result`, and the ``sim sweep`` rows of every configuration.
    """
    configs, _ = scenario_grid(scenario, grid)
    results = run_all([with_tunables(scenario, c) for c in configs], jobs or os.cpu_count() or 1, on_done)
    best = best_index(results)
    rows = [{"config": dict(c), **{key: r[key] for key in RESULT_KEYS}} for c, r in zip(configs, results, strict=True)]
    return dict(configs[best]), results[best], rows
