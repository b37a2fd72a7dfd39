"""One simulated run with a tuner in the loop: the unit of ``sim run --tuner``, benchmarks and collection.

The agent (:class:`pfstune.agent.Agent`) drives a :class:`pfstune.backends.sim.SimBackend`
exactly as it drives a real client, probing every probe interval of the scenario.  The
``default`` tuner changes nothing, so its run skips the agent: reading statistics does not
perturb the simulation, and the result is the same, sooner.  The ``oracle`` without options is
the best static dial99 configuration: the scenario is swept (one run per configuration, in
parallel processes) and the winner's run is the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from pfstune.agent import Agent, TickReport
from pfstune.backends.sim import SimBackend
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import Scenario
from pfstune.sim.sweep import best_static
from pfstune.tuners import make_tuner
from pfstune.tuners.default import DefaultTuner
from pfstune.tuners.oracle import OracleTuner

#: ``progress(simulated_seconds_done)``.
Progress = Callable[[float], None]


def simulate(
    scenario: Scenario,
    tuner: str = "default",
    tuner_options: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    listeners: list[Callable[[TickReport], None]] | None = None,
) -> dict[str, Any]:
    """Run ``scenario`` to its end under ``tuner``; return the ``sim run --json`` dictionary.

    The result has ``tuner`` and, for tuned runs, ``decisions`` (configurations applied) and
    ``mean_tick_ms`` (wall time of an agent tick) besides the engine's figures; an oracle run
    has ``oracle_config`` (the winner, as ``sim sweep`` names tunables) instead.  For a tuned
    run ``wall_seconds`` and ``speedup`` count the whole run, the agent's ticks included, and
    ``sim_wall_seconds`` the engine's loop alone (``events_per_second`` is the engine's rate).
    """
    if tuner == OracleTuner.name and not tuner_options:
        return simulate_oracle(scenario, progress)
    engine = Engine(scenario)
    policy = make_tuner(tuner, tuner_options)
    if isinstance(policy, DefaultTuner) and not listeners:
        engine.run(progress=None if progress is None else lambda now_ns, _end: progress(now_ns / 1e9))
        return {**engine.result(), "tuner": tuner, "decisions": 0}
    ticks: list[Callable[[TickReport], None]] = list(listeners or [])
    if progress is not None:
        ticks.append(lambda report: progress(report.time))
    backend = SimBackend(engine)
    with backend:
        agent = Agent(backend, policy, interval=scenario.probe_interval_ns / 1e9, listeners=ticks)
        summary = agent.run(scenario.duration_ns / 1e9)
    return {
        **backend.result(),  # wall_seconds and speedup of the whole run, as `agent --backend sim` reports them
        "tuner": tuner,
        "decisions": summary.decisions,
        "mean_tick_ms": summary.as_dict()["mean_tick_ms"],
    }


def simulate_oracle(scenario: Scenario, progress: Progress | None = None, jobs: int | None = None) -> dict[str, Any]:
    """The oracle's run of ``scenario``: the best static dial99 configuration, found by sweeping.

    ``progress`` is told the share of the sweep done, in simulated seconds of ``scenario``.
    """
    seconds = scenario.duration_ns / 1e9

    def on_done(done: int, total: int) -> None:
        if progress is not None:
            progress(seconds * done / total)

    started = time.perf_counter()
    config, result, rows = best_static(scenario, "dial99", jobs, on_done)
    return {
        **result,
        "tuner": OracleTuner.name,
        "decisions": 0,
        "oracle_config": config,
        "sweep_runs": len(rows),
        "sweep_wall_seconds": time.perf_counter() - started,
    }


def check_tuner_choice(tuner: str, tuner_options: Mapping[str, str] | None = None) -> None:
    """Fail (UserError) now, before a long run, if :func:`simulate` could not build the tuner."""
    if tuner == OracleTuner.name and not tuner_options:
        return  # simulate() finds the oracle's configuration itself
    make_tuner(tuner, tuner_options)
