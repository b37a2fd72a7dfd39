"""The command line: help, errors, and the JSON contracts of `sim run`, `sim sweep`, `sim presets`."""

from __future__ import annotations

import importlib.abc
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pfstune import __version__
from pfstune.cli import run
from pfstune.cli.main import attach_negative_values, main
from pfstune.cli.sim_run import format_speedup
from pfstune.sim.presets import PRESETS
from tests.conftest import SMALL_SCENARIO


def pfstune(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m pfstune ARGS` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "pfstune", *args], capture_output=True, text=True, timeout=60, check=False
    )


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    """Run `pfstune ARGS` in-process and parse its JSON output."""
    assert main(list(args)) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_version() -> None:
    result = pfstune("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"pfstune {__version__}"


@pytest.mark.parametrize(
    "command",
    [[], ["sim"], ["sim", "run"], ["sim", "sweep"], ["sim", "serve"], ["sim", "presets"], ["demo"]],
)
def test_every_help_has_a_description(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pfstune")
    description = out.split("\n\n")[1]
    assert len(description.split()) >= 5, out


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        ([], "pfstune"),
        (["sim"], "pfstune sim"),
        (["sim", "run", "x.yaml", "--duration", "5"], "pfstune sim run"),
        (["bench", "x.yaml", "--tuners", "default,nope"], "pfstune bench"),
        (["train", "x.parquet", "--out", "m", "--seed", "-1"], "pfstune train"),
        (["overhead", "--oscs", "abc"], "pfstune overhead"),
        (["sim", "run", "x.yaml", "--seed", "-1"], "pfstune sim run"),
        (["bench", "x.yaml", "--duration", "0s"], "pfstune bench"),
        (["overhead", "--oscs", "0"], "pfstune overhead"),
        (["overhead", "--repeat", "0"], "pfstune overhead"),
        (["sim", "sweep", "x.yaml", "--grid", "dial99", "--param", "osc.max_rpcs_in_flight=1"], "pfstune sim sweep"),
        (["bench", "x.yaml", "--out", ""], "pfstune bench"),
        (["replay", "x.parquet", "--tuner", "default", "--out", ""], "pfstune replay"),
        (["sim", "serve", "x.yaml", "--root", "r", "--speed", "1e308"], "pfstune sim serve"),
        (["agent", "--no-such-flag"], "pfstune agent"),
        (["sim", "run", "x.yaml", "--bogus"], "pfstune sim run"),
    ],
)
def test_command_line_mistakes_are_one_line(argv: list[str], command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"{command}: error: "), err
    assert err.rstrip().endswith(f"(see '{command} --help')"), err


def test_bad_scenario_is_one_line_without_traceback(write_scenario: Callable[[str], Path]) -> None:
    path = write_scenario(
        "name: t\nduration: 10s\njobs:\n  - {name: a, client: 0, workload: filebench.seqread}\n"
        "  - {name: b, client: 0, workload: filebench.seqread, iosze: 1m}\n"
    )
    result = pfstune("sim", "run", str(path), "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"pfstune: error: {path}: jobs[1]: unknown key 'iosze' (did you mean 'iosize'?)\n"


def test_missing_scenario_file_is_a_user_error(tmp_path: Path) -> None:
    result = pfstune("sim", "run", str(tmp_path / "nothere.yaml"))
    assert result.returncode == 2
    assert result.stderr.startswith("pfstune: error: ")
    assert "Traceback" not in result.stderr


def test_a_tuned_run_s_wall_time_counts_the_agent(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "sim", "run", str(small_scenario), "--tuner", "iopathtune", "--json")
    assert isinstance(result["wall_seconds"], float)
    assert isinstance(result["sim_wall_seconds"], float)
    assert 0 < result["sim_wall_seconds"] <= result["wall_seconds"]
    assert result["speedup"] == pytest.approx(result["sim_seconds"] / result["wall_seconds"])  # type: ignore[operator]


def test_unknown_tuner(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "run", str(small_scenario), "--tuner", "nope"]) == 2
    assert (
        capsys.readouterr().err
        == "pfstune: error: unknown tuner 'nope'; known: bandit, bayesopt, default, dial, iopathtune, oracle, random\n"
    )


def test_unknown_tunable_in_set(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sim", "run", str(small_scenario), "--set", "osc.max_rpc=8"])
    assert exit_.value.code == 2
    assert "unknown tunable 'osc.max_rpc'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--duration", "-1s"], "argument --duration: '-1s' is not a duration"),
        (["--seed", "-3"], "argument --seed: -3 is not between 0 and"),
    ],
)
def test_a_negative_value_gets_its_options_own_error(
    small_scenario: Path, option: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not argparse's "expected one argument", which would send the user looking for a missing value."""
    try:
        status = main(["sim", "run", str(small_scenario), *option])
    except SystemExit as exit_:
        status = int(str(exit_.code))
    assert status == 2
    err = capsys.readouterr().err
    assert message in err
    assert "expected one argument" not in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--duration", "-1s"], ["--duration=-1s"]),
        (["--seed", "-.5"], ["--seed=-.5"]),
        (["--json", "-"], ["--json", "-"]),  # `lustre parse -` reads standard input
        (["--duration=-1s"], ["--duration=-1s"]),
        (["-h"], ["-h"]),
        (["--set", "osc.max_dirty_mb=-1"], ["--set", "osc.max_dirty_mb=-1"]),
    ],
)
def test_only_negative_looking_values_are_attached(argv: list[str], expected: list[str]) -> None:
    assert attach_negative_values(argv) == expected


def test_sim_run_json(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "sim", "run", str(small_scenario), "--json", "--duration", "1s", "--seed", "3")
    assert {"scenario", "sim_seconds", "wall_seconds", "events", "mbps", "read_mbps", "write_mbps", "osc_mbps"} <= set(
        result
    )
    assert result["scenario"] == "small"
    assert result["sim_seconds"] == pytest.approx(1.0)


def test_sim_run_refused_value_in_set_names_the_command_line(
    small_scenario: Path, write_scenario: Callable[[str, str], Path]
) -> None:
    result = pfstune("sim", "run", str(small_scenario), "--set", "osc.max_rpcs_in_flight=0")
    assert result.returncode == 2
    assert result.stderr.startswith("pfstune: error: tunable osc.max_rpcs_in_flight=0: ")
    assert result.stderr.endswith(f" (given on the command line, not in {small_scenario})\n")
    assert result.stderr.count("\n") == 1
    # the same value in the file is the file's
    in_file = write_scenario(SMALL_SCENARIO.replace("jobs:", "tunables: {osc.max_rpcs_in_flight: 0}\njobs:"), "t.yaml")
    result = pfstune("sim", "run", str(in_file))
    assert result.stderr.startswith(f"pfstune: error: {in_file}: tunable osc.max_rpcs_in_flight=0: ")


@pytest.mark.parametrize(
    ("speedup", "text"), [(0.7612, "0.761x"), (0.999, "0.999x"), (1.034, "1.03x"), (36.27, "36.3x"), (1234.4, "1234x")]
)
def test_sim_run_table_speedup_is_not_rounded_to_real_time(speedup: float, text: str) -> None:
    assert format_speedup(speedup) == text


def test_sim_run_table(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "run", str(small_scenario), "--duration", "1s"]) == 0
    out = capsys.readouterr().out
    assert "small" in out
    assert "MB/s" in out


def test_sim_run_table_shows_ior_s_phases(
    write_scenario: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(
        "name: ior\nseed: 1\nduration: 1s\ncluster: {preset: cloudlab-c6525, clients: 1}\njobs:\n"
        "  - {name: ranks, client: 0, workload: ior, processes: 2, transfer: 1m, block: 32m, fsync: true}\n",
        "ior.yaml",
    )
    assert main(["sim", "run", str(path), "--json"]) == 0
    ior = json.loads(capsys.readouterr().out)["ior"]["ranks"]
    assert ior["write_mibps"]  # a 64 MiB write phase ends within the second
    assert main(["sim", "run", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"IOR ranks write +{ior['write_mibps'][0]:.0f}\b", out)
    assert "IOR ranks read" in out


def test_sim_run_table_shows_h5bench_s_observed_rate(
    write_scenario: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(
        "name: h5\nseed: 1\nduration: 1s\ncluster: {preset: cloudlab-c6525, clients: 1}\njobs:\n"
        "  - {name: vpic, clients: [0], workload: h5bench.vpic, processes: 2, dim_1: 1m, timesteps: 50,"
        " compute_time: 100ms}\n",
        "h5.yaml",
    )
    assert main(["sim", "run", str(path), "--json"]) == 0
    h5 = json.loads(capsys.readouterr().out)["h5bench"]["vpic"]
    assert h5["timesteps"] > 0
    assert main(["sim", "run", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"h5bench vpic observed +{h5['observed_mibps']:.1f} MiB/s over {h5['timesteps']} timesteps", out)


def test_sim_run_table_shows_dlio_s_training_figures(
    write_scenario: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(
        "name: d\nseed: 1\nduration: 1s\ncluster: {preset: cloudlab-c6525, clients: 1}\njobs:\n"
        "  - {name: loaders, clients: [0], workload: dlio, format: indexed_binary, files: 2,"
        " samples_per_file: 64, sample_size: 64k, batch_size: 4, computation_time: 50ms}\n",
        "d.yaml",
    )
    assert main(["sim", "run", str(path), "--json"]) == 0
    dlio = json.loads(capsys.readouterr().out)["dlio"]["loaders"]
    assert dlio["samples_per_second"] > 0
    assert main(["sim", "run", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(
        rf"DLIO loaders training +{dlio['samples_per_second']:.1f} samples/s, {dlio['io_mibps']:.1f} MiB/s, "
        rf"AU {dlio['au_percent']:.1f}%",
        out,
    )


def test_sweep_param_gives_one_result_per_value(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(
        capsys, "sim", "sweep", str(small_scenario), "--param", "osc.max_pages_per_rpc=16,256",
        "--duration", "2s", "--json", "--jobs", "2",
    )  # fmt: skip
    assert report["scenario"] == "small"
    results = report["results"]
    assert isinstance(results, list)
    assert [r["config"] for r in results] == [{"osc.max_pages_per_rpc": 16}, {"osc.max_pages_per_rpc": 256}]
    for r in results:
        assert set(r) == {"config", "mbps", "osc_mbps", "read_mbps", "write_mbps"}
        assert r["mbps"] > 0


def test_sweep_product_of_params(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(
        capsys, "sim", "sweep", str(small_scenario), "--param", "osc.max_pages_per_rpc=16,256",
        "--param", "osc.max_rpcs_in_flight=8,32", "--duration", "0.5s", "--json",
    )  # fmt: skip
    results = report["results"]
    assert isinstance(results, list)
    assert [tuple(r["config"].values()) for r in results] == [(16, 8), (16, 32), (256, 8), (256, 32)]


def test_sweep_on_a_dask_cluster_gives_the_local_results(
    small_scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    distributed = pytest.importorskip("distributed")
    args = ["sim", "sweep", str(small_scenario), "--param", "osc.max_pages_per_rpc=16,256",
            "--param", "osc.max_rpcs_in_flight=1,8", "--duration", "0.5s", "--json"]  # fmt: skip
    local = run_json(capsys, *args, "--jobs", "1")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        on_dask = run_json(capsys, *args, "--scheduler", cluster.scheduler_address)
    assert on_dask == local  # every configuration, in grid order, to the last digit
    assert len({r["mbps"] for r in local["results"]}) > 1  # the configurations were not all the same run


def test_sweep_unreachable_scheduler_is_one_line(
    small_scenario: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr("pfstune.executor.CONNECT_TIMEOUT_S", 1)
    args = ["sim", "sweep", str(small_scenario), "--param", "osc.max_pages_per_rpc=16", "--duration", "0.5s"]
    assert main([*args, "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler tcp://127.0.0.1:9: cannot connect" in err
    assert "Traceback" not in err


def test_sweep_usage_errors(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "sweep", str(small_scenario), "--param", "osc.max_rpcs_in_flight=1", "--param",
                 "osc.max_rpcs_in_flight=2"]) == 2  # fmt: skip
    assert "each tunable may be given to --param once" in capsys.readouterr().err


def test_dial99_is_cut_to_what_a_cluster_of_small_rpcs_accepts(
    write_scenario: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(SMALL_SCENARIO.replace("clients: 1}", "clients: 1, brw_size: 1m}"), "small-rpcs.yaml")
    report = run_json(capsys, "sim", "sweep", str(path), "--grid", "dial99", "--duration", "0.2s", "--json")
    results = report["results"]
    assert isinstance(results, list)
    assert len(results) == 9 * 9  # max_pages_per_rpc 1 to 256 (1 MiB), not 512 and 1024
    assert max(r["config"]["osc.max_pages_per_rpc"] for r in results) == 256
    # dial99 is the default grid
    assert run_json(capsys, "sim", "sweep", str(path), "--duration", "0.2s", "--json") == report
    main(["sim", "sweep", str(path), "--grid", "dial99", "--duration", "0.2s", "--json"])
    assert "max_pages_per_rpc above 256 left out: the cluster's brw_size is 1 MiB" in capsys.readouterr().err
    oracle = run_json(capsys, "sim", "run", str(path), "--tuner", "oracle", "--duration", "0.2s", "--json")
    assert oracle["sweep_runs"] == 81


def test_sweep_bad_param_values(small_scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sim", "sweep", str(small_scenario), "--param", "osc.max_pages_per_rpc=16k"])
    assert "integer values" in capsys.readouterr().err


def test_presets_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(capsys, "sim", "presets", "--json") == PRESETS


def test_presets_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "presets"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in PRESETS)


def test_serve_rejects_a_client_out_of_range(small_scenario: Path, tmp_path: Path) -> None:
    result = pfstune("sim", "serve", str(small_scenario), "--root", str(tmp_path / "t"), "--client", "3")
    assert result.returncode == 2
    assert "--client 3" in result.stderr


def test_serve_checks_the_scenario_s_set_up_before_it_makes_the_root(
    write_scenario: Callable[[str, str], Path], tmp_path: Path
) -> None:
    huge = write_scenario(SMALL_SCENARIO.replace("filesize: 1g", "filesize: 1000t"), "huge.yaml")
    result = pfstune("sim", "serve", str(huge), "--root", str(tmp_path / "t"))
    assert result.returncode == 2
    assert "(cluster.ost_capacity)" in result.stderr
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("root", ["/", "/tmp/.."])
def test_serve_refuses_the_live_systems_root(small_scenario: Path, root: str) -> None:
    # refused before anything is written: as root on a Lustre client it would set the real max_dirty_mb
    result = pfstune("sim", "serve", str(small_scenario), "--root", root, "--duration", "1s")
    assert result.returncode == 2
    assert "is a live system's root" in result.stderr
    assert "Traceback" not in result.stderr


def test_sweep_value_refused_by_the_simulator(small_scenario: Path) -> None:
    result = pfstune("sim", "sweep", str(small_scenario), "--param", "osc.max_rpcs_in_flight=8,0", "--duration", "1s")
    assert result.returncode == 2
    assert result.stderr.startswith("pfstune: error: tunable osc.max_rpcs_in_flight=0: ")
    assert "(given on the command line" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_closed_pipe_ends_quietly() -> None:
    """`pfstune ... | head` closes the pipe early: exit 141 (SIGPIPE), no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pfstune", "sim", "presets", "--json"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert "Traceback" not in done.stderr


class _InterruptedImport(importlib.abc.MetaPathFinder):
    """A Ctrl-C that arrives while ``pfstune.cli.main`` (and so every subcommand) is imported."""

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name == "pfstune.cli.main":
            raise KeyboardInterrupt


def test_ctrl_c_while_the_command_starts_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "pfstune.cli.main", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_InterruptedImport(), *sys.meta_path])
    assert run() == 130
    assert capsys.readouterr().err == ""


def test_the_entry_point_runs_the_command(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pfstune", "sim", "presets"])
    assert run() == 0
    assert "cloudlab-c6525" in capsys.readouterr().out


def test_the_command_line_starts_without_pandas() -> None:
    """pandas is a third of a second of every command's start; only the commands that make frames load it."""
    code = "import sys, pfstune.cli.main; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
