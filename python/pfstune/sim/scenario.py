"""Scenario files: a simulated cluster, its initial tunables, and the jobs that run on it.

A scenario is a YAML file (examples in ``../shared/scenarios/`` beside the repository)::

    name: rnd_r_1_io_1m          # required
    seed: 7                      # default 0
    duration: 320s               # required
    probe_interval: 0.5s         # default 0.5s; at least 1ms
    cluster:                     # default: preset cloudlab-c6525, unchanged
      preset: cloudlab-c6525     # see pfstune.sim.presets; `pfstune sim presets` lists them
      clients: 5                 # any preset field can be overridden
    tunables:                    # initial value on every matching device; Lustre defaults where absent;
                                 # every listed value is in force at the start (max_dirty_mb is
                                 # written after the RPC parameters that may raise it)
      osc.max_pages_per_rpc: 1024
      osc.max_rpcs_in_flight: 8
    jobs:                        # required, at least one
      - name: reader             # required, unique
        client: 0                # required: `client: N` or `clients: [0, 1, 2]`
        workload: filebench.randomread   # required
        iosize: 1m               # default 1m  (sizes are binary: 1m = 1 MiB)
        filesize: 5g             # default 1g
        threads: 1               # default 1; each thread has its own file
        stripe_count: 1          # default 1; -1 = all OSTs
        stripe_size: 1m          # default 1m; a multiple of 64 KiB
        start: 0s                # default 0s
        stop: 320s               # default: the scenario duration
        fsync: false             # default false; filebench and ior jobs only (h5bench and DLIO
                                 # have no fsync option)
        cached: false            # filebench only, default false: the files start in the
                                 # client's page cache (filebench's preallocation on Linux)

``ior`` jobs take IOR's own names instead of ``iosize``/``filesize``/``threads``: ``api``
(posix|mpiio, default posix), ``processes`` (1), ``transfer`` (256k), ``block`` (1m, a multiple
of ``transfer``), ``segments`` (1), ``file_per_process`` (false), ``random`` (false),
``reorder_tasks`` (false; IOR's ``-C``: each rank reads back what a rank on another client
wrote, so that reads miss the writer's page cache), plus the common ``fsync`` (IOR's ``-e``:
fsync at the end of each write phase), striping, ``start`` and ``stop`` keys. Ranks repeat a
write phase and a read phase, with barriers between them, and remove the file at the end of each
repetition, as IOR does (docs/pfsim.md).

``h5bench.vpic`` (h5bench_write) and ``h5bench.bdcats`` (h5bench_read) take h5bench's settings,
lower-cased: ``processes`` (MPI ranks, 1, spread over the job's clients), ``num_dims`` (1),
``dim_1`` (8m particles; counts take k/m/g = 1024-multiples as h5bench's ``8 M``), ``dim_2`` and
``dim_3`` (1), ``timesteps`` (5), ``compute_time`` (1s; h5bench's name,
``emulated_compute_time_per_timestep``, is taken too); vpic: ``file_pattern``
(contig|interleaved|strided, contig); bdcats: ``read_option`` (full|partial|strided, full) and
``to_read_num_particles``; strided access: ``stride_size``, ``block_size``, ``block_cnt``, with
(stride_size + block_size) x block_cnt at most ``dim_1``, as h5bench requires.  h5bench settings
that choose nothing else in pfsim are taken, so that a copied configuration runs, at the
values that give what pfsim does: ``mode`` SYNC; for vpic ``mem_pattern`` CONTIG (INTERLEAVED
with an interleaved file: h5bench's CC and II modes) and ``collective_data`` NO; for bdcats any
``mem_pattern`` and ``collective_data`` (h5bench_read reads into contiguous buffers with
independent transfers whatever they say); ``collective_metadata`` YES or NO (HDF5's metadata
I/O is not modelled).  Another value is refused, saying what pfsim models.  Both kernels end
after their last timestep (as h5bench does); give enough ``timesteps`` to outlast the job.

``dlio`` jobs take the DLIO benchmark's settings: ``model`` (a preset from DLIO's published
workload configurations: ``bert`` or ``megatron_deepspeed``; any key below overrides it),
``format`` (tfrecord|npz: whole files in order; indexed_binary|mmap_indexed_binary: samples at
shuffled offsets; default npz), ``files``, ``samples_per_file``, ``sample_size`` (also taken
under DLIO's names ``num_files_train``, ``num_samples_per_file`` and ``record_length``; these
three are required unless ``model`` gives them),
``transfer_size`` (default the sample size), ``read_threads`` (1 per client;
each client is one rank), ``batch_size`` (1), ``computation_time`` (per batch, 0s; a bare number
is seconds, as in DLIO's own configuration files) and ``prefetch_size`` (2).

Validation is strict: an unknown key at any level, a missing required key, a bad size or
duration, an out-of-range client, an unknown workload or tunable, ``stop <= start`` or a YAML
syntax error raises :class:`~pfstune.errors.ScenarioError` with a one-line message naming the
file and the key path, e.g. ``scenario.yaml: jobs[1]: unknown key 'iosze' (did you mean
'iosize'?)``.  Keys are lower case; a value chosen from a list (``api``, ``read_option``,
``format``, ``ost_kind``, ...) is taken in any letter case, as the tools spell them
(IOR's ``POSIX``, h5bench's ``FULL``).

Values stay within what pfsim's 64-bit arithmetic holds: sizes up to 1 EiB (a workload's file
too), durations up to 1000h, counts up to 2^31 - 1; in ``cluster``, bandwidths of at least 1 kB/s,
latencies and costs of at most 10s, ``ost_channels`` up to 1024. Set-up refuses a file larger
than the OSTs it is striped over hold, files that together overfill an OST, and a scenario too
large for the machine's memory.

>>> s = parse_scenario('''
... name: demo
... duration: 20s
... jobs: [{name: r, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 1g}]
... ''', source="demo.yaml", overrides={"seed": 3, "tunables": {"osc.max_rpcs_in_flight": 32}})
>>> config = s.to_engine_config()
>>> config["seed"], config["tunables"], config["jobs"][0]["iosize"], config["cluster"]["clients"]
(3, {'osc.max_rpcs_in_flight': '32'}, 16777216, 5)
"""

from __future__ import annotations

import contextlib
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml

from pfstune.errors import ScenarioError, UnitError, UserError
from pfstune.sim._values import boolean, choice, integer, positive, text
from pfstune.sim.presets import DEFAULT_PRESET, FIELDS, PRESETS, resolve_field
from pfstune.textfiles import check_is_a_file
from pfstune.units import MAX_SIZE, MIN_PROBE_INTERVAL_NS, parse_duration, parse_size

#: Simulated wall-clock time at t = 0 (2024-06-10), fixed so that output is deterministic.
START_EPOCH_NS = 1_718_000_000 * 10**9

#: Tunables a scenario may set at t = 0, as lctl names without the device part: every writable
#: client parameter of lustre-client.md §3 (docs/pfsim.md says which of them change nothing in
#: pfsim), but the two that ask for something once rather than set a value (``osc_cached_mb``,
#: a shrink request, and ``cur_grant_bytes``, which only gives grant back).
TUNABLES = (
    "osc.max_pages_per_rpc",
    "osc.max_rpcs_in_flight",
    "osc.max_dirty_mb",
    "osc.short_io_bytes",
    "osc.checksums",
    "osc.checksum_type",
    "osc.grant_shrink_interval",
    "osc.idle_timeout",
    "osc.resend_count",
    "llite.max_read_ahead_mb",
    "llite.max_read_ahead_per_file_mb",
    "llite.max_read_ahead_whole_mb",
    "llite.read_ahead_async_file_threshold_mb",
    "llite.read_ahead_range_kb",
    "llite.max_read_ahead_async_active",
    "llite.max_cached_mb",
    "llite.checksums",
    "llite.fast_read",
    "llite.statahead_max",
    "mdc.max_rpcs_in_flight",
    "mdc.max_mod_rpcs_in_flight",
)

FILEBENCH_WORKLOADS = tuple(
    f"filebench.{p}"
    for p in (
        "seqread",
        "seqwrite",
        "randomread",
        "randomwrite",
        "randomrw",
        "seqrw",
        "wholefileread",
        "wholefilewrite",
        "wholefilerw",
    )
)
H5BENCH_WORKLOADS = ("h5bench.vpic", "h5bench.bdcats")
WORKLOADS = (*FILEBENCH_WORKLOADS, "ior", *H5BENCH_WORKLOADS, "dlio")
_READERS = frozenset({"filebench.seqread", "filebench.randomread", "filebench.wholefileread", "h5bench.bdcats", "dlio"})
_WRITERS = frozenset({"filebench.seqwrite", "filebench.randomwrite", "filebench.wholefilewrite", "h5bench.vpic"})

_TOP_KEYS = ("name", "seed", "duration", "probe_interval", "cluster", "tunables", "jobs")
_COMMON_JOB_KEYS = (
    "name",
    "client",
    "clients",
    "workload",
    "stripe_count",
    "stripe_size",
    "start",
    "stop",
    "fsync",
)
_FILEBENCH_KEYS = ("threads", "iosize", "filesize", "cached")
_IOR_KEYS = ("api", "processes", "transfer", "block", "segments", "file_per_process", "random", "reorder_tasks")
_H5_KEYS = (
    "processes",
    "num_dims",
    "dim_1",
    "dim_2",
    "dim_3",
    "timesteps",
    "compute_time",
    "stride_size",
    "block_size",
    "block_cnt",
)
#: h5bench settings that choose nothing pfsim models otherwise, so that a copied configuration
#: runs: each is taken at the values that give what pfsim does (h5bench's spelling, any case), and
#: another value is refused.  (h5bench_read reads into contiguous buffers with independent
#: transfers and collective metadata reads whatever its configuration says; HDF5's metadata
#: I/O is not modelled, so COLLECTIVE_METADATA changes nothing for either kernel.)
_H5_SETTINGS = ("mem_pattern", "collective_data", "collective_metadata", "mode")
_VPIC_KEYS = (*_H5_KEYS, "file_pattern", *_H5_SETTINGS)
_BDCATS_KEYS = (*_H5_KEYS, "read_option", "to_read_num_particles", *_H5_SETTINGS)
_DLIO_KEYS = (
    "model",
    "format",
    "files",
    "samples_per_file",
    "sample_size",
    "transfer_size",
    "read_threads",
    "batch_size",
    "computation_time",
    "prefetch_size",
)
#: The tools' own names for keys of ours (DLIO's dataset settings, h5bench's compute time), taken
#: as the same key: a configuration copied from the tool works as it is.
_TOOL_NAMES = {
    "dlio": {"num_files_train": "files", "num_samples_per_file": "samples_per_file", "record_length": "sample_size"},
    "h5bench.vpic": {"emulated_compute_time_per_timestep": "compute_time"},
    "h5bench.bdcats": {"emulated_compute_time_per_timestep": "compute_time"},
}
#: The keys of each workload family besides the common ones.
_WORKLOAD_KEYS = {
    "ior": _IOR_KEYS,
    "h5bench.vpic": _VPIC_KEYS,
    "h5bench.bdcats": _BDCATS_KEYS,
    "dlio": _DLIO_KEYS,
}
#: Workloads whose tools have no fsync option (h5bench's configuration and DLIO's have none):
#: ``fsync`` is an unknown key for them.
_NO_FSYNC = (*H5BENCH_WORKLOADS, "dlio")
#: What an ior job uses instead of each filebench-style key.
_IOR_INSTEAD = {"iosize": "transfer", "filesize": "block and segments", "threads": "processes"}

#: DLIO formats read sample by sample at shuffled offsets; the others are read as whole files in
#: order (their records are shuffled in memory).
DLIO_RANDOM_FORMATS = ("indexed_binary", "mmap_indexed_binary")
DLIO_FORMATS = ("tfrecord", "npz", *DLIO_RANDOM_FORMATS)
#: DLIO's published workload configurations (dlio_benchmark/configs/workload/*.yaml):
#: bert.yaml, and megatron_deepspeed.yaml with its 0.03 s per step (290 steps in 8.9 s).
DLIO_MODELS: dict[str, dict[str, Any]] = {
    "bert": {
        "format": "tfrecord",
        "files": 500,
        "samples_per_file": 313532,
        "sample_size": 2500,
        "transfer_size": 262144,
        "read_threads": 1,
        "batch_size": 48,
        "computation_time": "968ms",
    },
    "megatron_deepspeed": {
        "format": "mmap_indexed_binary",
        "files": 1,
        "samples_per_file": 277203535,
        "sample_size": 2048,
        "read_threads": 1,
        "batch_size": 1024,
        "computation_time": "30ms",
    },
}

#: VPIC-IO's particle properties (x, y, z, px, py, pz, id_1, id_2), 4 bytes each.
_H5_PROPERTIES = 8
_H5_ELEMENT = 4

_T = TypeVar("_T")
_REQUIRED: Any = object()


def dlio_seconds(value: object) -> int:
    """Nanoseconds of a DLIO ``computation_time``: a duration, or a bare number of seconds.

    DLIO's own YAML gives it as seconds without a unit (``computation_time: 0.968``), so a
    configuration copied from it must work; elsewhere a duration needs its unit.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise UnitError(f"{value!r} is not a duration")
        return parse_duration(f"{value:.9f}s")  # fixed-point: repr() writes 1e-05
    return parse_duration(value)


@dataclass(frozen=True)
class IorOptions:
    """The IOR parameters of an ``ior`` job (sizes in bytes)."""

    api: str
    processes: int
    transfer: int
    block: int
    segments: int
    file_per_process: bool
    random: bool
    fsync: bool
    reorder_tasks: bool = False


@dataclass(frozen=True)
class H5Options:
    """The h5bench settings of an ``h5bench.vpic`` or ``h5bench.bdcats`` job (counts of particles)."""

    processes: int
    particles: int  # per rank: DIM_1 x DIM_2 x DIM_3
    timesteps: int
    compute_ns: int
    file_pattern: str
    read_option: str
    to_read: int
    stride: int
    block: int
    block_cnt: int


@dataclass(frozen=True)
class DlioOptions:
    """The DLIO settings of a ``dlio`` job (sizes in bytes)."""

    format: str
    files: int
    samples_per_file: int
    sample_size: int
    transfer_size: int
    read_threads: int
    batch_size: int
    computation_ns: int
    prefetch: int


@dataclass(frozen=True)
class Job:
    """One job of a scenario, fully resolved (sizes in bytes, times in ns, defaults filled in).

    For ``ior`` jobs ``threads``, ``iosize`` and ``filesize`` are derived from :attr:`ior`
    (processes, transfer, and the size of each file) so the engine reads them uniformly.
    """

    name: str
    clients: tuple[int, ...]
    workload: str
    threads: int
    iosize: int
    filesize: int
    stripe_count: int
    stripe_size: int
    start_ns: int
    stop_ns: int
    fsync: bool
    ior: IorOptions | None = None
    h5bench: H5Options | None = None
    dlio: DlioOptions | None = None
    cached: bool = False

    @property
    def moves(self) -> frozenset[str]:
        """What the job's application does with its data: ``{"read"}``, ``{"write"}`` or both.

        IOR writes and reads back; filebench's ``*rw`` personalities do both; VPIC-IO writes;
        BDCATS-IO, DLIO and the read personalities read files that exist before the job starts.
        """
        if self.workload in _READERS:
            return frozenset({"read"})
        if self.workload in _WRITERS:
            return frozenset({"write"})
        return frozenset({"read", "write"})


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.  Build one with :func:`load_scenario` or :func:`parse_scenario`."""

    name: str
    source: str
    seed: int
    duration_ns: int
    probe_interval_ns: int
    preset: str
    cluster: dict[str, Any]
    tunables: dict[str, str]
    jobs: tuple[Job, ...]
    #: Tunables whose value an override gave (``--set``, a sweep's ``--param``), not the file:
    #: the engine's refusal of one names the command line instead.
    overridden_tunables: frozenset[str] = frozenset()

    def to_engine_config(self) -> dict[str, Any]:
        """Return the resolved configuration the simulator core consumes (a JSON-ready dict).

        Sizes are bytes, times nanoseconds, bandwidths bytes per second; the preset is expanded
        and overridden; tunable values are the strings that would be written to Lustre's files.
        """
        return {
            "name": self.name,
            "seed": self.seed,
            "duration_ns": self.duration_ns,
            "probe_interval_ns": self.probe_interval_ns,
            "start_epoch_ns": START_EPOCH_NS,
            "cluster": dict(self.cluster),
            "tunables": dict(self.tunables),
            "jobs": [
                {
                    "name": job.name,
                    "clients": list(job.clients),
                    "workload": job.workload,
                    "threads": job.threads,
                    "iosize": job.iosize,
                    "filesize": job.filesize,
                    "stripe_count": job.stripe_count,
                    "stripe_size": job.stripe_size,
                    "start_ns": job.start_ns,
                    "stop_ns": job.stop_ns,
                    "fsync": job.fsync,
                    "cached": job.cached,
                    "ior": None if job.ior is None else asdict(job.ior),
                    "h5bench": None if job.h5bench is None else asdict(job.h5bench),
                    "dlio": None if job.dlio is None else asdict(job.dlio),
                }
                for job in self.jobs
            ],
        }


def load_scenario(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Read and validate the scenario file at ``path``.

    ``overrides`` is a partial scenario document merged over the file before validation, as if
    the file said it: mappings (``cluster``, ``tunables``) merge key by key, other values
    replace.  The command line uses it for ``--seed``, ``--duration`` and ``--set``, e.g.
    ``{"duration": "2s", "tunables": {"osc.max_pages_per_rpc": 64}}``.  A ``duration`` shorter
    than the file's cuts the run: the jobs that start at or after it are left out and the others
    stop there (a job the file itself starts after its own end stays the file's error).
    """
    text = read_scenario_text(path)
    return parse_scenario(text, str(path), overrides)


def read_scenario_text(path: str | Path) -> str:
    """Return the text of the scenario file at ``path``; an unreadable file is a ScenarioError."""
    check_is_a_file(path, "a scenario file", ScenarioError)
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read the scenario: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{path}: not a text file ({err.reason})") from None


def parse_scenario(text: str, source: str, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Validate scenario YAML ``text``; ``source`` names it in error messages (see :func:`load_scenario`)."""
    doc = _load_yaml(text, source)
    own_duration = doc.get("duration") if overrides and "duration" in overrides else None
    if overrides:
        doc = _merge(doc, overrides)
    scenario = _Builder(source, own_duration).scenario(doc)
    overridden = (overrides or {}).get("tunables")
    return replace(scenario, overridden_tunables=frozenset(overridden)) if isinstance(overridden, Mapping) else scenario


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys instead of keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`: SafeConstructor merges it, and a key beside it wins
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):  # `? [a, b]: x` is valid YAML but names nothing
                raise yaml.constructor.ConstructorError(
                    None, None, f"a key must be a name, not a {type(key).__name__}", key_node.start_mark
                )
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _load_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        doc = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ScenarioError(f"{where}: invalid YAML: {err.problem or err.context}") from None
    except yaml.reader.ReaderError as err:  # a character YAML does not allow (NUL, other controls)
        code = err.character if isinstance(err.character, int) else ord(err.character)
        raise ScenarioError(
            f"{source}: invalid YAML: character #x{code:04x} at offset {err.position} is not allowed"
        ) from None
    except yaml.YAMLError as err:
        raise ScenarioError(f"{source}: invalid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(doc, dict):
        raise ScenarioError(f"{source}: a scenario must be a YAML mapping (name:, duration:, jobs:, ...)")
    return doc


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = _merge(old, value)
        else:
            merged[key] = value
    return merged


def _suggest(key: object, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _one_of(values: tuple[str, ...], why: str) -> Callable[[object], str]:
    """A tool setting taken at ``values`` only (any letter case; YAML's ``yes``/``no`` are booleans);
    ``why`` says what pfsim models when another value is refused."""

    def convert(value: object) -> str:
        spelled = {False: "no", True: "yes"}.get(value, value) if isinstance(value, bool) else value
        if isinstance(spelled, str) and spelled.lower() in values:
            return spelled.lower()
        models = " or ".join(v.upper() for v in values)
        raise UserError(f"{spelled!r}: pfsim models {models} here" + (f" ({why})" if why else ""))

    return convert


def _stripe_size(value: object) -> int:
    size = parse_size(value)
    if size <= 0 or size % 65536:
        raise UserError(f"{value!r} is not a Lustre stripe size (a positive multiple of 64 KiB)")
    if size >= 1 << 32:  # lmm_stripe_size is 32 bits: lfs setstripe says "stripe size over 4GB limit"
        raise UserError(f"{value!r} is not a Lustre stripe size (less than 4 GiB)")
    return size


def _tunable_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, str)):
        return str(value)
    raise UserError(f"expected an integer or a string, not {value!r}")


class _Builder:
    """Turns a parsed YAML document into a :class:`Scenario`, naming ``source`` in every error."""

    def __init__(self, source: str, own_duration: object = None) -> None:
        """``own_duration``: the file's own ``duration`` where an override replaced it (``--duration``)."""
        self.source = source
        self.own_duration = own_duration
        self.spelled: dict[str, str] = {}  # our key -> the tool's name it was given as (this job's)
        self.their_names: dict[str, str] = {}  # our key -> the tool's name for it (this job's workload)

    def error(self, path: str, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}")

    def mapping(self, value: object, path: str) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise self.error(path, f"expected a mapping, not {value!r}")
        return value

    def check_keys(self, doc: Mapping[Any, Any], allowed: tuple[str, ...], path: str) -> None:
        for key in doc:
            if key not in allowed:
                raise self.error(path, f"unknown key {key!r}{_suggest(key, allowed)}")

    def get(
        self,
        doc: Mapping[Any, Any],
        key: str,
        path: str,
        convert: Callable[[object], _T],
        default: _T = _REQUIRED,
    ) -> _T:
        """Return ``convert(doc[key])``, or ``default`` when absent; errors name ``path.key``."""
        if key not in doc:
            if default is _REQUIRED:
                theirs = f" (or {self.their_names[key]!r}, the tool's name)" if key in self.their_names else ""
                raise self.error(path, f"missing required key {key!r}{theirs}")
            return default
        try:
            return convert(doc[key])
        except UserError as err:
            shown = self.spelled.get(key, key)
            raise self.error(f"{path}.{shown}" if path else shown, str(err)) from None

    def scenario(self, doc: dict[str, Any]) -> Scenario:
        self.check_keys(doc, _TOP_KEYS, "")
        name = self.get(doc, "name", "", text)
        duration_ns = self.get(doc, "duration", "", positive(parse_duration))
        probe_ns = self.get(doc, "probe_interval", "", positive(parse_duration), 500_000_000)
        if probe_ns < MIN_PROBE_INTERVAL_NS:
            shortest = f"{MIN_PROBE_INTERVAL_NS // 10**6}ms"
            raise self.error("probe_interval", f"{doc['probe_interval']!r} is shorter than the shortest, {shortest}")
        preset, cluster = self.cluster(doc.get("cluster", {}))
        tunables = self.tunables(doc.get("tunables", {}))
        jobs_doc = self.get(doc, "jobs", "", lambda v: v)
        if not isinstance(jobs_doc, list) or not jobs_doc:
            raise self.error("jobs", "expected a non-empty list of jobs")
        n_osts = cluster["oss"] * cluster["osts_per_oss"]
        # The jobs are checked against the file's own end: a job the file starts after its end is
        # the file's mistake; one that an override (--duration) ends before is cut below.
        file_end_ns = duration_ns
        if self.own_duration is not None:
            with contextlib.suppress(UserError):  # else the override stands in for a bad duration
                file_end_ns = positive(parse_duration)(self.own_duration)
        jobs = tuple(
            self.job(job, f"jobs[{i}]", cluster["clients"], n_osts, duration_ns, file_end_ns)
            for i, job in enumerate(jobs_doc)
        )
        names = [job.name for job in jobs]
        for i, job_name in enumerate(names):
            if job_name in names[:i]:
                raise self.error(f"jobs[{i}].name", f"duplicate job name {job_name!r}")
        if duration_ns < file_end_ns:
            jobs = self.cut(jobs, duration_ns, doc["duration"])
        return Scenario(
            name=name,
            source=self.source,
            seed=self.get(doc, "seed", "", integer(0, 2**64 - 1), 0),
            duration_ns=duration_ns,
            probe_interval_ns=probe_ns,
            preset=preset,
            cluster=cluster,
            tunables=tunables,
            jobs=jobs,
        )

    def cut(self, jobs: tuple[Job, ...], end_ns: int, end: object) -> tuple[Job, ...]:
        """``jobs`` of a run that an override ends at ``end_ns``: those that start at or after it are
        dropped, and the others stop there at the latest."""
        kept = tuple(replace(job, stop_ns=min(job.stop_ns, end_ns)) for job in jobs if job.start_ns < end_ns)
        if not kept:
            first = min(job.start_ns for job in jobs) / 1e9
            raise ScenarioError(
                f"--duration {end}: ends the run of {self.source} before any of its jobs starts "
                f"(the first at {first:g}s)"
            )
        return kept

    def cluster(self, value: object) -> tuple[str, dict[str, Any]]:
        doc = self.mapping(value, "cluster")
        allowed = ("preset", *FIELDS)
        self.check_keys(doc, allowed, "cluster")
        preset = doc.get("preset", DEFAULT_PRESET)
        if not isinstance(preset, str) or preset not in PRESETS:
            raise self.error(
                "cluster.preset",
                f"unknown preset {preset!r}{_suggest(preset, tuple(PRESETS))}; available: {', '.join(PRESETS)}",
            )
        cluster: dict[str, Any] = {}
        for key, raw in {**PRESETS[preset], **doc}.items():
            if key == "preset":
                continue
            try:
                engine_key, converted = resolve_field(key, raw)
            except UserError as err:
                raise self.error(f"cluster.{key}", str(err)) from None
            if engine_key is not None:
                cluster[engine_key] = converted
        if cluster["ost_scheduler"] == "mq-deadline" and cluster["ost_channels"] != 1:
            where = "cluster.ost_scheduler" if "ost_scheduler" in doc else "cluster.ost_channels"
            raise self.error(where, "the mq-deadline elevator models a one-actuator device: it needs ost_channels: 1")
        if cluster["oss"] * cluster["osts_per_oss"] > 0xFFFF:  # an OST index is four hex digits
            where = "cluster.osts_per_oss" if "osts_per_oss" in doc else "cluster.oss"
            raise self.error(where, f"{cluster['oss']} x {cluster['osts_per_oss']} OSTs: at most 65535 OSTs")
        if cluster["ost_kind"] == "hdd" and cluster["ost_rpm"] == 0:
            where = "cluster.ost_rpm" if "ost_rpm" in doc else "cluster.ost_kind"
            raise self.error(where, "a disk (ost_kind: hdd) needs its spindle speed: set ost_rpm, e.g. 7200")
        # Engine keys in FIELDS order, whatever order the scenario wrote its overrides in.
        order = [f.engine_key for f in FIELDS.values() if f.engine_key is not None]
        return preset, {key: cluster[key] for key in order}

    def tunables(self, value: object) -> dict[str, str]:
        doc = self.mapping(value, "tunables")
        for key in doc:
            if key not in TUNABLES:
                raise self.error("tunables", f"unknown tunable {key!r}{_suggest(key, TUNABLES)}")
        return {key: self.get(doc, key, "tunables", _tunable_value) for key in doc}

    def job(self, value: object, path: str, n_clients: int, n_osts: int, duration_ns: int, end_ns: int) -> Job:
        """One job; ``stop`` defaults to ``duration_ns``, and ``start`` must be before ``end_ns`` (the file's end)."""
        doc = self.mapping(value, path)
        workload = self.get(doc, "workload", path, text)
        if workload not in WORKLOADS:
            raise self.error(
                f"{path}.workload",
                f"unknown workload {workload!r}{_suggest(workload, WORKLOADS)}; supported: {', '.join(WORKLOADS)}",
            )
        is_ior = workload == "ior"
        doc = self.tool_names(doc, path, workload)
        own = _WORKLOAD_KEYS.get(workload, _FILEBENCH_KEYS)
        common = tuple(k for k in _COMMON_JOB_KEYS if k != "fsync" or workload not in _NO_FSYNC)
        for key in doc:
            if is_ior and key in _IOR_INSTEAD:
                raise self.error(path, f"key {key!r} does not apply to ior jobs: use {_IOR_INSTEAD[key]}")
            if key == "fsync" and key not in common:
                tool = "DLIO" if workload == "dlio" else "h5bench"
                raise self.error(path, f"unknown key 'fsync' for {workload} jobs ({tool} has no fsync option)")
            if key not in own and key not in common:
                owners = [name for name, keys in _WORKLOAD_KEYS.items() if key in keys]
                owners += ["filebench.*"] if key in _FILEBENCH_KEYS else []
                if owners:
                    raise self.error(path, f"key {key!r} applies to {' and '.join(owners)} jobs, not to {workload}")
        self.check_keys(doc, common + own, path)

        name = self.get(doc, "name", path, text)
        clients = self.clients(doc, path, n_clients)
        stripe_count = self.get(doc, "stripe_count", path, integer(-1, n_osts), 1)
        if stripe_count == 0:
            raise self.error(f"{path}.stripe_count", "0 is not a stripe count (1 to the OST count, or -1 for all)")
        start_ns = self.get(doc, "start", path, parse_duration, 0)
        stop_ns = self.get(doc, "stop", path, parse_duration, duration_ns)
        start = doc.get("start", "0s")
        if "stop" in doc and stop_ns <= start_ns:
            raise self.error(f"{path}.stop", f"stop ({doc['stop']}) must be after start ({start})")
        if start_ns >= end_ns:
            end = f"{end_ns / 1e9:g}s"
            never = f"{start} is not before the scenario's end ({end}): the job would never run"
            raise self.error(f"{path}.start", never)
        fsync = self.get(doc, "fsync", path, boolean, False)

        ior = self.ior(doc, path, fsync) if is_ior else None
        h5 = self.h5bench(doc, path, workload) if workload in H5BENCH_WORKLOADS else None
        dlio = self.dlio(doc, path) if workload == "dlio" else None
        cached = self.get(doc, "cached", path, boolean, False)
        if ior is not None:
            threads, iosize = ior.processes, ior.transfer
            filesize = ior.block * ior.segments * (1 if ior.file_per_process else ior.processes)
        elif h5 is not None:
            # the size of the rank's part of one dataset, and of the shared file
            threads, iosize = h5.processes, h5.particles * _H5_ELEMENT
            filesize = _H5_PROPERTIES * _H5_ELEMENT * h5.particles * h5.processes * h5.timesteps
        elif dlio is not None:
            threads, iosize = dlio.read_threads * len(clients), dlio.transfer_size
            filesize = dlio.samples_per_file * dlio.sample_size
        else:
            threads = self.get(doc, "threads", path, integer(1), 1)
            iosize = self.get(doc, "iosize", path, positive(parse_size), 1 << 20)
            filesize = self.get(doc, "filesize", path, positive(parse_size), 1 << 30)
            if filesize < iosize:
                raise self.error(f"{path}.filesize", f"filesize ({filesize} B) is smaller than iosize ({iosize} B)")
        if filesize > MAX_SIZE:  # a product of the workload's own keys
            made_of = {"ior": "block x segments (x processes)", "dlio": "samples_per_file x sample_size"}
            what = made_of.get(workload, "its particles, processes and timesteps")
            too_large = f"{filesize} bytes, larger than any pfstune handles (1 EiB)"
            raise self.error(path, f"its file ({what}) would be {too_large}")
        if dlio is not None and dlio.files * filesize > MAX_SIZE:  # the shuffle numbers every sample
            total = dlio.files * filesize
            raise self.error(
                path,
                f"its dataset (files x samples_per_file x sample_size) would be {total} bytes, "
                "larger than any pfstune handles (1 EiB)",
            )
        return Job(
            name=name,
            clients=clients,
            workload=workload,
            threads=threads,
            iosize=iosize,
            filesize=filesize,
            stripe_count=n_osts if stripe_count == -1 else stripe_count,
            stripe_size=self.get(doc, "stripe_size", path, _stripe_size, 1 << 20),
            start_ns=start_ns,
            stop_ns=stop_ns,
            fsync=fsync,
            ior=ior,
            h5bench=h5,
            dlio=dlio,
            cached=cached,
        )

    def tool_names(self, doc: dict[Any, Any], path: str, workload: str) -> dict[Any, Any]:
        """``doc`` with the tool's own names of keys (DLIO's ``record_length``, ...) as ours; errors
        about such a value name the key as it was given."""
        names = _TOOL_NAMES.get(workload, {})
        self.spelled = {}
        self.their_names = {ours: theirs for theirs, ours in names.items()}
        if not any(key in doc for key in names):
            return doc
        renamed = dict(doc)
        for theirs, ours in names.items():
            if theirs not in doc:
                continue
            if ours in doc:
                raise self.error(path, f"give {ours!r} or {theirs!r} (the same setting), not both")
            renamed[ours] = renamed.pop(theirs)
            self.spelled[ours] = theirs
        return renamed

    def clients(self, doc: Mapping[str, Any], path: str, n_clients: int) -> tuple[int, ...]:
        if ("client" in doc) == ("clients" in doc):
            raise self.error(path, "give exactly one of 'client: N' or 'clients: [N, ...]'")
        key = "client" if "client" in doc else "clients"
        raw = doc[key]
        if key == "client":
            indices = [raw]
        elif isinstance(raw, list) and raw:
            indices = raw
        else:
            raise self.error(f"{path}.clients", f"expected a non-empty list of client indices, not {raw!r}")
        for index in indices:
            if isinstance(index, bool) or not isinstance(index, int):
                raise self.error(f"{path}.{key}", f"{index!r} is not a client index")
            if not 0 <= index < n_clients:
                raise self.error(
                    f"{path}.{key}",
                    f"client {index} is out of range (the cluster has {n_clients} clients: 0..{n_clients - 1})",
                )
        if len(set(indices)) != len(indices):
            raise self.error(f"{path}.{key}", "a client is listed twice")
        return tuple(indices)

    def ior(self, doc: Mapping[str, Any], path: str, fsync: bool) -> IorOptions:
        transfer = self.get(doc, "transfer", path, positive(parse_size), 256 << 10)
        block = self.get(doc, "block", path, positive(parse_size), 1 << 20)
        if block % transfer:
            raise self.error(f"{path}.block", f"block ({block} B) must be a multiple of transfer ({transfer} B)")
        return IorOptions(
            api=self.get(doc, "api", path, choice("IOR api", "posix", "mpiio"), "posix"),
            processes=self.get(doc, "processes", path, integer(1), 1),
            transfer=transfer,
            block=block,
            segments=self.get(doc, "segments", path, integer(1), 1),
            file_per_process=self.get(doc, "file_per_process", path, boolean, False),
            random=self.get(doc, "random", path, boolean, False),
            fsync=fsync,
            reorder_tasks=self.get(doc, "reorder_tasks", path, boolean, False),
        )

    def h5bench(self, doc: Mapping[str, Any], path: str, workload: str) -> H5Options:
        count = positive(parse_size)
        dims = self.get(doc, "num_dims", path, integer(1, 3), 1)
        sizes = [self.get(doc, f"dim_{i}", path, count, (8 << 20) if i == 1 else 1) for i in (1, 2, 3)]
        for i in range(dims + 1, 4):
            if sizes[i - 1] != 1:
                raise self.error(
                    f"{path}.dim_{i}", f"must be 1 with num_dims: {dims} (h5bench: unused dimensions are 1)"
                )
        particles = sizes[0] * sizes[1] * sizes[2]
        write = workload == "h5bench.vpic"
        pattern = self.get(
            doc, "file_pattern", path, choice("h5bench file pattern", "contig", "interleaved", "strided"), "contig"
        )
        option = self.get(doc, "read_option", path, choice("h5bench read option", "full", "partial", "strided"), "full")
        strided = pattern == "strided" if write else option == "strided"
        key = f"{path}.file_pattern" if write else f"{path}.read_option"
        # the combinations h5bench supports (its documentation, "Supported Patterns")
        if (strided or option == "partial") and dims != 1:
            raise self.error(key, f"{pattern if write else option} access is supported for num_dims: 1 only")
        if write and pattern == "interleaved" and dims == 3:
            raise self.error(key, "interleaved is supported for num_dims 1 and 2 only")
        to_read = particles
        if option == "partial":
            to_read = self.get(doc, "to_read_num_particles", path, count)
            if to_read > particles:
                raise self.error(
                    f"{path}.to_read_num_particles", f"{to_read} is more than the {particles} particles per rank"
                )
        stride = block = block_cnt = 0
        if strided:
            stride = self.get(doc, "stride_size", path, count)
            block = self.get(doc, "block_size", path, count)
            block_cnt = self.get(doc, "block_cnt", path, count)
            if block > stride:
                raise self.error(f"{path}.block_size", f"block_size ({block}) is larger than stride_size ({stride})")
            # h5bench_write and h5bench_read refuse this ("Invalid hyperslab setting"), though the
            # blocks themselves need only (block_cnt - 1) x stride_size + block_size particles
            if (stride + block) * block_cnt > particles:
                raise self.error(
                    f"{path}.block_cnt",
                    f"(stride_size + block_size) x block_cnt = ({stride} + {block}) x {block_cnt} ="
                    f" {(stride + block) * block_cnt} is more than dim_1 ({particles}): h5bench refuses it"
                    " (Invalid hyperslab setting)",
                )
        else:
            for name in ("stride_size", "block_size", "block_cnt"):
                if name in doc:
                    raise self.error(f"{path}.{name}", "applies only to strided access")
        self.h5bench_settings(doc, path, write, pattern)
        return H5Options(
            processes=self.get(doc, "processes", path, integer(1), 1),
            particles=particles,
            timesteps=self.get(doc, "timesteps", path, integer(1), 5),
            compute_ns=self.get(doc, "compute_time", path, parse_duration, 1_000_000_000),
            file_pattern=pattern,
            read_option=option,
            to_read=to_read,
            stride=stride,
            block=block,
            block_cnt=block_cnt,
        )

    def h5bench_settings(self, doc: Mapping[str, Any], path: str, write: bool, pattern: str) -> None:
        """Check the h5bench settings of :data:`_H5_SETTINGS` against what pfsim models."""
        yes_or_no = ("yes", "no")
        if write:
            # VPIC-IO's CC, II and contiguous-memory strided modes (IC and CI are not modelled)
            memory = "interleaved" if pattern == "interleaved" else "contig"
            mode = {"contig": "CC", "interleaved": "II"}.get(pattern, "contiguous memory")
            allowed = {
                "mem_pattern": (
                    (memory,),
                    f"with file_pattern {pattern}: {mode}; the IC and CI modes are not modelled",
                ),
                "collective_data": (("no",), "independent transfers; collective buffering is not modelled"),
                "collective_metadata": (yes_or_no, ""),
                "mode": (("sync",), "no asynchronous VOL connector"),
            }
        else:
            allowed = {
                "mem_pattern": (("contig", "interleaved", "strided"), ""),
                "collective_data": (yes_or_no, ""),
                "collective_metadata": (yes_or_no, ""),
                "mode": (("sync",), "no asynchronous VOL connector"),
            }
        for key, (values, why) in allowed.items():
            self.get(doc, key, path, _one_of(values, why), values[0])

    def dlio(self, doc: Mapping[str, Any], path: str) -> DlioOptions:
        model = self.get(doc, "model", path, choice("DLIO model", *DLIO_MODELS), None)
        merged = {**(DLIO_MODELS[model] if model else {}), **doc}
        count = positive(parse_size)
        data_format = self.get(merged, "format", path, choice("DLIO format", *DLIO_FORMATS), "npz")
        sample_size = self.get(merged, "sample_size", path, positive(parse_size))
        transfer = self.get(merged, "transfer_size", path, positive(parse_size), sample_size)
        if data_format in DLIO_RANDOM_FORMATS:
            transfer = min(transfer, sample_size)  # a read never spans two shuffled samples
        return DlioOptions(
            format=data_format,
            files=self.get(merged, "files", path, count),
            samples_per_file=self.get(merged, "samples_per_file", path, count),
            sample_size=sample_size,
            transfer_size=transfer,
            read_threads=self.get(merged, "read_threads", path, integer(1, 256), 1),
            batch_size=self.get(merged, "batch_size", path, integer(1), 1),
            computation_ns=self.get(merged, "computation_time", path, dlio_seconds, 0),
            prefetch=self.get(merged, "prefetch_size", path, integer(1, 1024), 2),
        )
