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

import itertools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from pfstune.sim.engine import Engine
from pfstune.sim.scenario import parse_scenario

#: Named grids of static configurations.  dial99 is the 11 x 9 grid of DIAL (seed 000).
GRIDS: dict[str, dict[str, list[int]]] = {
    "dial99": {
        "osc.max_pages_per_rpc": [2**i for i in range(11)],
        "osc.max_rpcs_in_flight": [2**i for i in range(9)],
    },
}

#: Keys of :meth:`Engine.result` that a sweep reports for each configuration.
RESULT_KEYS = ("mbps", "osc_mbps", "read_mbps", "write_mbps")

Config = dict[str, int]


def grid_configs(params: Mapping[str, Sequence[int]]) -> list[Config]:
    """Every combination of the given parameter values, the first parameter varying slowest."""
    names = list(params)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*params.values())]


def _with_config(overrides: Mapping[str, Any], config: Config) -> dict[str, Any]:
    return {**overrides, "tunables": {**overrides.get("tunables", {}), **config}}


def run_config(text: str, source: str, overrides: Mapping[str, Any], config: Config) -> dict[str, Any]:
    """Run the scenario (YAML ``text``) to its end under ``config``; return :meth:`Engine.result`."""
    engine = Engine(parse_scenario(text, source, _with_config(overrides, config)))
    engine.run()
    return engine.result()


def sweep(
    text: str,
    source: str,
    overrides: Mapping[str, Any],
    configs: Sequence[Config],
    jobs: int,
    on_done: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the scenario once per configuration in up to ``jobs`` worker processes.

    Every configuration is validated before any run starts, so a bad tunable name fails at
    once.  Returns the ``pfstune sim sweep --json`` document: ``{"scenario": NAME, "results":
    [{"config", "mbps", "osc_mbps", "read_mbps", "write_mbps"}, ...]}`` in the order of
    ``configs``; ``on_done(finished, total)`` is called as runs finish.
    """
    name = ""
    for config in configs:
        name = parse_scenario(text, source, _with_config(overrides, config)).name
    results: list[dict[str, Any]] = [{} for _ in configs]
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(configs)))) as pool:
        futures = {pool.submit(run_config, text, source, overrides, config): i for i, config in enumerate(configs)}
        try:
            for finished, future in enumerate(as_completed(futures), 1):
                i = futures[future]
                result = future.result()
                results[i] = {"config": dict(configs[i]), **{key: result[key] for key in RESULT_KEYS}}
                if on_done is not None:
                    on_done(finished, len(configs))
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    return {"scenario": name, "results": results}
