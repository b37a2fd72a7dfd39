"""Tests of the wrapper around the compiled core (pfstune._pfsim, built by `pip install .`)."""

from __future__ import annotations

import errno
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pfstune.errors import ScenarioError, UserError
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario, parse_scenario
from tests.conftest import SMALL_SCENARIO

RESULT_KEYS = {
    "scenario", "sim_seconds", "wall_seconds", "events", "mbps", "read_mbps", "write_mbps", "osc_mbps",
    "events_per_second", "speedup",
}  # fmt: skip


def snapshot(engine: Engine) -> dict[str, str]:
    """The text of every parameter of every client."""
    return {
        f"{client}:{param.name}": engine.get_param(client, param.name)
        for client in range(len(engine.clients()))
        for param in engine.list_params(client)
    }


def test_same_scenario_and_seed_give_the_same_bytes(small_scenario: Path) -> None:
    runs = []
    for _ in range(2):
        engine = Engine(load_scenario(small_scenario))
        engine.run()
        runs.append((engine.totals(), snapshot(engine)))
    assert runs[0] == runs[1]


def test_run_advances_in_probe_intervals(small_scenario: Path) -> None:
    engine = Engine(load_scenario(small_scenario))
    seen: list[tuple[int, int]] = []
    engine.run(until_ns=1_200_000_000, progress=lambda now, end: seen.append((now, end)))
    assert seen == [(500_000_000, 1_200_000_000), (1_000_000_000, 1_200_000_000), (1_200_000_000, 1_200_000_000)]
    assert engine.now_ns == 1_200_000_000
    engine.run()
    assert engine.now_ns == 2_000_000_000
    assert engine.events > 0


def test_clients_and_their_parameter_files(small_scenario: Path) -> None:
    engine = Engine(load_scenario(small_scenario))
    (client,) = engine.clients()
    assert client["index"] == 0
    assert client["hostname"] == "client0"
    assert len(client["osc"]) == 8  # cloudlab-c6525: 4 OSS x 2 OSTs
    params = engine.list_params(0)
    names = {p.name for p in params}
    for osc in client["osc"]:
        assert f"osc.{osc}.max_rpcs_in_flight" in names
        assert f"osc.{osc}.rpc_stats" in names
    roots = ("sys/fs/lustre/", "proc/fs/lustre/", "sys/kernel/debug/lustre/")
    assert all(p.path.startswith(roots) for p in params)
    by_name = {p.name: p for p in params}
    osc = client["osc"][0]
    assert by_name[f"osc.{osc}.max_rpcs_in_flight"].path == f"sys/fs/lustre/osc/{osc}/max_rpcs_in_flight"
    assert by_name[f"osc.{osc}.max_rpcs_in_flight"].writable
    assert not by_name[f"osc.{osc}.cur_dirty_bytes"].writable
    assert engine.get_param(0, f"osc.{osc}.max_rpcs_in_flight") == "8\n"


def test_set_all_writes_every_osc_of_every_client(write_scenario: Callable[[str], Path]) -> None:
    engine = Engine(load_scenario(write_scenario(SMALL_SCENARIO.replace("clients: 1", "clients: 2"))))
    assert engine.set_all("osc.max_rpcs_in_flight", "32") == 2 * 8
    for client in engine.clients():
        for osc in client["osc"]:
            assert engine.get_param(client["index"], f"osc.{osc}.max_rpcs_in_flight") == "32\n"


def test_set_all_on_some_clients_leaves_the_others(write_scenario: Callable[[str], Path]) -> None:
    engine = Engine(load_scenario(write_scenario(SMALL_SCENARIO.replace("clients: 1", "clients: 2"))))
    assert engine.set_all("osc.max_rpcs_in_flight", "32", clients=[1]) == 8
    for client in engine.clients():
        expected = "32\n" if client["index"] == 1 else "8\n"
        for osc in client["osc"]:
            assert engine.get_param(client["index"], f"osc.{osc}.max_rpcs_in_flight") == expected


def test_set_all_with_no_match_is_a_user_error(small_scenario: Path) -> None:
    with pytest.raises(UserError, match=re.escape("osc.*.no_such_param")):
        Engine(load_scenario(small_scenario)).set_all("osc.no_such_param", "1")


def test_set_param_refuses_out_of_range_values_like_the_kernel(small_scenario: Path) -> None:
    engine = Engine(load_scenario(small_scenario))
    name = f"osc.{engine.clients()[0]['osc'][0]}.max_rpcs_in_flight"
    with pytest.raises(OSError) as err:  # noqa: PT011 - the errno is checked below
        engine.set_param(0, name, "0")
    assert err.value.errno == errno.ERANGE
    assert engine.get_param(0, name) == "8\n"


def test_scenario_tunables_are_applied_at_the_start(small_scenario: Path) -> None:
    engine = Engine(load_scenario(small_scenario, {"tunables": {"osc.max_pages_per_rpc": 256}}))
    for osc in engine.clients()[0]["osc"]:
        assert engine.get_param(0, f"osc.{osc}.max_pages_per_rpc") == "256\n"


def test_refused_scenario_tunable_names_the_tunable_and_file(small_scenario: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        Engine(load_scenario(small_scenario, {"tunables": {"osc.max_rpcs_in_flight": 0}}))
    message = str(err.value)
    assert "small.yaml" in message
    assert "osc.max_rpcs_in_flight" in message
    assert "\n" not in message


def test_result(small_scenario: Path) -> None:
    engine = Engine(load_scenario(small_scenario))
    engine.run()
    result = engine.result()
    assert set(result) == RESULT_KEYS
    totals = engine.totals()
    assert result["scenario"] == "small"
    assert result["sim_seconds"] == pytest.approx(2.0)
    assert result["events"] == totals["events"] > 0
    assert result["mbps"] == pytest.approx((totals["app_read_bytes"] + totals["app_write_bytes"]) / 2.0 / 1e6)
    assert result["osc_mbps"] == pytest.approx((totals["osc_read_bytes"] + totals["osc_write_bytes"]) / 2.0 / 1e6)
    assert result["read_mbps"] > 0  # the small scenario reads
    assert result["write_mbps"] == 0
    assert result["wall_seconds"] > 0


def test_ior_jobs_report_ior_s_own_bandwidth_of_each_finished_phase() -> None:
    text = (
        "name: i\nseed: 1\nduration: 4s\ncluster: {preset: cloudlab-c6525}\njobs:\n"
        "  - {name: ranks, clients: [0], workload: ior, processes: 2, transfer: 1m, block: 64m, fsync: true}\n"
    )
    scenario = parse_scenario(text, "<test>")
    engine = Engine(scenario)
    first_read_ns = None
    while engine.now_ns < scenario.duration_ns:  # probe-interval steps: when do the first reads come?
        engine.run(until_ns=engine.now_ns + scenario.probe_interval_ns)
        if first_read_ns is None and engine.totals()["app_read_bytes"] > 0:
            first_read_ns = engine.now_ns
    result = engine.result()
    assert set(result) == RESULT_KEYS | {"ior"}
    ior = result["ior"]["ranks"]
    phase = 2 * 64 * 2**20  # bytes of a phase: block x segments x processes
    writes, reads = ior["write_mibps"], ior["read_mibps"]
    assert len(writes) >= 2  # a 4 s run finishes more than one repetition
    assert len(reads) >= 1
    assert len(writes) - 1 <= len(reads) <= len(writes)
    # the phases' times add up to no more than the run
    assert sum(phase / 2**20 / bw for bw in writes + reads) <= 4.0
    # the first read phase starts when the first write phase (with its fsync) ends
    assert first_read_ns is not None
    first_write_s = phase / 2**20 / writes[0]
    assert first_read_ns / 1e9 - scenario.probe_interval_ns / 1e9 <= first_write_s <= first_read_ns / 1e9
    # finished phases moved whole phases of bytes; an unfinished one, part of one
    totals = engine.totals()
    assert len(reads) * phase <= totals["app_read_bytes"] < (len(reads) + 1) * phase
    assert len(writes) * phase <= totals["app_write_bytes"] <= (len(writes) + 1) * phase


def _vpic(compute: str, duration: str = "4s") -> dict[str, Any]:
    text = (
        f"name: v\nseed: 1\nduration: {duration}\ncluster: {{preset: cloudlab-c6525}}\njobs:\n"
        f"  - {{name: vpic, clients: [0], workload: h5bench.vpic, processes: 2, dim_1: 1m, timesteps: 100,"
        f" compute_time: {compute}, stripe_count: 1}}\n"
    )
    engine = Engine(parse_scenario(text, "<test>"))
    engine.run()
    return engine.result()


def test_h5bench_jobs_report_h5bench_s_observed_rate() -> None:
    step = 2 * 2**20 * 32  # bytes of a timestep: ranks x particles x 8 properties of 4 bytes
    result = _vpic("250ms")
    assert set(result) == RESULT_KEYS | {"h5bench"}
    h5 = result["h5bench"]["vpic"]
    steps, rate = h5["timesteps"], h5["observed_mibps"]
    # whole timesteps: the finished ones moved their bytes, the next one not all of its own
    written = result["write_mbps"] * 1e6 * 4.0
    assert steps * step <= written < (steps + 1) * step
    # the compute time between them is not counted: their I/O took what is left of the run
    io_seconds = steps * step / 2**20 / rate
    assert io_seconds + (steps - 1) * 0.25 <= 4.0
    # without compute time the application's MB/s is the observed rate; with it, it falls,
    # while h5bench's figure does not
    alone = _vpic("0s")
    assert alone["h5bench"]["vpic"]["observed_mibps"] * 2**20 == pytest.approx(alone["write_mbps"] * 1e6, rel=0.05)
    assert result["write_mbps"] < 0.7 * alone["write_mbps"]
    assert rate >= 0.8 * alone["h5bench"]["vpic"]["observed_mibps"]
    # before every rank has finished a timestep there is no figure
    early = _vpic("0s", duration="1ms")["h5bench"]["vpic"]
    assert early == {"timesteps": 0, "observed_mibps": None}


def _dlio(computation: str) -> dict[str, Any]:
    text = (
        "name: d\nseed: 1\nduration: 3s\ncluster: {preset: cloudlab-c6525, clients: 2}\njobs:\n"
        "  - {name: loaders, clients: [0, 1], workload: dlio, format: indexed_binary, files: 4,"
        " samples_per_file: 1024, sample_size: 64k, batch_size: 8, read_threads: 2,"
        f" computation_time: {computation}}}\n"
    )
    engine = Engine(parse_scenario(text, "<test>"))
    engine.run()
    return engine.result()


def test_dlio_jobs_report_dlio_s_throughput_and_accelerator_utilisation() -> None:
    # training-bound: two ranks, a step of 8 samples every 100 ms each
    slow = _dlio("100ms")
    assert set(slow) == RESULT_KEYS | {"dlio"}
    dlio = slow["dlio"]["loaders"]
    assert 0.9 * 160 <= dlio["samples_per_second"] <= 160  # at most 2 x 8 / 0.1 s
    assert 90 <= dlio["au_percent"] <= 100
    assert dlio["io_mibps"] == pytest.approx(dlio["samples_per_second"] * 65536 / 2**20)
    # without training time the accelerator idles and the samples come as fast as they are read
    fast = _dlio("0s")["dlio"]["loaders"]
    assert fast["au_percent"] == 0
    assert fast["io_mibps"] * 2**20 == pytest.approx(_dlio("0s")["read_mbps"] * 1e6, rel=0.05)


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).parents[2] / ".." / "shared" / "scenarios").glob("*.yaml"))
    + sorted((Path(__file__).parents[2] / "scenarios").rglob("*.yaml")),
    ids=lambda p: p.stem,
)
def test_every_example_scenario_runs(path: Path) -> None:
    """Each shared and repository scenario simulates a little without error, moving data."""
    # 300 ms past the last job start, so that every job runs
    last_start_ms = max(job.start_ns for job in load_scenario(path).jobs) // 1_000_000
    overrides = {"duration": f"{last_start_ms + 300}ms"}
    engine = Engine(load_scenario(path, overrides))
    engine.run()
    result = engine.result()
    assert result["sim_seconds"] == pytest.approx(last_start_ms / 1000 + 0.3)
    assert result["events"] > 0
    assert result["mbps"] > 0
    engine.check_invariants()
