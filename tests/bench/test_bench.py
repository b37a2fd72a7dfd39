"""The benchmark harness: runs, oracle, aggregation, convergence, report, local and Dask executors."""

from __future__ import annotations

import copy
import csv
import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pfstune.bench.harness import (
    convergence,
    phase_measures,
    phase_starts,
    recompute_convergence,
    run_bench,
    summary,
)
from pfstune.bench.report import _most_tuned_osc, write_report
from pfstune.cli.bench import check_out
from pfstune.cli.main import main
from pfstune.errors import UserError
from pfstune.sim.scenario import parse_scenario
from pfstune.sim.sweep import run_scenario

TWO_PHASES = """\
name: two-phases
seed: 1
duration: 2s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 10g}
  - {name: writer, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 10g, start: 1s}
"""


@pytest.fixture
def two_phases(write_scenario: Callable[..., Path]) -> Path:
    return write_scenario(TWO_PHASES, "two-phases.yaml")


def test_phase_starts_are_job_starts_and_stops_inside_the_run() -> None:
    scenario = parse_scenario(TWO_PHASES.replace("start: 1s}", "start: 1s, stop: 1.5s}"), "t.yaml")
    assert phase_starts(scenario) == [0.0, 1.0, 1.5]


def test_convergence_is_the_first_window_at_95_percent_of_the_phase_best_that_holds() -> None:
    times = [0.5 * i for i in range(1, 13)]  # 0.5 .. 6.0 s
    best = [100.0, 200.0]  # the best static configuration of each phase
    tuner = {"time": times, "osc_mbps": [10, 50, 96, 96, 96, 96, 100, 100, 190, 190, 190, 190]}
    # phase 1 (0-3 s): the 1 s window ending at 2.0 s averages 96 >= 95; phase 2 (3-6 s): 190 >= 190 at 5.0 s.
    assert convergence(tuner, best, [0.0, 3.0], 6.0) == [2.0, 2.0]
    never = {"time": times, "osc_mbps": [50.0] * 12}
    assert convergence(never, best, [0.0, 3.0], 6.0) == [None, None]
    assert convergence(never, [0.0, 0.0], [0.0, 3.0], 6.0) == [0.0, 0.0]  # nothing to reach in idle phases


def test_a_lucky_window_that_falls_back_is_not_convergence() -> None:
    times = [0.5 * i for i in range(1, 21)]  # 0.5 .. 10.0 s, one phase
    # a spike at 1.0 s (1 s mean 97.5), back to 90 until 6 s, then 100 for good
    values = [95, 100, 90, 90, 90, 90, 90, 90, 90, 90, 90, 90, 100, 100, 100, 100, 100, 100, 100, 100]
    assert convergence({"time": times, "osc_mbps": values}, [100.0], [0.0], 10.0) == [6.5]
    # the last windows of a phase have less than the hold after them: what is left must hold
    late = [90] * 17 + [100, 100, 100]
    assert convergence({"time": times, "osc_mbps": late}, [100.0], [0.0], 10.0) == [9.0]
    late_spike = [90] * 17 + [100, 90, 90]
    assert convergence({"time": times, "osc_mbps": late_spike}, [100.0], [0.0], 10.0) == [None]


def test_a_phase_s_last_tick_alone_is_not_convergence() -> None:
    times = [0.5 * i for i in range(1, 21)]  # 0.5 .. 10.0 s, one phase
    values = [50.0] * 19 + [200.0]  # one lucky interval at the very end: nothing after it holds
    assert convergence({"time": times, "osc_mbps": values}, [100.0], [0.0], 10.0) == [None]


def test_convergence_counts_whole_nanoseconds_as_the_ticks_do() -> None:
    # 0.1 s probes: tick k is at k * 10^8 ns, k * 10^8 / 10^9 s as a float; 4.4 - 1.4 and
    # 4.4 - 1.0 are not what they should be in floats
    times = [k * 100_000_000 / 1e9 for k in range(1, 81)]
    values = [100.0 if t > 3.45 else 0.0 for t in times]
    # the 1 s window first holds ten intervals at 100 at 4.4 s: 3.0 s after the change at 1.4 s
    assert convergence({"time": times, "osc_mbps": values}, [100.0, 100.0], [0.0, 1.4], 8.0) == [None, 3.0]


def test_a_phase_is_judged_on_what_its_jobs_move() -> None:
    scenario = parse_scenario(
        """\
name: moves
duration: 5s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: r, client: 0, workload: filebench.seqread, stop: 1s}
  - {name: w, client: 0, workload: filebench.seqwrite, start: 1s, stop: 2s}
  - {name: rw, client: 0, workload: filebench.randomrw, start: 2s, stop: 3s}
  - {name: r2, client: 0, workload: filebench.randomread, start: 4s}
  - {name: w2, client: 0, workload: filebench.randomwrite, start: 4.5s}
""",
        "moves.yaml",
    )
    assert phase_starts(scenario) == [0.0, 1.0, 2.0, 3.0, 4.0, 4.5]
    # reads; writes; both; nothing runs; reads; a reader and a writer at once
    assert phase_measures(scenario) == [
        "osc_read_mbps",
        "osc_write_mbps",
        "osc_mbps",
        "osc_mbps",
        "osc_read_mbps",
        "osc_mbps",
    ]


def test_convergence_follows_each_phase_s_measure() -> None:
    times = [0.5 * i for i in range(1, 13)]  # 0.5 .. 6.0 s
    # phase 2 (3-6 s) only reads at 96 while the page cache still sends phase 1's writes: the
    # reads reach the best of reading, whatever the writes add
    series = {
        "time": times,
        "osc_mbps": [100.0] * 6 + [146.0] * 6,
        "osc_read_mbps": [0.0] * 6 + [96.0] * 6,
        "osc_write_mbps": [100.0] * 6 + [50.0] * 6,
    }
    measures = ["osc_write_mbps", "osc_read_mbps"]
    assert convergence(series, [100.0, 100.0], [0.0, 3.0], 6.0, measures) == [0.5, 0.5]
    # judged on both together, a best of 200 (a static run whose cache flushed more) is out of reach
    assert convergence(series, [100.0, 200.0], [0.0, 3.0], 6.0) == [0.5, None]


def test_a_reader_after_a_writer_is_not_credited_with_the_writer_s_flush() -> None:
    scenario = parse_scenario(
        """\
name: flush
seed: 1
duration: 6s
cluster: {preset: cloudlab-c6525, clients: 1}
tunables: {osc.max_pages_per_rpc: 2, osc.max_rpcs_in_flight: 256}
jobs:
  - {name: w, client: 0, workload: filebench.randomwrite, iosize: 8k, filesize: 10g, stop: 5s}
  - {name: r, client: 0, workload: filebench.seqread, iosize: 1m, filesize: 10g, start: 5s}
""",
        "flush.yaml",
    )
    result = run_scenario(scenario, [0.0, 5.0])
    reads, writes = result["phase_osc_read_mbps"], result["phase_osc_write_mbps"]
    assert result["phase_osc_mbps"] == pytest.approx([r + w for r, w in zip(reads, writes, strict=True)])
    assert reads[0] == 0.0
    assert writes[0] > 0.0
    assert reads[1] > 0.0
    assert writes[1] > 0.0  # the writer's pages still go out while the reader reads
    assert phase_measures(scenario) == ["osc_write_mbps", "osc_read_mbps"]  # so phase 2 is judged on reads


def test_static_runs_report_each_phase_and_the_phases_add_up(two_phases: Path) -> None:
    scenario = parse_scenario(two_phases.read_text(), str(two_phases))
    result = run_scenario(scenario, [0.0, 1.0])
    first, second = result["phase_osc_mbps"]
    # 1 s each: the whole run's OSC MB/s is the mean of the two phases
    assert (first + second) / 2 == pytest.approx(result["osc_mbps"])
    assert run_scenario(scenario)["osc_mbps"] == pytest.approx(result["osc_mbps"])


def test_bench_runs_every_tuner_and_seed_and_the_oracle_beats_the_default(two_phases: Path, tmp_path: Path) -> None:
    document = run_bench([str(two_phases)], ["default", "iopathtune", "oracle"], [1, 2], jobs=2)
    (scenario,) = document["scenarios"]
    assert scenario["phase_starts_s"] == [0.0, 1.0]
    assert set(scenario["oracle_configs"]) == {"1", "2"}
    results = scenario["results"]
    assert results["oracle"]["vs_oracle"] == pytest.approx(1.0)
    assert results["default"]["vs_default"] == pytest.approx(1.0)
    assert results["oracle"]["mbps"] >= results["default"]["mbps"]
    assert results["default"]["mbps_min"] <= results["default"]["mbps"] <= results["default"]["mbps_max"]
    assert len(results["default"]["convergence_s"]) == 2
    # each phase has its best static configuration, at least as good there as the whole-run oracle
    phase_best = scenario["phase_best"]["1"]
    assert [set(p["config"]) for p in phase_best] == [{"osc.max_pages_per_rpc", "osc.max_rpcs_in_flight"}] * 2
    assert len(document["runs"]) == 6
    run = document["runs"][0]
    assert len(run["series"]["time"]) == len(run["series"]["osc_mbps"]) == 4  # 2 s at 0.5 s, first probe excluded

    files = write_report(document, tmp_path / "out")
    names = {path.name for path in files}
    assert {"bench.json", "runs.csv", "report.md", "normalised.png", "two-phases-throughput.png"} <= names
    with (tmp_path / "out" / "runs.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 6
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| oracle |" in report
    assert "best of the 99 static dial99 configurations" in report  # says what the yardstick is
    assert f"`{os.path.relpath(two_phases, tmp_path / 'out')}`" in report  # from the report's directory
    assert "two-phases-config.png" in report
    assert "IOR's own bandwidth" not in report  # no IOR job
    assert "it is not measured (-)" not in report  # the oracle ran: convergence is there
    assert "series" not in json.dumps(summary(document))

    # a stored document's convergence can be computed again from its runs, as the bench did
    stale = copy.deepcopy(document)
    for entry in stale["scenarios"][0]["results"].values():
        entry["convergence_s"] = [-1.0, -1.0]
    assert recompute_convergence(stale)["scenarios"] == document["scenarios"]
    # phase 1 reads, phase 2 reads and writes; each phase's best says what it was chosen by
    assert [p["measure"] for p in phase_best] == ["osc_read_mbps", "osc_mbps"]
    assert {"osc_mbps", "osc_read_mbps", "osc_write_mbps"} <= set(run["series"])
    # runs recorded before the read and write series keep the convergence they were stored with
    old = copy.deepcopy(stale)
    for r in old["runs"]:
        del r["series"]["osc_read_mbps"], r["series"]["osc_write_mbps"]
    assert recompute_convergence(old)["scenarios"] == stale["scenarios"]


def test_ior_scenarios_report_ior_s_own_bandwidth(write_scenario: Callable[..., Path], tmp_path: Path) -> None:
    ior = write_scenario(
        "name: ior\nseed: 1\nduration: 2s\ncluster: {preset: cloudlab-c6525, clients: 1}\njobs:\n"
        "  - {name: ranks, client: 0, workload: ior, processes: 2, transfer: 1m, block: 32m, fsync: true}\n",
        "ior.yaml",
    )
    document = run_bench([str(ior)], ["default", "iopathtune"], [1, 2], jobs=1)
    (scenario,) = document["scenarios"]
    for tuner, entry in scenario["results"].items():
        runs = [r for r in document["runs"] if r["tuner"] == tuner]
        phases = [bw for r in runs for bw in r["ior"]["ranks"]["write_mibps"]]
        assert entry["ior"]["write_phases"] == len(phases) > 0
        assert entry["ior"]["write_mibps"] == pytest.approx(sum(phases) / len(phases))
    write_report(document, tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "IOR's own bandwidth" in report
    assert f"| default | {scenario['results']['default']['ior']['write_mibps']:.1f} |" in report
    assert "without `oracle` among `--tuners` it is not measured" in report  # why the column shows -


def test_h5bench_scenarios_report_h5bench_s_observed_rate(write_scenario: Callable[..., Path], tmp_path: Path) -> None:
    vpic = write_scenario(
        "name: h5\nseed: 1\nduration: 1s\ncluster: {preset: cloudlab-c6525, clients: 1}\njobs:\n"
        "  - {name: vpic, clients: [0], workload: h5bench.vpic, processes: 2, dim_1: 1m, timesteps: 50,"
        " compute_time: 100ms}\n",
        "h5.yaml",
    )
    document = run_bench([str(vpic)], ["default", "iopathtune"], [1, 2], jobs=1)
    (scenario,) = document["scenarios"]
    for tuner, entry in scenario["results"].items():
        runs = [r["h5bench"]["vpic"] for r in document["runs"] if r["tuner"] == tuner]
        assert entry["h5bench"]["timesteps"] == sum(r["timesteps"] for r in runs) > 0
        rates = [r["observed_mibps"] for r in runs]
        assert entry["h5bench"]["observed_mibps"] == pytest.approx(sum(rates) / len(rates))
    write_report(document, tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "h5bench's observed rate" in report
    assert f"| default | {scenario['results']['default']['h5bench']['observed_mibps']:.1f} |" in report


def test_h5bench_means_leave_out_runs_that_finished_no_timestep() -> None:
    from pfstune.bench.harness import _h5bench_means

    runs = [
        {"h5bench": {"vpic": {"timesteps": 3, "observed_mibps": 300.0}}},
        {"h5bench": {"vpic": {"timesteps": 0, "observed_mibps": None}}},
        {"h5bench": {"vpic": {"timesteps": 1, "observed_mibps": 100.0}}},
    ]
    assert _h5bench_means(runs) == {"observed_mibps": 200.0, "timesteps": 4}
    assert _h5bench_means(runs[1:2]) == {"observed_mibps": None, "timesteps": 0}


def test_dlio_means_and_report_table(tmp_path: Path, write_scenario: Callable[..., Path]) -> None:
    from pfstune.bench.harness import _dlio_means

    runs = [
        {"dlio": {"d": {"samples_per_second": 100.0, "io_mibps": 6.0, "au_percent": 90.0}}},
        {"dlio": {"d": {"samples_per_second": None, "io_mibps": None, "au_percent": None}}},
        {"dlio": {"d": {"samples_per_second": 200.0, "io_mibps": 12.0, "au_percent": 70.0}}},
    ]
    assert _dlio_means(runs) == {"samples_per_second": 150.0, "io_mibps": 9.0, "au_percent": 80.0}
    assert _dlio_means(runs[1:2]) == {"samples_per_second": None, "io_mibps": None, "au_percent": None}
    path = write_scenario(
        "name: d\nseed: 1\nduration: 1s\ncluster: {preset: cloudlab-c6525, clients: 1}\njobs:\n"
        "  - {name: loaders, clients: [0], workload: dlio, format: indexed_binary, files: 2,"
        " samples_per_file: 64, sample_size: 64k, batch_size: 4, computation_time: 50ms}\n",
        "d.yaml",
    )
    document = run_bench([str(path)], ["default"], [1], jobs=1)
    (scenario,) = document["scenarios"]
    figures = scenario["results"]["default"]["dlio"]
    (run,) = document["runs"]
    assert figures == pytest.approx(run["dlio"]["loaders"])
    write_report(document, tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "DLIO's own figures" in report
    cells = [f"{figures[key]:.1f}" for key in ("samples_per_second", "io_mibps", "au_percent")]
    assert f"| default | {' | '.join(cells)} |" in report


def test_bench_on_a_dask_cluster(two_phases: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        document = run_bench([str(two_phases)], ["default", "bandit"], [3], scheduler=cluster.scheduler_address)
    local = run_bench([str(two_phases)], ["default", "bandit"], [3], jobs=1)
    for tuner in ("default", "bandit"):
        dask_mbps = document["scenarios"][0]["results"][tuner]["mbps"]
        assert dask_mbps == local["scenarios"][0]["results"][tuner]["mbps"]  # deterministic wherever it runs


def test_unreachable_scheduler_is_a_user_error(two_phases: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr("pfstune.executor.CONNECT_TIMEOUT_S", 1)
    with pytest.raises(UserError, match="cannot connect"):
        run_bench([str(two_phases)], ["default"], [1], scheduler="tcp://127.0.0.1:9")


def test_two_scenarios_of_one_name_are_refused_before_running(two_phases: Path, tmp_path: Path) -> None:
    copy_of_it = tmp_path / "again.yaml"
    copy_of_it.write_text(two_phases.read_text())
    for paths in ([two_phases, two_phases], [two_phases, copy_of_it]):
        with pytest.raises(UserError, match=r"are both scenario 'two-phases': the report names"):
            run_bench([str(p) for p in paths], ["default"], [1], jobs=1)
    # names that differ but would share plot files
    spaced = tmp_path / "spaced.yaml"
    spaced.write_text(two_phases.read_text().replace("name: two-phases", "name: two phases"))
    underscored = tmp_path / "underscored.yaml"
    underscored.write_text(two_phases.read_text().replace("name: two-phases", "name: two_phases"))
    with pytest.raises(UserError, match=r"name scenarios 'two phases' and 'two_phases'.*two_phases-\*\.png"):
        run_bench([str(spaced), str(underscored)], ["default"], [1], jobs=1)


def test_cli_errors(two_phases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", str(two_phases), "--tuners", "default,nope"])
    assert exit_.value.code == 2
    assert main(["bench", str(two_phases), "--tuners", "default", "--tuner-option", "dial:tau=0.5"]) == 2
    assert "not among --tuners" in capsys.readouterr().err
    assert main(["bench", str(two_phases), "--tuners", "iopathtune", "--tuner-option", "iopathtune:nope=1"]) == 2
    assert "unknown option" in capsys.readouterr().err
    for seeds, message in [
        ("1,1", "'1,1' is not a list of distinct non-negative"),
        ("1,-2", "seed -2 is not between"),
        (str(2**64), f"seed {2**64} is not between"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(["bench", str(two_phases), "--tuners", "default", "--seeds", seeds])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err  # one line, naming the option rather than the scenario file
        assert f"argument --seeds: {message}" in err, err
    (tmp_path / "file").write_text("")
    assert main(["bench", str(two_phases), "--tuners", "default", "--out", str(tmp_path / "file")]) == 2
    capsys.readouterr()
    # refused before any run, and leaving no empty report directory behind
    assert main(["bench", str(tmp_path / "typo.yaml"), "--tuners", "default", "--out", str(tmp_path / "r" / "o")]) == 2
    assert "typo.yaml: cannot read the scenario" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_oracle_options_are_refused_before_the_report_directory_is_made(
    two_phases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    for option in ("oracle:max_pages_per_rpc=16", "oracle:foo=bar"):
        argv = ["bench", str(two_phases), "--tuners", "default,oracle", "--tuner-option", option, "--out", str(out)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "the bench's oracle takes no options" in err
    assert not out.exists()


def test_the_oracle_sweeps_only_what_a_cluster_of_small_rpcs_accepts(write_scenario: Callable[..., Path]) -> None:
    path = write_scenario(
        "name: small-rpcs\nduration: 0.5s\ncluster: {preset: cloudlab-c6525, clients: 1, brw_size: 1m}\n"
        "jobs: [{name: r, client: 0, workload: filebench.randomread, iosize: 1m, filesize: 1g}]\n",
        "small-rpcs.yaml",
    )
    document = run_bench([str(path)], ["oracle"], [1], jobs=2)
    (scenario,) = document["scenarios"]
    assert scenario["oracle_configs"]["1"]["osc.max_pages_per_rpc"] <= 256  # 1 MiB of 4 KiB pages
    assert len(scenario["phase_best"]["1"]) == 1
    assert scenario["results"]["oracle"]["mbps"] > 0


def test_a_report_that_cannot_be_written_leaves_the_earlier_one_and_shows_the_results(
    two_phases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report"
    args = ["bench", str(two_phases), "--tuners", "default", "--duration", "1.5s", "--out", str(out), "--json"]
    assert main(args) == 0
    capsys.readouterr()
    before = {path.name: path.read_bytes() for path in out.iterdir()}

    def disk_full(*_: object, **__: object) -> str:  # after bench.json and runs.csv are written
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("pfstune.bench.report.markdown", disk_full)
    assert main([*args[:3], "default,iopathtune", *args[4:]]) == 2
    printed = capsys.readouterr()
    assert set(json.loads(printed.out)["scenarios"][0]["results"]) == {"default", "iopathtune"}  # shown, not lost
    assert printed.err.strip().splitlines()[-1].startswith(f"pfstune: error: --out {out}: cannot write the report: ")
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before  # whole, and no partial file


def test_cli_json(two_phases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    args = ["bench", str(two_phases), "--tuners", "default,iopathtune", "--duration", "1.5s", "--out", str(out)]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in result["scenarios"]] == ["two-phases"]
    assert set(result["scenarios"][0]["results"]) == {"default", "iopathtune"}
    assert (out / "report.md").exists()


def test_the_configuration_plot_shows_the_osc_the_tuners_changed_most() -> None:
    flat = {"max_pages_per_rpc": [1024] * 4, "max_rpcs_in_flight": [8] * 4}
    tuned = {"max_pages_per_rpc": [1024, 256, 256, 64], "max_rpcs_in_flight": [8, 8, 32, 32]}
    runs = {
        "default": {"trajectories": {"writer": flat, "reader": flat}},
        "dial": {"trajectories": {"writer": flat, "reader": tuned}},
    }
    assert _most_tuned_osc(runs) == "reader"  # not the busiest, which nobody tuned
    assert _most_tuned_osc({"default": {"trajectories": {"writer": flat, "reader": flat}}}) == "writer"
    assert _most_tuned_osc({"default": {"trajectories": {}}}) is None


def test_a_report_directory_in_use_is_named_before_it_is_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_out(tmp_path / "new")
    assert capsys.readouterr().err == ""
    (tmp_path / "new" / "bench.json").write_text("{}")
    check_out(tmp_path / "new")
    assert "holds a report already" in capsys.readouterr().err


def test_progress_knows_the_whole_count_before_the_first_run_ends(two_phases: Path) -> None:
    calls: list[tuple[int, int]] = []
    run_bench([str(two_phases)], ["default", "bandit"], [1, 2], jobs=1, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 4)  # the bar's first draw: 2 tuners x 2 seeds, nothing done yet
    assert calls[1:] == [(i, 4) for i in range(1, 5)]
