from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from pfstune.errors import ScenarioError, UserError
from pfstune.sim.engine import Engine
from pfstune.sim.presets import FIELDS, PRESETS
from pfstune.sim.scenario import START_EPOCH_NS, TUNABLES, WORKLOADS, load_scenario, parse_scenario

GOOD = """\
name: good
seed: 7
duration: 320s
probe_interval: 0.5s
cluster:
  preset: cloudlab-c6525
  clients: 5
tunables:
  osc.max_pages_per_rpc: 1024
  osc.max_rpcs_in_flight: 8
jobs:
  - name: reader
    client: 0
    workload: filebench.randomread
    iosize: 1m
    filesize: 5g
    threads: 1
    stripe_count: 1
    stripe_size: 1m
    start: 0s
    stop: 320s
"""

JOB = "{name: j, client: 0, workload: filebench.randomread}"


def doc(jobs: str = f"[{JOB}]", top: str = "", cluster: str = "{preset: cloudlab-c6525}") -> str:
    """A minimal scenario with the given jobs list, extra top-level lines and cluster mapping."""
    return f"name: t\nduration: 10s\ncluster: {cluster}\n{top}jobs: {jobs}\n"


def test_example_from_the_design_resolves_to_the_engine_config(write_scenario: Callable[[str], Path]) -> None:
    config = load_scenario(write_scenario(GOOD)).to_engine_config()
    assert list(config) == [
        "name", "seed", "duration_ns", "probe_interval_ns", "start_epoch_ns", "cluster", "tunables", "jobs",
    ]  # fmt: skip
    assert config["seed"] == 7
    assert config["duration_ns"] == 320 * 10**9
    assert config["probe_interval_ns"] == 500_000_000
    assert config["start_epoch_ns"] == START_EPOCH_NS == 1_718_000_000 * 10**9
    assert config["tunables"] == {"osc.max_pages_per_rpc": "1024", "osc.max_rpcs_in_flight": "8"}
    assert config["jobs"] == [
        {
            "name": "reader",
            "clients": [0],
            "workload": "filebench.randomread",
            "threads": 1,
            "iosize": 1048576,
            "filesize": 5368709120,
            "stripe_count": 1,
            "stripe_size": 1048576,
            "start_ns": 0,
            "stop_ns": 320000000000,
            "fsync": False,
            "cached": False,
            "ior": None,
            "h5bench": None,
            "dlio": None,
        }
    ]


def test_cluster_is_the_expanded_preset(write_scenario: Callable[[str], Path]) -> None:
    cluster = load_scenario(write_scenario(GOOD)).to_engine_config()["cluster"]
    preset = PRESETS["cloudlab-c6525"]
    # every preset field but the description reaches the engine, converted to base units
    assert set(cluster) == {FIELDS[k].engine_key for k in preset if FIELDS[k].engine_key}
    assert cluster["clients"] == 5
    assert cluster["client_ram_bytes"] == 128 << 30
    assert cluster["net_bandwidth_bps"] == 2.8e9  # decimal rate
    assert cluster["net_latency_ns"] == 25_000
    assert cluster["brw_size_bytes"] == 4 << 20
    assert cluster["ost_stripe_bytes"] == 128 << 10  # binary size


def test_defaults() -> None:
    scenario = parse_scenario(f"name: t\nduration: 10s\njobs: [{JOB}]\n", "t.yaml")
    assert scenario.seed == 0
    assert scenario.probe_interval_ns == 500_000_000
    assert scenario.preset == "cloudlab-c6525"
    assert scenario.tunables == {}
    job = scenario.jobs[0]
    assert (job.threads, job.iosize, job.filesize) == (1, 1 << 20, 1 << 30)
    assert (job.stripe_count, job.stripe_size) == (1, 1 << 20)
    assert (job.start_ns, job.stop_ns, job.fsync) == (0, 10 * 10**9, False)
    assert job.cached is False


def test_shared_scenarios_load_and_resolve(shared_scenarios: list[Path]) -> None:
    for path in shared_scenarios:
        config = load_scenario(path).to_engine_config()
        assert config["jobs"], path
        assert all(job["stop_ns"] <= config["duration_ns"] for job in config["jobs"]), path


def test_fivestream_mix_resolves_every_job(shared_scenarios: list[Path]) -> None:
    path = next(p for p in shared_scenarios if p.name == "fivestream-mix.yaml")
    jobs = load_scenario(path).to_engine_config()["jobs"]
    assert [job["clients"] for job in jobs] == [[0], [1], [2], [3], [4]]
    assert jobs[0]["threads"] == 5
    assert jobs[0]["iosize"] == 8192
    assert jobs[3]["stripe_count"] == 4


def test_overrides_merge_like_the_file_said_it(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(GOOD.replace("    stop: 320s\n", ""))
    scenario = load_scenario(
        path,
        {"seed": 3, "duration": "2s", "tunables": {"osc.max_rpcs_in_flight": 32}, "cluster": {"clients": 2}},
    )
    assert scenario.seed == 3
    assert scenario.duration_ns == 2 * 10**9
    assert scenario.jobs[0].stop_ns == 2 * 10**9  # the default stop follows the duration
    assert scenario.tunables == {"osc.max_pages_per_rpc": "1024", "osc.max_rpcs_in_flight": "32"}
    assert scenario.cluster["clients"] == 2
    assert scenario.cluster["oss"] == 4  # the rest of the preset is kept


def test_clients_list_and_all_osts() -> None:
    scenario = parse_scenario(
        doc("[{name: j, clients: [0, 2], workload: filebench.seqwrite, stripe_count: -1, fsync: true}]"), "t.yaml"
    )
    job = scenario.jobs[0]
    assert job.clients == (0, 2)
    assert job.stripe_count == 8  # -1: every OST of the preset (4 OSS x 2)
    assert job.fsync is True


def test_cached_filebench_files_reach_the_engine() -> None:
    scenario = parse_scenario(doc("[{name: j, client: 0, workload: filebench.randomread, cached: true}]"), "t.yaml")
    assert scenario.jobs[0].cached is True
    assert scenario.to_engine_config()["jobs"][0]["cached"] is True


def test_ior_job_resolves_its_own_parameters() -> None:
    scenario = parse_scenario(
        doc(
            "[{name: ior, clients: [0, 1], workload: ior, api: mpiio, processes: 4, transfer: 1m, "
            "block: 16m, segments: 2, random: true, fsync: true, reorder_tasks: true}]"
        ),
        "t.yaml",
    )
    job = scenario.to_engine_config()["jobs"][0]
    assert job["ior"] == {
        "api": "mpiio",
        "processes": 4,
        "transfer": 1 << 20,
        "block": 16 << 20,
        "segments": 2,
        "file_per_process": False,
        "random": True,
        "fsync": True,
        "reorder_tasks": True,
    }
    assert (job["threads"], job["iosize"]) == (4, 1 << 20)
    assert job["filesize"] == (16 << 20) * 2 * 4  # block x segments x processes (one shared file)


def test_ior_defaults_follow_ior() -> None:
    job = parse_scenario(doc("[{name: ior, client: 0, workload: ior, file_per_process: true}]"), "t.yaml").jobs[0]
    assert job.ior is not None
    assert (job.ior.api, job.ior.transfer, job.ior.block, job.ior.segments) == ("posix", 256 << 10, 1 << 20, 1)
    assert job.ior.reorder_tasks is False  # IOR reads back its own data unless given -C
    assert job.filesize == 1 << 20  # one file per process


def test_h5bench_jobs_take_h5bench_settings() -> None:
    text = doc(
        "[{name: v, clients: [0, 1], workload: h5bench.vpic, processes: 4, num_dims: 2, dim_1: 1k, dim_2: 256,"
        " timesteps: 3, compute_time: 500ms, file_pattern: interleaved}]"
    )
    job = parse_scenario(text, "t.yaml").jobs[0]
    assert job.h5bench is not None
    assert (job.h5bench.processes, job.h5bench.particles, job.h5bench.timesteps) == (4, 1024 * 256, 3)
    assert (job.h5bench.compute_ns, job.h5bench.file_pattern) == (500_000_000, "interleaved")
    # one shared file: 8 properties of 4 bytes per particle, every rank, every timestep
    assert job.filesize == 8 * 4 * 1024 * 256 * 4 * 3
    defaults = parse_scenario(doc("[{name: b, client: 0, workload: h5bench.bdcats}]"), "t.yaml").jobs[0].h5bench
    assert defaults is not None
    assert (defaults.particles, defaults.timesteps, defaults.compute_ns, defaults.read_option) == (
        8 << 20,
        5,
        1_000_000_000,
        "full",
    )


def test_dlio_models_are_dlio_published_configurations_and_keys_override_them() -> None:
    bert = parse_scenario(doc("[{name: d, clients: [0, 1], workload: dlio, model: bert}]"), "t.yaml").jobs[0]
    assert bert.dlio is not None
    assert (bert.dlio.format, bert.dlio.files, bert.dlio.samples_per_file, bert.dlio.sample_size) == (
        "tfrecord",
        500,
        313532,
        2500,
    )
    assert (bert.dlio.transfer_size, bert.dlio.batch_size, bert.dlio.computation_ns) == (262144, 48, 968_000_000)
    text = doc(
        "[{name: d, client: 0, workload: dlio, model: megatron_deepspeed, read_threads: 4, computation_time: 0s}]"
    )
    megatron = parse_scenario(text, "t.yaml").jobs[0].dlio
    assert megatron is not None
    assert (megatron.format, megatron.files, megatron.sample_size) == ("mmap_indexed_binary", 1, 2048)
    assert (megatron.read_threads, megatron.computation_ns, megatron.transfer_size) == (4, 0, 2048)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0.968", 968_000_000), ("2", 2_000_000_000), ("30ms", 30_000_000), ("1.0e-05", 10_000)],
)
def test_dlio_computation_time_takes_dlio_s_bare_seconds(value: str, expected: int) -> None:
    text = doc(f"[{{name: d, client: 0, workload: dlio, model: bert, computation_time: {value}}}]")
    options = parse_scenario(text, "t.yaml").jobs[0].dlio
    assert options is not None
    assert options.computation_ns == expected


@pytest.mark.parametrize("value", [".inf", "-1", "true"])
def test_dlio_computation_time_refuses_what_is_no_duration(value: str) -> None:
    text = doc(f"[{{name: d, client: 0, workload: dlio, model: bert, computation_time: {value}}}]")
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.computation_time"):
        parse_scenario(text, "t.yaml")


def test_choices_take_the_tools_own_spelling_in_any_case() -> None:
    # IOR is run with -a POSIX / -a MPIIO and h5bench's JSON says "READ_OPTION": "FULL"
    ior = parse_scenario(doc("[{name: i, client: 0, workload: ior, api: MPIIO}]"), "t.yaml").jobs[0].ior
    assert ior is not None
    assert ior.api == "mpiio"
    text = doc("[{name: b, client: 0, workload: h5bench.bdcats, read_option: Partial, to_read_num_particles: 1024}]")
    h5 = parse_scenario(text, "t.yaml").jobs[0].h5bench
    assert h5 is not None
    assert h5.read_option == "partial"
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.api: 'POSIXX' is not a valid IOR api"):
        parse_scenario(doc("[{name: i, client: 0, workload: ior, api: POSIXX}]"), "t.yaml")


def test_dlio_and_h5bench_take_their_own_names_for_our_keys() -> None:
    # dlio_benchmark's dataset section, and h5bench's EMULATED_COMPUTE_TIME_PER_TIMESTEP, as copied
    ours = "[{name: d, client: 0, workload: dlio, files: 8, samples_per_file: 10, sample_size: 100k}]"
    theirs = "[{name: d, client: 0, workload: dlio, num_files_train: 8, num_samples_per_file: 10, record_length: 100k}]"
    assert parse_scenario(doc(theirs), "t.yaml") == parse_scenario(doc(ours), "t.yaml")
    ours = "[{name: v, client: 0, workload: h5bench.vpic, compute_time: 250ms}]"
    theirs = "[{name: v, client: 0, workload: h5bench.vpic, emulated_compute_time_per_timestep: 250 ms}]"
    assert parse_scenario(doc(theirs), "t.yaml") == parse_scenario(doc(ours), "t.yaml")
    # a value error names the key as it was given; a missing key names both spellings
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.record_length: 0 must be larger than zero"):
        parse_scenario(
            doc("[{name: d, client: 0, workload: dlio, files: 1, samples_per_file: 1, record_length: 0}]"), "t.yaml"
        )
    with pytest.raises(ScenarioError, match=r"missing required key 'sample_size' \(or 'record_length'"):
        parse_scenario(doc("[{name: d, client: 0, workload: dlio, files: 8, samples_per_file: 10}]"), "t.yaml")
    with pytest.raises(ScenarioError, match=r"jobs\[0\]: give 'files' or 'num_files_train' \(the same setting\)"):
        parse_scenario(
            doc("[{name: d, client: 0, workload: dlio, model: bert, files: 8, num_files_train: 8}]"), "t.yaml"
        )
    # a tool's name is taken for that tool only
    with pytest.raises(ScenarioError, match=r"unknown key 'record_length'"):
        parse_scenario(doc("[{name: v, client: 0, workload: h5bench.vpic, record_length: 1k}]"), "t.yaml")


def test_h5bench_settings_are_taken_at_the_values_that_give_what_pfsim_models() -> None:
    def h5(workload: str, settings: str) -> object:
        return (
            parse_scenario(doc(f"[{{name: v, client: 0, workload: {workload}, {settings}}}]"), "t.yaml").jobs[0].h5bench
        )

    # h5bench's sample configurations, YAML's NO (false) included: the same job as without them
    plain_vpic, plain_bdcats = h5("h5bench.vpic", "timesteps: 5"), h5("h5bench.bdcats", "timesteps: 5")
    assert h5("h5bench.vpic", "mem_pattern: CONTIG, collective_data: NO, collective_metadata: YES, mode: Sync") == (
        plain_vpic
    )
    assert h5("h5bench.vpic", "file_pattern: INTERLEAVED, mem_pattern: interleaved") == h5(
        "h5bench.vpic", "file_pattern: interleaved"
    )  # h5bench's II mode
    # h5bench_read reads into contiguous buffers, independently, whatever these say
    bdcats = "mem_pattern: INTERLEAVED, collective_data: YES, collective_metadata: 'no', mode: SYNC"
    assert h5("h5bench.bdcats", bdcats) == plain_bdcats
    for workload, setting, message in [
        ("h5bench.vpic", "collective_data: YES", r"collective_data: 'yes': pfsim models NO here \(independent"),
        ("h5bench.vpic", "mem_pattern: interleaved", r"mem_pattern: 'interleaved': pfsim models CONTIG here"),
        (
            "h5bench.vpic",
            "file_pattern: interleaved, mem_pattern: contig",
            r"mem_pattern: 'contig': pfsim models INTERLEAVED",
        ),
        ("h5bench.bdcats", "mode: ASYNC", r"mode: 'ASYNC': pfsim models SYNC here \(no asynchronous"),
        ("h5bench.bdcats", "collective_metadata: 1", r"collective_metadata: 1: pfsim models YES or NO here$"),
    ]:
        with pytest.raises(ScenarioError, match=r"jobs\[0\]\." + message):
            h5(workload, setting)


def test_tunable_values_become_strings() -> None:
    scenario = parse_scenario(
        doc(top="tunables: {osc.checksums: false, osc.max_dirty_mb: 512, llite.max_cached_mb: '4096'}\n"), "t.yaml"
    )
    assert scenario.tunables == {"osc.checksums": "0", "osc.max_dirty_mb": "512", "llite.max_cached_mb": "4096"}


def test_every_declared_tunable_is_accepted() -> None:
    tunables = "{" + ", ".join(f"{name}: 1" for name in TUNABLES) + "}"
    assert len(parse_scenario(doc(top=f"tunables: {tunables}\n"), "t.yaml").tunables) == len(TUNABLES)


#: A value other than Lustre's default for each scenario tunable, and what its file then shows.
_NOT_DEFAULT = {
    "osc.max_pages_per_rpc": ("256", "256"),
    "osc.max_rpcs_in_flight": ("16", "16"),
    "osc.max_dirty_mb": ("64", "64"),
    "osc.short_io_bytes": ("8192", "8192"),
    "osc.checksums": ("0", "0"),
    "osc.checksum_type": ("adler", "[adler]"),
    "osc.grant_shrink_interval": ("600", "600"),
    "osc.idle_timeout": ("10", "10"),
    "osc.resend_count": ("5", "5"),
    "llite.max_read_ahead_mb": ("128", "128"),
    "llite.max_read_ahead_per_file_mb": ("32", "32"),
    "llite.max_read_ahead_whole_mb": ("8", "8"),
    "llite.read_ahead_async_file_threshold_mb": ("16", "16"),
    "llite.read_ahead_range_kb": ("4096", "4096"),
    "llite.max_read_ahead_async_active": ("4", "4"),
    "llite.max_cached_mb": ("4096", "max_cached_mb: 4096"),
    "llite.checksums": ("0", "0"),
    "llite.fast_read": ("0", "0"),
    "llite.statahead_max": ("64", "64"),
    "mdc.max_rpcs_in_flight": ("16", "16"),
    "mdc.max_mod_rpcs_in_flight": ("8", "8"),  # below 16, so only in force if written after it
}


def test_every_scenario_tunable_is_in_force_on_every_device_at_the_start() -> None:
    assert set(_NOT_DEFAULT) == set(TUNABLES)
    tunables = "{" + ", ".join(f"{name}: '{value}'" for name, (value, _) in _NOT_DEFAULT.items()) + "}"
    scenario = parse_scenario(doc(top=f"tunables: {tunables}\n", cluster="{clients: 2}"), "t.yaml")
    engine = Engine(scenario)
    for client in (0, 1):
        names = [p.name for p in engine.list_params(client)]
        for tunable, (_, shown) in _NOT_DEFAULT.items():
            kind, _, param = tunable.partition(".")
            devices = [n for n in names if n.startswith(f"{kind}.") and n.endswith(f".{param}")]
            assert devices, tunable
            for name in devices:
                text = engine.get_param(client, name)
                assert shown in text.split("\n") or shown in text.split(), f"{name}: {text!r}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # unknown keys at every level, with a suggestion
        (doc(top="nmae: x\n"), "scenario.yaml: unknown key 'nmae' (did you mean 'name'?)"),
        (
            doc(f"[{JOB}, {{name: k, client: 0, workload: filebench.seqread, iosze: 1m}}]"),
            "scenario.yaml: jobs[1]: unknown key 'iosze' (did you mean 'iosize'?)",
        ),
        (
            doc(cluster="{preset: cloudlab-c6525, clinets: 2}"),
            "cluster: unknown key 'clinets' (did you mean 'clients'?)",
        ),
        (doc(top="tunables: {osc.max_rpcs_inflight: 8}\n"), "tunables: unknown tunable 'osc.max_rpcs_inflight'"),
        # missing required keys
        ("duration: 10s\njobs: [{JOB}]\n".replace("{JOB}", JOB), "missing required key 'name'"),
        (f"name: t\njobs: [{JOB}]\n", "missing required key 'duration'"),
        ("name: t\nduration: 10s\n", "missing required key 'jobs'"),
        (doc("[{client: 0, workload: filebench.seqread}]"), "jobs[0]: missing required key 'name'"),
        (doc("[{name: j, client: 0}]"), "jobs[0]: missing required key 'workload'"),
        (doc("[{name: j, workload: filebench.seqread}]"), "jobs[0]: give exactly one of 'client: N'"),
        (doc("[{name: j, client: 0, clients: [1], workload: filebench.seqread}]"), "jobs[0]: give exactly one"),
        # bad values
        (doc("[{name: j, client: 0, workload: filebench.seqread, iosize: 5x}]"), "jobs[0].iosize: '5x' is not a size"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, filesize: 0}]"), "jobs[0].filesize"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, iosize: 2m, filesize: 1m}]"), "smaller than iosize"),
        ("name: t\nduration: 320\njobs: [{JOB}]\n".replace("{JOB}", JOB), "duration: 320 is not a duration"),
        (doc(top="probe_interval: 0s\n"), "probe_interval"),
        (doc(top="probe_interval: 1ns\n"), "probe_interval: '1ns' is shorter than the shortest, 1ms"),
        # beyond what pfsim's 64-bit times, sizes and 32-bit counts hold
        (doc(cluster="{net_bandwidth: '0.000001'}"), "cluster.net_bandwidth: '0.000001' is below the smallest"),
        (doc(cluster="{net_latency: 11s}"), "cluster.net_latency: '11s' is above the largest this field takes, 10s"),
        (doc(cluster="{ost_channels: 65536}"), "cluster.ost_channels: 65536 is out of range (expected from 1 to 1024)"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, threads: 4294967296}]"), "jobs[0].threads"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, filesize: 100000p}]"), "jobs[0].filesize"),
        (
            doc("[{name: j, client: 0, workload: ior, transfer: 1m, block: 1p, segments: 2000000}]"),
            "jobs[0]: its file (block x segments (x processes)) would be",
        ),
        (
            doc("[{name: j, client: 0, workload: dlio, files: 16, samples_per_file: 1024p, sample_size: 1}]"),
            "jobs[0]: its dataset (files x samples_per_file x sample_size) would be 18446744073709551616 bytes",
        ),
        (doc(top="seed: -1\n"), "seed: -1 is out of range"),
        (doc("[{name: j, client: 5, workload: filebench.seqread}]"), "jobs[0].client: client 5 is out of range"),
        (doc("[{name: j, clients: [0, 9], workload: filebench.seqread}]"), "jobs[0].clients: client 9 is out of range"),
        (doc("[{name: j, clients: [], workload: filebench.seqread}]"), "jobs[0].clients: expected a non-empty list"),
        (doc("[{name: j, clients: [1, 1], workload: filebench.seqread}]"), "jobs[0].clients: a client is listed twice"),
        (
            doc("[{name: j, client: 0, workload: filebench.randread}]"),
            "jobs[0].workload: unknown workload 'filebench.randread' (did you mean 'filebench.randomread'?)",
        ),
        (doc("[{name: j, client: 0, workload: dlio}]"), "jobs[0]: missing required key 'sample_size'"),
        (
            doc("[{name: j, client: 0, workload: dlio, model: resnet}]"),
            "jobs[0].model: 'resnet' is not a valid DLIO model",
        ),
        (doc("[{name: j, client: 0, workload: dlio, model: bert, format: png}]"), "jobs[0].format"),
        (doc("[{name: j, client: 0, workload: dlio, model: bert, iosize: 1m}]"), "'iosize' applies to filebench.*"),
        (doc("[{name: j, client: 0, workload: h5bench.vpic, read_option: full}]"), "applies to h5bench.bdcats jobs"),
        (doc("[{name: j, client: 0, workload: ior, cached: true}]"), "'cached' applies to filebench.* jobs"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, cached: 3}]"), "jobs[0].cached: expected true"),
        (doc("[{name: j, client: 0, workload: h5bench.vpic, num_dims: 4}]"), "jobs[0].num_dims"),
        (doc("[{name: j, client: 0, workload: h5bench.vpic, dim_2: 8}]"), "jobs[0].dim_2: must be 1 with num_dims: 1"),
        (
            doc("[{name: j, client: 0, workload: h5bench.vpic, num_dims: 3, dim_2: 2, file_pattern: interleaved}]"),
            "jobs[0].file_pattern: interleaved is supported for num_dims 1 and 2 only",
        ),
        (
            doc("[{name: j, client: 0, workload: h5bench.vpic, file_pattern: strided}]"),
            "missing required key 'stride_size'",
        ),
        (
            doc("[{name: j, client: 0, workload: h5bench.bdcats, read_option: partial, to_read_num_particles: 9m}]"),
            "jobs[0].to_read_num_particles",
        ),
        (
            doc(
                "[{name: j, client: 0, workload: h5bench.bdcats, read_option: strided, dim_1: 1k,"
                " stride_size: 64, block_size: 16, block_cnt: 100}]"
            ),
            "jobs[0].block_cnt: (stride_size + block_size) x block_cnt = (64 + 16) x 100 = 8000 is more than dim_1",
        ),
        # h5bench's own bound, (stride + block) x count <= dim_1, is stricter than the blocks':
        # 13 x 64 + 16 = 848 particles of 1024 hold 14 blocks, but 80 x 14 = 1120 > 1024
        (
            doc(
                "[{name: j, client: 0, workload: h5bench.bdcats, read_option: strided, dim_1: 1k,"
                " stride_size: 64, block_size: 16, block_cnt: 14}]"
            ),
            "jobs[0].block_cnt: (stride_size + block_size) x block_cnt = (64 + 16) x 14 = 1120 is more than dim_1"
            " (1024): h5bench refuses it (Invalid hyperslab setting)",
        ),
        (
            doc(
                "[{name: j, client: 0, workload: h5bench.vpic, file_pattern: strided, dim_1: 1k,"
                " stride_size: 64, block_size: 16, block_cnt: 14}]"
            ),
            "jobs[0].block_cnt: (stride_size + block_size) x block_cnt = (64 + 16) x 14 = 1120",
        ),
        # h5bench and DLIO have no fsync option: for their jobs the key is unknown
        (
            doc("[{name: j, client: 0, workload: h5bench.vpic, fsync: true}]"),
            "scenario.yaml: jobs[0]: unknown key 'fsync' for h5bench.vpic jobs (h5bench has no fsync option)",
        ),
        (
            doc("[{name: j, client: 0, workload: h5bench.bdcats, fsync: false}]"),
            "jobs[0]: unknown key 'fsync' for h5bench.bdcats jobs (h5bench has no fsync option)",
        ),
        (
            doc("[{name: j, client: 0, workload: dlio, model: bert, fsync: true}]"),
            "scenario.yaml: jobs[0]: unknown key 'fsync' for dlio jobs (DLIO has no fsync option)",
        ),
        (doc("[{name: j, client: 0, workload: h5bench.bdcats, block_size: 16}]"), "applies only to strided access"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, start: 5s, stop: 5s}]"), "jobs[0].stop"),
        (
            doc("[{name: j, client: 0, workload: filebench.seqread, start: 20s}]"),
            "jobs[0].start: 20s is not before the scenario's end",
        ),
        (  # a stop does not make a job that starts after the end runnable
            doc("[{name: j, client: 0, workload: filebench.seqread, start: 15s, stop: 20s}]"),
            "jobs[0].start: 15s is not before the scenario's end",
        ),
        (doc("[{name: j, client: 0, workload: filebench.seqread, threads: 0}]"), "jobs[0].threads"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, stripe_count: 9}]"), "jobs[0].stripe_count"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, stripe_count: 0}]"), "jobs[0].stripe_count"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, stripe_size: 100k}]"), "jobs[0].stripe_size"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, stripe_size: 4g}]"), "less than 4 GiB"),
        (doc("[{name: j, client: 0, workload: filebench.seqread, fsync: maybe}]"), "jobs[0].fsync"),
        (doc(f"[{JOB}, {JOB}]"), "jobs[1].name: duplicate job name 'j'"),
        (doc("[]"), "jobs: expected a non-empty list"),
        (
            doc("[{name: j, client: 0, workload: filebench.seqread, api: posix}]"),
            "key 'api' applies to ior jobs, not to filebench.seqread",
        ),
        (doc("[{name: j, client: 0, workload: ior, iosize: 1m}]"), "'iosize' does not apply to ior jobs: use transfer"),
        (doc("[{name: j, client: 0, workload: ior, transfer: 3m, block: 4m}]"), "jobs[0].block"),
        (doc("[{name: j, client: 0, workload: ior, api: hdf5}]"), "jobs[0].api"),
        (doc(top="tunables: {osc.max_dirty_mb: 1.5}\n"), "tunables.osc.max_dirty_mb"),
        (doc(cluster="{preset: cloudlab-c6252}"), "cluster.preset: unknown preset 'cloudlab-c6252'"),
        (doc(cluster="{clients: 0}"), "cluster.clients"),
        (doc(cluster="{ost_read_bw: 25Gb/s}"), "cluster.ost_read_bw"),
        (doc(cluster="{ost_kind: nvme}"), "cluster.ost_kind"),
        (doc(cluster="{ost_scheduler: cfq}"), "cluster.ost_scheduler: 'cfq' is not a valid I/O scheduler"),
        (doc(cluster="{ost_scheduler: mq-deadline}"), "cluster.ost_scheduler: the mq-deadline elevator"),
        (doc(cluster="{preset: cloudlab-c220g5, ost_channels: 4}"), "cluster.ost_channels: the mq-deadline elevator"),
        (doc(cluster="{ost_stripe: 2k}"), "cluster.ost_stripe: '2k' is below the smallest this field takes, 4k"),
        (doc(cluster="{oss: 300, osts_per_oss: 300}"), "cluster.osts_per_oss: 300 x 300 OSTs: at most 65535"),
        (doc(cluster='{lustre_version: "2.14.0"}'), "cluster.lustre_version: '2.14.0' is not a Lustre version"),
        (doc(cluster="[1, 2]"), "cluster: expected a mapping"),
        (doc(cluster="{preset: [1]}"), "cluster.preset: unknown preset [1]"),
        # not a scenario at all
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("name: t\nduration: 10s\njobs: [\n  {name: j,\n", "scenario.yaml:"),
        ("name: t\nname: u\nduration: 10s\n", "duplicate key 'name'"),
        ("name: t\n[a, b]: 1\nduration: 10s\n", "scenario.yaml:2: invalid YAML: a key must be a name, not a list"),
        ("name: t\x00\nduration: 10s\n", "invalid YAML: character #x0000 at offset 7 is not allowed"),
        (doc("[{name: j, client: 0, {x: 1}: 2}]"), "invalid YAML: a key must be a name, not a dict"),
    ],
)
def test_invalid_scenarios_name_the_file_and_key(
    write_scenario: Callable[[str], Path], text: str, expected: str
) -> None:
    path = write_scenario(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    message = str(err.value)
    assert message.startswith(str(path)), message
    assert expected in message
    assert "\n" not in message


def test_yaml_merge_keys_work_and_a_key_beside_them_wins(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(
        "name: t\nduration: 10s\njobs:\n"
        "  - &base {name: a, client: 0, workload: filebench.seqread, iosize: 1m}\n"
        "  - {<<: *base, name: b, iosize: 16m}\n"
    )
    jobs = load_scenario(path).jobs
    assert [(job.name, job.iosize, job.workload) for job in jobs] == [
        ("a", 1 << 20, "filebench.seqread"),
        ("b", 16 << 20, "filebench.seqread"),
    ]


def test_yaml_syntax_error_gives_the_line(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario("name: t\nduration: 10s\njobs: [a, b\nfoo: : bar\n")
    with pytest.raises(ScenarioError, match=r"scenario\.yaml:\d+: invalid YAML"):
        load_scenario(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"nothere\.yaml: cannot read"):
        load_scenario(tmp_path / "nothere.yaml")


def test_scenario_errors_are_user_errors() -> None:
    assert issubclass(ScenarioError, UserError)


def test_bad_override_names_the_key() -> None:
    with pytest.raises(ScenarioError, match=r"t\.yaml: tunables: unknown tunable 'osc\.bogus'"):
        parse_scenario(doc(), "t.yaml", {"tunables": {"osc.bogus": 1}})


PHASES = doc(
    "[{name: a, client: 0, workload: filebench.seqwrite, stop: 4s},"
    " {name: b, client: 0, workload: filebench.seqread, start: 4s, stop: 8s},"
    " {name: c, client: 0, workload: filebench.randomread, start: 8s}]"
)


def test_a_shorter_duration_override_drops_the_jobs_after_it_and_stops_the_others_there() -> None:
    scenario = parse_scenario(PHASES, "p.yaml", {"duration": "6s"})
    assert scenario.duration_ns == 6 * 10**9
    assert [(job.name, job.start_ns, job.stop_ns) for job in scenario.jobs] == [
        ("a", 0, 4 * 10**9),
        ("b", 4 * 10**9, 6 * 10**9),
    ]
    longer = parse_scenario(PHASES, "p.yaml", {"duration": "20s"})
    assert [(job.name, job.stop_ns) for job in longer.jobs] == [("a", 4 * 10**9), ("b", 8 * 10**9), ("c", 20 * 10**9)]


def test_a_duration_override_before_every_job_names_the_option() -> None:
    late = doc("[{name: j, client: 0, workload: filebench.seqread, start: 5s}]")
    with pytest.raises(ScenarioError, match=r"^--duration 2s: ends the run of p\.yaml before any of its jobs starts"):
        parse_scenario(late, "p.yaml", {"duration": "2s"})


def test_a_job_after_the_file_s_own_end_stays_the_file_s_mistake() -> None:
    wrong = doc(f"[{JOB}, {{name: k, client: 0, workload: filebench.seqread, start: 15s}}]")
    for overrides in ({}, {"duration": "5s"}, {"duration": "60s"}):
        with pytest.raises(
            ScenarioError, match=r"^p\.yaml: jobs\[1\]\.start: 15s is not before the scenario's end \(10s\)"
        ):
            parse_scenario(wrong, "p.yaml", overrides)


def test_each_workload_says_whether_it_reads_writes_or_both() -> None:
    job = parse_scenario(doc(), "t.yaml").jobs[0]
    read, write, both = frozenset({"read"}), frozenset({"write"}), frozenset({"read", "write"})
    expected = {
        "filebench.seqread": read,
        "filebench.randomread": read,
        "filebench.wholefileread": read,
        "h5bench.bdcats": read,
        "dlio": read,
        "filebench.seqwrite": write,
        "filebench.randomwrite": write,
        "filebench.wholefilewrite": write,
        "h5bench.vpic": write,
        "filebench.randomrw": both,
        "filebench.seqrw": both,
        "filebench.wholefilerw": both,
        "ior": both,  # writes, then reads back
    }
    assert set(expected) == set(WORKLOADS)  # a new workload must be placed here too
    for workload, moves in expected.items():
        assert dataclasses.replace(job, workload=workload).moves == moves, workload
