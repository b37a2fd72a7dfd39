"""Simulated training data, recorded the way DIAL recorded its real data (``pfstune collect``).

DIAL's collector (``../shared/data/dial-lustre/README.md``) probed every OSC of a client every
~0.5 s and, after every probe, wrote a random dial99 configuration to every OSC, so that each
recorded interval ran under a random configuration.  :func:`collect` does the same on the sim
backend: each (scenario, seed) pair is one run of the scenario (engine seeded with ``seed``)
with the :class:`~pfstune.agent.Agent` and the ``random`` tuner
(:class:`~pfstune.tuners.random.RandomTuner`, seeded with ``seed`` too) probing every probe
interval of the scenario.  The rows are the feature rows the agent itself computes and hands to
the tuner (:mod:`pfstune.features`, the one feature path): a recording wrapper around the tuner
keeps them, so nothing here recomputes a feature.

Output, in ``out_dir``:

``<scenario>-seed<k>.parquet``
    (``<scenario>``: the scenario's name with '_' for what a file name should not hold,
    :func:`pfstune.outputs.file_stem`).  One row per OSC per probe after the first (the first
    probe closes no interval), every OSC of every client, idle ones included: a row whose OSC
    moved no bytes says nothing about its configuration, and the trainer drops it (the real
    dataset kept only OSC series with some traffic, and the README asks to skip idle intervals
    for per-configuration means).  Columns (:data:`COLUMNS`, the dataset schema shared with the
    importer of the real data):
    ``workload`` (the scenario name), ``iteration`` (the seed), ``osc`` (device name),
    ``observation_no`` (1, 2, ... per OSC; the real data's observation 0, an artefact of DIAL's
    collector, has no counterpart), every column of :data:`pfstune.features.FEATURE_COLUMNS`
    (float64; ``osc_rpc_configuration_current.*`` is the configuration in force during the
    interval), ``source`` ("sim"), ``scenario_file`` (the path as given) and ``client`` (the
    client's index).  Rows are sorted by client, OSC and observation.  Strings are plain Parquet
    strings, integers int64.  The same scenario text and seed give the same bytes.

``manifest.json``
    What was collected (:func:`collect`'s return value): pfstune version, tuner, columns, where
    the runs ran (``jobs`` local processes, or the Dask ``scheduler``), and per run the file,
    scenario, seed, duration, row counts, the SHA-256 of the file and of the scenario text, and
    the run's throughput and wall time (of the simulation, on its worker).  Runs that failed are
    listed under ``failed`` (absent when none did).  Collecting into a directory that holds a
    manifest adds to it: the runs it lists whose files are still there stay listed (a file
    written again is listed once, with its new run; ``earlier_runs`` counts the others), and
    ``rows``, ``active_rows``, ``seeds`` and ``scenarios`` cover every listed run, while
    ``duration``, ``jobs``, ``scheduler`` and ``wall_seconds`` describe the latest collection.
    A manifest that cannot be read, or of other columns, is refused before any run.

Runs are independent and go to an executor (:func:`pfstune.executor.open_executor`): ``jobs``
local worker processes, or the Dask cluster at ``scheduler``.  A worker only simulates and
returns the run's table and summary; this process writes every file, so a Dask worker on
another machine needs no access to ``out_dir``.  Each file is written as soon as its run
finishes (not all at the end): under a temporary name, renamed when complete, so an interrupted
collection leaves the finished runs' files (and no new manifest), never a truncated file under a
final name.  Progress is counted at completion: when a run finishes, its simulated seconds are
added (a worker cannot report ticks back from a Dask cluster).

Every run's set-up (the engine's checks: files that fit on the OSTs, tunable values) is made
before any run starts, so invalid input costs no simulation.  A run that fails does not stop
the others: every other run's file is written, the manifest lists the written runs and, under
``failed``, the failed ones (file, scenario, seed, error), and then :class:`CollectError` is
raised naming them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pfstune import __version__
from pfstune.agent import Agent
from pfstune.backends.sim import SimBackend
from pfstune.errors import PfstuneError, ScenarioError, UserError
from pfstune.executor import open_executor
from pfstune.features import FEATURE_COLUMNS
from pfstune.outputs import check_file_name, file_stem, no_empty_directory, replacing
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import Scenario, parse_scenario, read_scenario_text
from pfstune.tuners._base import Config, Context, Tuner
from pfstune.tuners.random import RandomTuner
from pfstune.units import parse_duration

__all__ = [
    "COLUMNS",
    "METADATA_COLUMNS",
    "SCHEMA",
    "CollectError",
    "CollectRun",
    "collect",
    "plan_runs",
    "record_run",
]

#: ``progress(simulated_seconds_done, simulated_seconds_total)`` over all runs of a collection.
Progress = Callable[[float, float], None]

#: Columns that say where a row comes from (besides the features).
METADATA_COLUMNS: tuple[str, ...] = (
    "source",
    "workload",
    "iteration",
    "osc",
    "observation_no",
    "scenario_file",
    "client",
)
_LEADING = ("workload", "iteration", "osc", "observation_no")  # first, as in the real dataset
_TRAILING = ("source", "scenario_file", "client")
#: Every column of a collected file, in order.
COLUMNS: tuple[str, ...] = (*_LEADING, *FEATURE_COLUMNS, *_TRAILING)
_TYPES = {"iteration": pa.int64(), "observation_no": pa.int64(), "client": pa.int64()}
#: The Arrow schema of a collected file (strings, int64 indices, float64 features).
SCHEMA = pa.schema(
    [(name, _TYPES.get(name, pa.string() if name in METADATA_COLUMNS else pa.float64())) for name in COLUMNS]
)
#: Name of the manifest file in the output directory.
MANIFEST = "manifest.json"
_BYTES = ("ost_read_rpc_bytes_data.samples_sum", "ost_write_rpc_bytes_data.samples_sum")


@dataclass(frozen=True)
class CollectRun:
    """One planned run: a scenario file's text with a seed (and maybe a duration override)."""

    index: int
    scenario: str  # the scenario's name
    scenario_file: str  # the path as given
    text: str  # the scenario YAML
    seed: int
    duration: str | None  # override, e.g. "120s"
    duration_s: float  # simulated seconds the run covers
    probe_interval_s: float
    file: str  # output file name, <file_stem(scenario)>-seed<k>.parquet

    def load(self) -> Scenario:
        """The validated scenario with this run's seed and duration."""
        return parse_scenario(self.text, self.scenario_file, _overrides(self.seed, self.duration))


def _overrides(seed: int, duration: str | None) -> dict[str, Any]:
    return {"seed": seed} if duration is None else {"seed": seed, "duration": duration}


def plan_runs(
    scenario_paths: Sequence[str | Path], seeds: Sequence[int] | None = None, duration: str | None = None
) -> list[CollectRun]:
    """Validate every scenario and list the runs, scenario by scenario, seed by seed.

    ``seeds`` None uses each scenario's own seed.  Raises :class:`UserError` for an unreadable
    or invalid scenario, one whose set-up the engine refuses (checked for every run: where files
    go depends on the seed), a bad duration, a seed out of range, a name too long for a file
    name, or two runs that would write the same file (two scenarios with the same name).
    """
    if not scenario_paths:
        raise UserError("no scenario to collect")
    if duration is not None:
        parse_duration(duration)  # a UnitError (UserError) names the bad value
    if seeds is not None and not seeds:
        raise UserError("no seed to collect")
    runs: list[CollectRun] = []
    owner: dict[str, tuple[str, str]] = {}  # file -> (scenario file, scenario name)
    for path in scenario_paths:
        source = str(path)
        text = read_scenario_text(path)
        own_seed = parse_scenario(text, source).seed
        for seed in [own_seed] if seeds is None else seeds:
            if seed >= 2**63:  # it becomes the files' int64 iteration column
                raise UserError(f"seed {seed}: pfstune collect takes seeds below 2^63 (the iteration column is int64)")
            scenario = parse_scenario(text, source, _overrides(seed, duration))
            file = f"{file_stem(scenario.name)}-seed{seed}.parquet"
            check_file_name(file, source)
            if file in owner:
                other, name = owner[file]
                both = f"and scenario {name!r} would both write {file}"
                twice = "is collected twice" if name == scenario.name else both
                raise UserError(
                    f"{source}: scenario {scenario.name!r} seed {seed} {twice} (also from {other}); give each "
                    "scenario a name of its own (file names keep letters, digits, '.', '-' and '_') and each seed once"
                )
            owner[file] = (source, scenario.name)
            try:
                Engine(scenario)  # the set-up checks a run would fail on, now rather than after other runs
            except ScenarioError as err:
                raise ScenarioError(f"{err} (with seed {seed})" if seeds is not None else str(err)) from None
            runs.append(
                CollectRun(
                    index=len(runs),
                    scenario=scenario.name,
                    scenario_file=source,
                    text=text,
                    seed=seed,
                    duration=duration,
                    duration_s=scenario.duration_ns / 1e9,
                    probe_interval_s=scenario.probe_interval_ns / 1e9,
                    file=file,
                )
            )
    return runs


class _Recorder(Tuner):
    """Passes everything to ``inner`` and keeps the feature columns of every row the agent makes it observe."""

    name = "record"

    def __init__(self, inner: Tuner) -> None:
        self.inner = inner
        self.rows: dict[str, list[list[float]]] = {}  # osc -> one list of FEATURE_COLUMNS values per interval

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        self.rows.setdefault(osc, []).append([_float(metrics.get(name)) for name in FEATURE_COLUMNS])
        self.inner.observe(osc, config, metrics)

    def suggest(self, context: Context) -> Config:
        return self.inner.suggest(context)

    def suggest_batch(self, contexts: Sequence[Context]) -> list[Config]:
        return self.inner.suggest_batch(contexts)

    def forget(self, osc: str) -> None:
        self.inner.forget(osc)

    def state_dict(self) -> dict[str, Any]:
        return self.inner.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.inner.load_state_dict(state)


def _float(value: object) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def record_run(
    scenario: Scenario, tuner_seed: int, scenario_file: str | None = None, tuner: Tuner | None = None
) -> tuple[pa.Table, dict[str, Any]]:
    """Run ``scenario`` with the agent and a ``random`` tuner seeded ``tuner_seed``; return its rows.

    Returns the table (:data:`SCHEMA`; ``iteration`` is the scenario's seed) and the engine's
    result (``pfstune sim run --json``).  Works in-process; :func:`collect` runs it on workers.
    ``tuner``, when given, replaces the random one (``benchmarks/fidelity`` replays the real
    collector's configurations with it).
    """
    engine = Engine(scenario)
    client_of = {osc: info["index"] for info in engine.clients() for osc in info["osc"]}
    recorder = _Recorder(RandomTuner(seed=tuner_seed) if tuner is None else tuner)
    with SimBackend(engine) as backend:
        agent = Agent(backend, recorder, interval=scenario.probe_interval_ns / 1e9)
        agent.run(scenario.duration_ns / 1e9)
    order = sorted(recorder.rows, key=lambda name: (client_of.get(name, -1), name))
    source = scenario.source if scenario_file is None else scenario_file
    meta: dict[str, list[Any]] = {name: [] for name in METADATA_COLUMNS}
    for osc in order:
        n = len(recorder.rows[osc])
        meta["workload"] += [scenario.name] * n
        meta["iteration"] += [scenario.seed] * n
        meta["osc"] += [osc] * n
        meta["observation_no"] += list(range(1, n + 1))
        meta["source"] += ["sim"] * n
        meta["scenario_file"] += [source] * n
        meta["client"] += [client_of.get(osc, -1)] * n
    values = np.array([row for osc in order for row in recorder.rows[osc]], dtype=np.float64)
    values = values.reshape(len(meta["osc"]), len(FEATURE_COLUMNS))
    arrays = {
        **{name: pa.array(meta[name], type=SCHEMA.field(name).type) for name in METADATA_COLUMNS},
        **{name: pa.array(values[:, j]) for j, name in enumerate(FEATURE_COLUMNS)},
    }
    table = pa.Table.from_arrays([arrays[name] for name in COLUMNS], schema=SCHEMA)
    return table, engine.result()


class CollectError(PfstuneError):
    """Some runs of a collection failed; every other run's file and the manifest were written."""

    def __init__(self, message: str, manifest: dict[str, Any]) -> None:
        super().__init__(message)
        self.manifest = manifest


def _active_rows(table: pa.Table) -> int:
    """Rows whose OSC moved data (read or write RPC bytes > 0)."""
    count = 0
    read, write = (table.column(name).to_pylist() for name in _BYTES)
    for r, w in zip(read, write, strict=True):
        if (r or 0) + (w or 0) > 0:  # NaN compares False: unknown is not active
            count += 1
    return count


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record(run: CollectRun) -> tuple[pa.Table, dict[str, Any]]:
    """One unit of work, on a worker: simulate ``run``; return its table and summary, write nothing.

    The table goes back as a pyarrow Table rather than Arrow IPC bytes: it pickles to its column
    buffers, about the size and cost of IPC bytes (measured on 5,000 and 500,000 rows), and
    Dask sends those buffers out of band.  Simulation dominates either way.
    """
    started = time.perf_counter()
    table, result = record_run(run.load(), run.seed, run.scenario_file)
    summary = {
        "rows": table.num_rows,
        "active_rows": _active_rows(table),
        "oscs": len(set(table.column("osc").to_pylist())),
        **{key: result[key] for key in ("mbps", "osc_mbps", "read_mbps", "write_mbps", "events")},
        "wall_seconds": time.perf_counter() - started,
    }
    return table, summary


def _write(run: CollectRun, table: pa.Table, summary: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """Write ``run``'s Parquet file (under a temporary name, then renamed); return its manifest entry."""
    metadata = {
        "scenario": run.scenario,
        "scenario_file": run.scenario_file,
        "scenario_sha256": hashlib.sha256(run.text.encode()).hexdigest(),
        "seed": run.seed,
        "tuner": RandomTuner.name,
        "duration_s": run.duration_s,
        "probe_interval_s": run.probe_interval_s,
    }
    table = table.replace_schema_metadata({"pfstune.collect": json.dumps(metadata, sort_keys=True)})
    path = out_dir / run.file
    try:
        with replacing(path) as partial:
            pq.write_table(table, partial, compression="zstd")
    except OSError as err:
        raise UserError(f"{path}: cannot write: {err.strerror or err}") from None
    counts = {key: summary[key] for key in ("rows", "active_rows", "oscs")}
    rest = {key: value for key, value in summary.items() if key not in counts}
    return {"file": run.file, **metadata, "tuner_seed": run.seed, **counts, "sha256": _sha256(path), **rest}


def _prepare(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"{out_dir}: exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"{out_dir}: cannot create the output directory: {err.strerror or err}") from None
    if not out_dir.is_dir():
        raise UserError(f"{out_dir}: not a directory")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise UserError(f"{out_dir}: the output directory is not writable")


#: What the manifest's merge reads of an earlier run's entry.
_RUN_KEYS: dict[str, type] = {
    "file": str,
    "scenario": str,
    "scenario_file": str,
    "scenario_sha256": str,
    "seed": int,
    "rows": int,
    "active_rows": int,
}


def _has(entry: object, keys: Mapping[str, type]) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(key), kind) for key, kind in keys.items())


def _earlier_manifest(out_dir: Path) -> dict[str, Any] | None:
    """The manifest an earlier collection left in ``out_dir`` (None if none), checked before any run."""
    path = out_dir / MANIFEST
    if not path.exists():
        return None
    advice = "move it away, or collect into another --out (train takes several directories)"
    try:
        manifest: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not JSON"
        raise UserError(f"{path}: cannot read the manifest already there ({reason}); {advice}") from None
    runs = manifest.get("runs") if isinstance(manifest, dict) else None
    failed = manifest.get("failed", []) if isinstance(manifest, dict) else None
    if not (isinstance(runs, list) and isinstance(failed, list)) or not (
        all(_has(entry, _RUN_KEYS) for entry in runs) and all(_has(entry, {"file": str}) for entry in failed)
    ):
        raise UserError(f"{path}: not a manifest pfstune collect wrote; {advice}")
    if manifest.get("columns") != list(COLUMNS):
        raise UserError(
            f"{path}: the collection already there has other columns (pfstune {manifest.get('pfstune_version')}); "
            f"one directory is one dataset: {advice}"
        )
    earlier: dict[str, Any] = manifest
    return earlier


def _merge(
    earlier: Mapping[str, Any] | None,
    entries: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    out_dir: Path,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The runs, failures and earlier runs the manifest lists: ``earlier``'s whose files are still
    there and were not written again, then this collection's (module docstring)."""
    now = {entry["file"] for entry in entries}
    kept = [
        entry
        for entry in (earlier or {}).get("runs", [])
        if entry["file"] not in now and (out_dir / entry["file"]).is_file()
    ]
    again = now | {entry["file"] for entry in failed} | {entry["file"] for entry in kept}
    still_failed = [entry for entry in (earlier or {}).get("failed", []) if entry["file"] not in again]
    return [*kept, *entries], [*still_failed, *failed], kept


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _run_all(
    executor: Executor, runs: Sequence[CollectRun], out_dir: Path, progress: Progress | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], BaseException | None]:
    """Run every run on ``executor``, writing each file as its run finishes.

    Returns the manifest entries of the written runs and of the failed ones (both in run order),
    and the first failure.  A failed run does not stop the others; an interrupt or a file that
    cannot be written cancels the runs not yet started and is raised.
    """
    total = sum(run.duration_s for run in runs)
    done = 0.0
    entries: dict[int, dict[str, Any]] = {}
    failed: dict[int, dict[str, Any]] = {}
    first: BaseException | None = None
    futures: dict[Future[tuple[pa.Table, dict[str, Any]]], CollectRun] = {
        executor.submit(_record, run): run for run in runs
    }
    try:
        for future in as_completed(futures):
            run = futures.pop(future)  # as_completed drops its reference too: the table is freed once written
            try:
                table, summary = future.result()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as err:  # BaseException: a panic in the Rust core is one
                first = first or err
                failed[run.index] = {
                    "file": run.file,
                    "scenario": run.scenario,
                    "seed": run.seed,
                    "error": _describe(err),
                }
            else:
                entries[run.index] = _write(run, table, summary, out_dir)
            done += run.duration_s
            if progress is not None:
                progress(done, total)
    except BaseException:
        for pending in futures:
            pending.cancel()
        raise
    return [entries[i] for i in sorted(entries)], [failed[i] for i in sorted(failed)], first


def collect(
    scenario_paths: Sequence[str | Path],
    out_dir: str | Path,
    seeds: Sequence[int] | None = None,
    jobs: int | None = None,
    duration: str | None = None,
    progress: Progress | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    """Collect one Parquet file per (scenario, seed) into ``out_dir``; write and return the manifest.

    ``seeds`` None runs each scenario with its own seed; ``jobs`` local worker processes
    (default: the CPU count), or ``scheduler``, the address of a Dask cluster to run on instead;
    ``duration`` (e.g. ``"120s"``) overrides every scenario's; ``progress(done, total)`` in
    simulated seconds over all runs, called as each run finishes.  Invalid input is a
    :class:`UserError` raised before any run starts; if runs fail, :class:`CollectError` is
    raised after the others' files and the manifest are written.  Files and manifest: the
    module docstring.
    """
    runs = plan_runs(scenario_paths, seeds, duration)
    out = Path(out_dir)
    workers = max(1, os.cpu_count() or 1) if jobs is None else jobs
    if workers < 1:
        raise UserError(f"jobs must be at least 1, got {workers}")
    with no_empty_directory(out):  # an unreachable scheduler, say
        _prepare(out)
        earlier = _earlier_manifest(out)
        started = time.perf_counter()
        with open_executor(min(workers, len(runs)), scheduler) as executor:
            written, failed_now, first = _run_all(executor, runs, out, progress)
    entries, failed, kept = _merge(earlier, written, failed_now, out)
    scenarios: dict[tuple[str, str], dict[str, str]] = {}  # (file, sha256) -> the scenario
    described = [
        *((entry["scenario"], entry["scenario_file"], entry["scenario_sha256"]) for entry in kept),
        *((run.scenario, run.scenario_file, hashlib.sha256(run.text.encode()).hexdigest()) for run in runs),
    ]
    for name, file, digest in described:
        scenarios.setdefault((file, digest), {"name": name, "file": file, "sha256": digest})
    manifest: dict[str, Any] = {
        "pfstune_version": __version__,
        "source": "sim",
        "tuner": {
            "name": RandomTuner.name,
            "grid": "dial99",
            "seed": "the run's seed (iteration)",
            "what": "a uniformly random dial99 configuration on every OSC after every probe",
        },
        "scenarios": list(scenarios.values()),
        "seeds": sorted({run.seed for run in runs} | {entry["seed"] for entry in kept}),
        "duration": duration,
        "jobs": None if scheduler else workers,
        "scheduler": scheduler,
        "columns": list(COLUMNS),
        "rows": sum(entry["rows"] for entry in entries),
        "active_rows": sum(entry["active_rows"] for entry in entries),
        "wall_seconds": time.perf_counter() - started,
        "earlier_runs": len(kept),
        "runs": entries,
    }
    if failed:
        manifest["failed"] = failed
    path = out / MANIFEST
    try:
        with replacing(path) as partial:
            partial.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except OSError as err:
        raise UserError(f"{path}: cannot write the manifest: {err.strerror or err}") from None
    if failed_now:
        names = "; ".join(f"{entry['file']}: {entry['error']}" for entry in failed_now)
        done = f"the other {len(written)} files are written" if written else "no file is written"
        raise CollectError(
            f"{len(failed_now)} of {len(runs)} runs failed ({names}); {done}, and {path} lists the failures",
            manifest,
        ) from first
    return manifest
