"""Scenarios x tuners x seeds: plan the runs, execute them on an executor, aggregate the results.

- **Runs.** Every (scenario, seed, tuner) is one :func:`pfstune.bench.runs.tuned_run`.  The
  ``oracle`` is the best static dial99 configuration of that scenario and seed: its 99 static
  runs (:func:`pfstune.sim.sweep.run_scenario`; fewer on a cluster whose brw_size is below 4m,
  :func:`pfstune.sim.sweep.scenario_grid`) go to the executor with the other tuners' runs, then
  the winner runs once more with the agent in the loop so that it has a time series too.  The
  oracle takes no tuner options.
- **Aggregates** per scenario and tuner, over seeds: mean application MB/s and its spread
  (sample standard deviation, min, max); the mean of per-seed ratios to the oracle and to the
  default; the mean decision time per tick (and of the first tick that decided apart).
- **Convergence** after each phase change (a job starting or stopping, and t = 0): the
  simulated seconds from the change until the tuner's OSC throughput, averaged over the last
  :data:`WINDOW_S`, reaches 95% of the *phase's* best and holds there: its mean over the next
  :data:`HOLD_S` (or what is left of the phase, at least one tick) is at 95% too.  The phase's best is the highest
  mean OSC throughput over that phase among the 99 static runs of the oracle's sweep (None:
  never within the phase).  Where every job running in a phase only reads, the throughput is
  that of the OSCs' read RPCs; where every one only writes, that of their write RPCs
  (:func:`phase_measures`): a static configuration under which the page cache still flushes an
  earlier writer's data is not a better configuration for the readers that follow it.  Each
  phase so has its own best configuration (``phase_best`` in the document), as a tuner that
  follows a workload change should reach it.  The hold keeps a
  single lucky window from counting: a tuner that passes 95% for half a second and falls back
  has not converged.  ``convergence_s`` is the mean over seeds, ``convergence_max_s`` the slowest
  seed (both None for a phase some seed never converged in).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from pfstune.bench.runs import tuned_run
from pfstune.errors import UserError
from pfstune.executor import open_executor, run_all
from pfstune.outputs import check_file_name, file_stem
from pfstune.sim.scenario import Scenario, parse_scenario, read_scenario_text
from pfstune.sim.sweep import best_index, run_scenario, scenario_grid, with_tunables
from pfstune.tuners import TUNERS, make_tuner

#: Convergence: the window the throughput is averaged over, how long the mean must then hold,
#: and the share of the phase's best to reach.
WINDOW_S = 1.0
HOLD_S = 3.0
CONVERGED = 0.95


@dataclass(frozen=True)
class BenchScenario:
    """A scenario file as the bench runs it."""

    path: str
    text: str
    overrides: dict[str, Any]  # without the seed

    def with_seed(self, seed: int) -> dict[str, Any]:
        return {**self.overrides, "seed": seed}

    def load(self, seed: int) -> Scenario:
        return parse_scenario(self.text, self.path, self.with_seed(seed))


def phase_starts(scenario: Scenario) -> list[float]:
    """Times (s) at which the set of running jobs changes, 0 included, before the end."""
    end = scenario.duration_ns
    times = {0} | {t for job in scenario.jobs for t in (job.start_ns, job.stop_ns) if 0 < t < end}
    return [t / 1e9 for t in sorted(times)]


#: What a phase's convergence is judged on, by what its running jobs do (:func:`phase_measures`).
_MEASURES = {frozenset({"read"}): "osc_read_mbps", frozenset({"write"}): "osc_write_mbps"}


def phase_measures(scenario: Scenario) -> list[str]:
    """Per phase (:func:`phase_starts`), the series its convergence is judged on: ``osc_read_mbps``
    where every job running in it only reads, ``osc_write_mbps`` where every one only writes, and
    ``osc_mbps`` (both) otherwise, an idle phase included."""
    bounds = [round(t * 1e9) for t in phase_starts(scenario)] + [scenario.duration_ns]
    out = []
    for start, stop in itertools.pairwise(bounds):
        running = [job.moves for job in scenario.jobs if job.start_ns < stop and job.stop_ns > start]
        out.append(_MEASURES.get(frozenset().union(*running), "osc_mbps"))
    return out


def convergence(
    series: Mapping[str, Sequence[float]],
    best: Sequence[float],
    starts: Sequence[float],
    end: float,
    measures: Sequence[str] | None = None,
) -> list[float | None]:
    """Per phase: seconds until ``series`` reaches 95% of that phase's ``best`` MB/s and holds
    there (module docstring); None if it never does.  ``measures`` names, per phase, the series
    compared with its best (default: ``osc_mbps``, read and write RPCs together)."""
    # whole nanoseconds, as the simulator counts: tick times in float seconds (0.1 s probes)
    # would put a window's edge on either side of a tick by rounding
    times = [round(t * 1e9) for t in series["time"]]
    window, hold = round(WINDOW_S * 1e9), round(HOLD_S * 1e9)

    def mean_over(values: Sequence[float], after: int, upto: int) -> float | None:
        inside = [v for u, v in zip(times, values, strict=True) if after < u <= upto]
        return statistics.fmean(inside) if inside else None

    out: list[float | None] = []
    bounds = [round(t * 1e9) for t in starts] + [round(end * 1e9)]
    for i, (start, stop) in enumerate(itertools.pairwise(bounds)):
        values = list(series[measures[i] if measures else "osc_mbps"])
        target = CONVERGED * best[i]
        found: float | None = None
        if target > 0:
            for t in times:
                if not start < t <= stop:
                    continue
                reached = mean_over(values, max(start, t - window), t)
                # the hold needs at least one later tick in the phase: a phase's last window
                # alone would let one lucky interval count
                held = mean_over(values, t, min(stop, t + hold))
                if reached is not None and reached >= target and held is not None and held >= target:
                    found = (t - start) / 1e9
                    break
        else:
            found = 0.0  # nothing to reach in an idle phase
        out.append(found)
    return out


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def _convergence_over_seeds(
    runs: Sequence[Mapping[str, Any]], bests: Sequence[Sequence[Mapping[str, Any]]], starts: Sequence[float], end: float
) -> tuple[list[float | None], list[float | None]]:
    """Per phase, the mean and the slowest convergence over ``runs`` (one per seed; ``bests``: each
    one's phase_best); None for a phase where some seed never converged."""
    per_run = [
        convergence(r["series"], [best_mbps(p) for p in best], starts, end, [best_measure(p) for p in best])
        for r, best in zip(runs, bests, strict=True)
    ]
    phases = [[c[i] for c in per_run] for i in range(len(starts))]
    return [_all_or_none(values, statistics.fmean) for values in phases], [
        _all_or_none(values, max) for values in phases
    ]


def _all_or_none(values: Sequence[float | None], reduce: Callable[[list[float]], float]) -> float | None:
    """``reduce`` of ``values``, or None if any is None (a seed that never converged)."""
    present = [v for v in values if v is not None]
    return reduce(present) if present and len(present) == len(values) else None


def check_tuners(tuners: Sequence[str], options: Mapping[str, Mapping[str, str]]) -> None:
    """Fail now, before hours of runs, if a tuner name or option is wrong."""
    if not tuners:
        raise UserError("--tuners: give at least one tuner")
    for name in tuners:
        if name not in TUNERS:
            raise UserError(f"unknown tuner {name!r}; known: {', '.join(sorted(TUNERS))}")
        if name == "oracle":
            if options.get(name):  # its configuration is the sweep's winner, or there is no yardstick
                keys = ", ".join(f"oracle:{key}" for key in options[name])
                raise UserError(
                    f"--tuner-option {keys}: the bench's oracle takes no options: it is the best static "
                    "dial99 configuration, found by sweeping (to run one fixed configuration, use "
                    "pfstune sim run --tuner oracle --tuner-option ...)"
                )
        else:
            make_tuner(name, options.get(name))


def run_bench(
    scenario_paths: Sequence[str],
    tuners: Sequence[str],
    seeds: Sequence[int],
    *,
    overrides: Mapping[str, Any] | None = None,
    options: Mapping[str, Mapping[str, str]] | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run every scenario under every tuner with every seed; return the full bench document."""
    options = options or {}
    check_tuners(tuners, options)
    if not seeds:
        raise UserError("--seeds: give at least one seed")
    scenarios = [BenchScenario(path, read_scenario_text(path), dict(overrides or {})) for path in scenario_paths]
    loaded = {(s.path, seed): s.load(seed) for s in scenarios for seed in seeds}  # validates every file now
    named: dict[str, tuple[str, str]] = {}  # plot file stem -> (scenario name, file)
    for s in scenarios:  # the report names its rows and plots by scenario name
        name = loaded[(s.path, seeds[0])].name
        if (stem := file_stem(name)) in named:
            other, path = named[stem]
            same = f"are both scenario {name!r}" if other == name else f"name scenarios {other!r} and {name!r}"
            raise UserError(
                f"{path} and {s.path} {same}: the report names its tables and plots ({stem}-*.png) by "
                "scenario name, so give each scenario once and a name of its own"
            )
        check_file_name(f"{stem}-throughput.png", s.path)
        named[stem] = (name, s.path)
    tuned = [(s, seed, t) for s in scenarios for seed in seeds for t in tuners if t != "oracle"]
    sweeps = [(s, seed) for s in scenarios for seed in seeds] if "oracle" in tuners else []
    # each sweep's dial99, cut to what its cluster accepts (a brw_size below 4m)
    configs = {(s.path, seed): scenario_grid(loaded[(s.path, seed)])[0] for s, seed in sweeps}
    total = len(tuned) + sum(len(grid) + 1 for grid in configs.values())
    done = [0]

    def tick(_finished: int, _total: int) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    if progress is not None:  # the bar shows the whole count before the first run ends
        progress(0, total)
    with open_executor(jobs, scheduler) as executor:
        first = _run_units(executor, tuned, sweeps, loaded, configs, options, tick)
        records: list[dict[str, Any]] = first["records"]
        oracle_configs: dict[tuple[str, int], dict[str, int]] = {}
        phase_best: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for key, results in first["sweeps"].items():
            oracle_configs[key] = dict(configs[key][best_index(results)])
            phase_best[key] = _phase_best(results, configs[key], phase_measures(loaded[key]))
        oracle_units = [
            (
                s.text,
                s.path,
                s.with_seed(seed),
                "oracle",
                {p.partition(".")[2]: str(v) for p, v in oracle_configs[(s.path, seed)].items()},
            )
            for s, seed in sweeps
        ]
        records += run_all(executor, tuned_run, oracle_units, tick)
    return _aggregate(scenarios, seeds, tuners, loaded, records, oracle_configs, phase_best)


def _phase_best(
    results: Sequence[Mapping[str, Any]], configs: Sequence[dict[str, int]], measures: Sequence[str]
) -> list[dict[str, Any]]:
    """Per phase, the static configuration of the sweep with the highest MB/s over that phase, by
    the phase's measure (:func:`phase_measures`)."""
    out = []
    for i, measure in enumerate(measures):
        values = [r[f"phase_{measure}"][i] for r in results]
        k = max(range(len(results)), key=lambda j: values[j])
        out.append({"config": dict(configs[k]), "measure": measure, "mbps": values[k]})
    return out


def best_measure(phase: Mapping[str, Any]) -> str:
    """The series a ``phase_best`` entry was chosen by (documents written before 2026-11-26 said
    nothing: total OSC MB/s)."""
    return str(phase.get("measure", "osc_mbps"))


def best_mbps(phase: Mapping[str, Any]) -> float:
    """A ``phase_best`` entry's MB/s, by its measure (``osc_mbps`` in older documents)."""
    return float(phase["mbps"] if "mbps" in phase else phase["osc_mbps"])


def _run_units(
    executor: Executor,
    tuned: Sequence[tuple[BenchScenario, int, str]],
    sweeps: Sequence[tuple[BenchScenario, int]],
    loaded: Mapping[tuple[str, int], Scenario],
    configs: Mapping[tuple[str, int], Sequence[dict[str, int]]],
    options: Mapping[str, Mapping[str, str]],
    tick: Callable[[int, int], None],
) -> dict[str, Any]:
    """The tuned runs and every static run of the oracle's sweeps (``configs``: each one's grid), together."""
    units: list[tuple[str, tuple[Any, ...]]] = [
        ("tuned", (s.text, s.path, s.with_seed(seed), tuner, dict(options.get(tuner, {})))) for s, seed, tuner in tuned
    ]
    for s, seed in sweeps:
        scenario = loaded[(s.path, seed)]
        starts = phase_starts(scenario)
        units += [("static", (with_tunables(scenario, config), starts)) for config in configs[(s.path, seed)]]
    results = run_all(executor, _unit, units, tick)
    records = [r for (kind, _), r in zip(units, results, strict=True) if kind == "tuned"]
    static = iter(r for (kind, _), r in zip(units, results, strict=True) if kind == "static")
    by_sweep = {(s.path, seed): [next(static) for _ in configs[(s.path, seed)]] for s, seed in sweeps}
    return {"records": records, "sweeps": by_sweep}


def _unit(kind: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """One unit of work on a worker: a tuned run or a static run of a sweep."""
    return tuned_run(*args) if kind == "tuned" else run_scenario(*args)


def _aggregate(
    scenarios: Sequence[BenchScenario],
    seeds: Sequence[int],
    tuners: Sequence[str],
    loaded: Mapping[tuple[str, int], Scenario],
    records: Sequence[dict[str, Any]],
    oracle_configs: Mapping[tuple[str, int], dict[str, int]],
    phase_best: Mapping[tuple[str, int], list[dict[str, Any]]],
) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for s in scenarios:
        first = loaded[(s.path, seeds[0])]
        starts = phase_starts(first)
        end = first.duration_ns / 1e9
        mine = {(r["seed"], r["tuner"]): r for r in records if r["file"] == s.path}
        results: dict[str, Any] = {}
        for tuner in tuners:
            per_seed = [mine[(seed, tuner)] for seed in seeds if (seed, tuner) in mine]
            if not per_seed:
                continue
            spread = _stats([r["mbps"] for r in per_seed])
            entry: dict[str, Any] = {
                "runs": len(per_seed),
                "mbps": spread["mean"],
                "mbps_std": spread["std"],
                "mbps_min": spread["min"],
                "mbps_max": spread["max"],
            }
            if any("ior" in r for r in per_seed):
                entry["ior"] = _ior_means(per_seed)
            if any("h5bench" in r for r in per_seed):
                entry["h5bench"] = _h5bench_means(per_seed)
            if any("dlio" in r for r in per_seed):
                entry["dlio"] = _dlio_means(per_seed)
            entry["decide_ms"] = statistics.fmean(r["decide_ms"] for r in per_seed)
            entry["decide_first_ms"] = statistics.fmean(r.get("decide_first_ms", 0.0) for r in per_seed)
            entry["decisions"] = statistics.fmean(r["decisions"] for r in per_seed)
            for baseline in ("oracle", "default"):
                entry[f"vs_{baseline}"] = mean_ratio(per_seed, mine, baseline)
            if all((s.path, r["seed"]) in phase_best for r in per_seed):
                bests = [phase_best[(s.path, r["seed"])] for r in per_seed]
                entry["convergence_s"], entry["convergence_max_s"] = _convergence_over_seeds(
                    per_seed, bests, starts, end
                )
            results[tuner] = entry
        for r in sorted(mine.values(), key=lambda r: (r["seed"], tuners.index(r["tuner"]))):
            oracle = mine.get((r["seed"], "oracle"))
            runs.append({**r, "vs_oracle": r["mbps"] / oracle["mbps"] if oracle and oracle["mbps"] > 0 else None})
        out.append(
            {
                "name": first.name,
                "file": s.path,
                "duration_s": end,
                "phase_starts_s": starts,
                "oracle_configs": {
                    str(seed): oracle_configs[(s.path, seed)] for seed in seeds if (s.path, seed) in oracle_configs
                },
                "phase_best": {str(seed): phase_best[(s.path, seed)] for seed in seeds if (s.path, seed) in phase_best},
                "results": results,
            }
        )
    return {"seeds": list(seeds), "tuners": list(tuners), "scenarios": out, "runs": runs}


def _ior_means(runs: Sequence[Mapping[str, Any]]) -> dict[str, float | int | None]:
    """IOR's bandwidth over every finished phase of every IOR job and seed: mean MiB/s and count."""
    out: dict[str, float | int | None] = {}
    for kind in ("write", "read"):
        phases = [bw for r in runs for job in r.get("ior", {}).values() for bw in job[f"{kind}_mibps"]]
        out[f"{kind}_mibps"] = statistics.fmean(phases) if phases else None
        out[f"{kind}_phases"] = len(phases)
    return out


def _h5bench_means(runs: Sequence[Mapping[str, Any]]) -> dict[str, float | int | None]:
    """h5bench's observed rate over every h5bench job and seed that finished a timestep: mean
    MiB/s, and the timesteps finished over all of them."""
    jobs = [job for r in runs for job in r.get("h5bench", {}).values()]
    rates = [job["observed_mibps"] for job in jobs if job["observed_mibps"] is not None]
    return {
        "observed_mibps": statistics.fmean(rates) if rates else None,
        "timesteps": sum(job["timesteps"] for job in jobs),
    }


def _dlio_means(runs: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """DLIO's figures over every DLIO job and seed that had started: the mean of each."""
    jobs = [job for r in runs for job in r.get("dlio", {}).values() if job["samples_per_second"] is not None]
    keys = ("samples_per_second", "io_mibps", "au_percent")
    return {key: statistics.fmean(job[key] for job in jobs) if jobs else None for key in keys}


def mean_ratio(
    runs: Sequence[Mapping[str, Any]], by_seed: Mapping[tuple[int, str], Mapping[str, Any]], baseline: str
) -> float | None:
    """The mean over ``runs`` of each run's MB/s over that of the ``baseline`` tuner's run of the
    same seed (``by_seed[(seed, tuner)]``); None unless every run has such a baseline above 0."""
    ratios = [
        r["mbps"] / by_seed[(r["seed"], baseline)]["mbps"]
        for r in runs
        if (r["seed"], baseline) in by_seed and by_seed[(r["seed"], baseline)]["mbps"] > 0
    ]
    return statistics.fmean(ratios) if ratios and len(ratios) == len(runs) else None


def recompute_convergence(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every ``convergence_s`` computed again from its runs' series, so that a
    bench document written before a change to :func:`convergence` reads as a new one would."""
    for s in document["scenarios"]:
        starts, end = s["phase_starts_s"], s["duration_s"]
        for tuner, entry in s["results"].items():
            runs = [r for r in document["runs"] if r["file"] == s["file"] and r["tuner"] == tuner]
            if not runs or not all(str(r["seed"]) in s["phase_best"] for r in runs):
                continue
            bests = [s["phase_best"][str(r["seed"])] for r in runs]
            if any(best_measure(p) not in r["series"] for r, best in zip(runs, bests, strict=True) for p in best):
                continue  # runs recorded before the read and write series, judged by a newer sweep: as stored
            entry["convergence_s"], entry["convergence_max_s"] = _convergence_over_seeds(runs, bests, starts, end)
    return document


def summary(document: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--json`` document: everything but the per-run time series and trajectories."""
    return {key: value for key, value in document.items() if key != "runs"} | {
        "runs": [{k: v for k, v in r.items() if k not in ("series", "trajectories")} for r in document["runs"]]
    }
