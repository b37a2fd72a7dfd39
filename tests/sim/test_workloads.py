"""The h5bench and DLIO workloads of the simulator: what they read and write, and when."""

from __future__ import annotations

import pytest

from pfstune.sim.engine import Engine
from pfstune.sim.scenario import parse_scenario

KIB = 1 << 10


def run(jobs: str, duration: str = "3s", seed: int = 1) -> Engine:
    text = f"name: w\nseed: {seed}\nduration: {duration}\ncluster: {{preset: cloudlab-c6525}}\njobs: {jobs}\n"
    engine = Engine(parse_scenario(text, "<test>"))
    engine.run()
    return engine


def test_vpic_writes_every_rank_s_particles_every_timestep_then_ends() -> None:
    # 2 ranks x 8 properties x 64 Ki particles x 4 bytes x 3 timesteps, compute 100 ms between
    engine = run(
        "[{name: v, clients: [0, 1], workload: h5bench.vpic, processes: 2, dim_1: 64k, timesteps: 3,"
        " compute_time: 100ms}]"
    )
    totals = engine.totals()
    assert totals["app_write_bytes"] == 2 * 8 * (64 * KIB) * 4 * 3
    assert totals["app_read_bytes"] == 0


def test_vpic_computes_between_timesteps() -> None:
    # the second timestep waits 1 s of compute after the first; the third would start after 2 s
    engine = run(
        "[{name: v, client: 0, workload: h5bench.vpic, dim_1: 64k, timesteps: 3, compute_time: 1s}]",
        duration="1500ms",
    )
    assert engine.totals()["app_write_bytes"] == 8 * (64 * KIB) * 4 * 2


@pytest.mark.parametrize(
    ("options", "per_timestep"),
    [
        ("read_option: full", 8 * (64 * KIB) * 4),
        ("read_option: partial, to_read_num_particles: 16k", 8 * (16 * KIB) * 4),
        ("read_option: strided, stride_size: 64, block_size: 16, block_cnt: 128", 8 * 128 * 16 * 4),
    ],
)
def test_bdcats_reads_what_its_read_option_selects(options: str, per_timestep: int) -> None:
    engine = run(
        f"[{{name: b, clients: [0, 1], workload: h5bench.bdcats, processes: 2, dim_1: 64k, timesteps: 2,"
        f" compute_time: 10ms, {options}}}]"
    )
    assert engine.totals()["app_read_bytes"] == 2 * 2 * per_timestep


def test_dlio_throughput_is_bounded_by_training_when_compute_dominates() -> None:
    # batches of 4 x 64 KiB; each training step takes 100 ms; the loader is at most 2 batches ahead
    engine = run(
        "[{name: d, client: 0, workload: dlio, format: npz, files: 64, samples_per_file: 8, sample_size: 64k,"
        " batch_size: 4, computation_time: 100ms}]",
        duration="5s",
    )
    batches = engine.totals()["app_read_bytes"] / (4 * 64 * KIB)
    # 50 steps fit in 5 s; the loader also holds the batch in training and two more ready
    assert 48 <= batches <= 53


def test_dlio_without_compute_is_limited_by_the_file_system_only() -> None:
    fast = run(
        "[{name: d, client: 0, workload: dlio, format: npz, files: 64, samples_per_file: 8, sample_size: 64k,"
        " batch_size: 4, computation_time: 0s}]",
        duration="2s",
    ).totals()["app_read_bytes"]
    assert fast / (4 * 64 * KIB) > 2 * 20  # far more than the 20 batches 100 ms steps would allow


def test_dlio_random_formats_read_sample_sized_pieces_at_scattered_offsets() -> None:
    engine = run(
        # its 529 GiB dataset file needs more than one 440 GiB OST, as on DIAL's testbed
        "[{name: d, client: 0, workload: dlio, model: megatron_deepspeed, computation_time: 0s, stripe_count: -1}]",
        duration="1s",
    )
    totals = engine.totals()
    assert totals["app_read_bytes"] > 0
    assert totals["app_read_bytes"] % 2048 == 0
    # whole pages and read-ahead around 2 KiB samples: the OSCs carry more than the application asks
    assert totals["osc_read_bytes"] > totals["app_read_bytes"]


def test_h5bench_and_dlio_runs_are_deterministic() -> None:
    jobs = (
        "[{name: d, client: 0, workload: dlio, model: bert, read_threads: 2, computation_time: 10ms},"
        " {name: v, client: 1, workload: h5bench.vpic, dim_1: 256k, timesteps: 50, compute_time: 50ms}]"
    )
    first, second = run(jobs, duration="1s"), run(jobs, duration="1s")
    assert first.totals() == second.totals()
    assert _bytes_per_osc(first) == _bytes_per_osc(second)
    # another seed shuffles the files otherwise: the same bytes, read from other OSTs
    assert _bytes_per_osc(first) != _bytes_per_osc(run(jobs, duration="1s", seed=2))


def _bytes_per_osc(engine: Engine) -> dict[str, str]:
    """Each OSC's read and write byte counts of client 0 (the lines of its ``stats``)."""
    return {
        param.name: "\n".join(line for line in engine.get_param(0, param.name).splitlines() if "bytes" in line)
        for param in engine.list_params(0)
        if param.name.startswith("osc.") and param.name.endswith(".stats")
    }
