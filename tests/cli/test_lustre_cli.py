"""`pfstune lustre snapshot` and `pfstune lustre parse`: JSON contracts, tables, one-line errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pfstune.cli.main import main
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree
from tests.conftest import SHARED

FIXTURE = SHARED / "fixtures" / "lustre-2.10-client"
DATA = Path(__file__).parents[1] / "lustre" / "data"
OST0 = "lustrefs-OST0000-osc-ffff88105db50000"


def pfstune(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m pfstune ARGS` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "pfstune", *args], capture_output=True, text=True, timeout=60, check=False
    )


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(list(args)) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.parametrize("command", [["lustre"], ["lustre", "snapshot"], ["lustre", "parse"]])
def test_help_has_a_description(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pfstune lustre")
    assert len(out.split("\n\n")[1].split()) >= 5


def test_snapshot_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "lustre", "snapshot", "--root", str(FIXTURE), "--json")
    assert set(data) == {"time", "osc", "llite"}
    assert len(data["osc"]) == 7
    assert not any("MDT0000" in name for name in data["osc"])
    osc = data["osc"][OST0]
    assert {"tunables", "rpc_stats", "stats", "import"} <= set(osc)
    assert set(osc["stats"]["ost_write"]) == {"samples", "unit", "min", "max", "sum", "sumsq"}
    assert osc["stats"]["write_bytes"]["sumsq"] == 10009909738331963392  # exact in JSON too
    assert osc["rpc_stats"]["pages_per_rpc"]["write"]["1024"] == 16389010  # JSON keys are strings
    assert osc["tunables"]["max_pages_per_rpc"] == 1024
    assert osc["import"]["state"] == "FULL"
    assert data["llite"]["lustrefs-ffff88105db50000"]["osc"][0] == OST0


def test_snapshot_options(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "lustre", "snapshot", "--root", str(FIXTURE), "--osc", "*OST0006*", "--minimal", "--json")
    osc = "lustrefs-OST0006-osc-ffff88105db50000"
    assert list(data["osc"]) == [osc]
    assert set(data["osc"][osc]) == {"rpc_stats", "stats", "stats_header", "tunables"}


def test_snapshot_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lustre", "snapshot", "--root", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["osc", "mppr", "mrif"]
    row = next(line for line in lines if line.startswith(OST0)).split()
    assert row == [OST0, "1024", "8", "27815936", "262144", "0", "18210287", "FULL"]
    assert "llite lustrefs-ffff88105db50000: 7 OSC(s)" in out


def test_snapshot_table_shows_idle_imports(
    capsys: pytest.CaptureFixture[str], small_scenario: Path, tmp_path: Path
) -> None:
    # a served tree 30 s after the mount: the reader's OSC is FULL, the seven others IDLE
    engine = Engine(load_scenario(small_scenario))
    tree = VirtualTree(engine, 0, tmp_path / "root", lambda _: None)
    engine.run(until_ns=30 * 10**9)
    tree.refresh()
    assert main(["lustre", "snapshot", "--root", str(tmp_path / "root")]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:] if "-osc-" in line]
    assert sorted(row[-1] for row in rows) == ["FULL"] + ["IDLE"] * 7
    # --minimal reads no import file: the column says so
    assert main(["lustre", "snapshot", "--root", str(tmp_path / "root"), "--minimal"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:] if "-osc-" in line]
    assert {row[-1] for row in rows} == {"-"}


def test_parse_saved_get_param(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "lustre", "parse", str(DATA / "b2_client.txt"), "--json")
    osc = data["osc"]["a361000-OST0000-osc-ffff000189257000"]
    assert osc["tunables"] == {"cur_grant_bytes": 8437760}
    assert osc["rpc_stats"]["dio_rpcs_in_flight"] == 0
    assert osc["stats"]["ost_read"]["samples"] == 112850
    assert data["llite"]["a361000-ffff000189257000"]["osc"] == ["a361000-OST0000-osc-ffff000189257000"]


def test_parse_from_stdin_and_table(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO((DATA / "b5_get_param.txt").read_text()))
    assert main(["lustre", "parse", "-"]) == 0
    captured = capsys.readouterr()
    assert "testfs-OST0001-osc-ffff8881234abcd0" in captured.out
    assert "rpc_stats" in caplog.text  # the elided rpc_stats is left out, with a reason
    monkeypatch.setattr(sys, "stdin", io.StringIO((DATA / "b1_import.txt").read_text()))
    assert main(["lustre", "parse", "-", "--json"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_parse_says_why_a_snapshot_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "mdt.txt"
    saved.write_text(
        "osc.lustre-OST0000-osc-MDT0000.max_rpcs_in_flight=8\nmdc.lustre-MDT0000-mdc-ffff8881.max_rpcs_in_flight=8\n"
    )
    assert run_json(capsys, "lustre", "parse", str(saved), "--json") == {"time": 0.0, "osc": {}, "llite": {}}
    assert main(["lustre", "parse", str(saved)]) == 0
    assert "mdt.txt: no client OSC or llite parameter in it" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["lustre", "snapshot", "--root", "/no/such/dir", "--json"],
        ["lustre", "parse", "/no/such/file", "--json"],
        ["lustre", "parse", str(DATA)],  # a directory
        ["lustre", "parse", str(FIXTURE / "proc/fs/lustre/osc" / OST0 / "stats")],  # not lctl output
    ],
)
def test_bad_paths_are_one_line_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("pfstune: error: ")
    assert captured.err.count("\n") == 1


def test_errors_have_no_traceback() -> None:
    result = pfstune("lustre", "snapshot", "--root", "/no/such/dir", "--json")
    assert result.returncode == 2
    assert (
        result.stderr
        == "pfstune: error: --root /no/such/dir: no such directory (give a client's / or a `pfstune sim serve` tree)\n"
    )


def test_tree_without_lustre_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lustre", "snapshot", "--root", str(tmp_path), "--json"]) == 2
    err = capsys.readouterr().err
    assert "no Lustre client devices" in err
    # a glob that matches no OSC is a mistake (a typo), even though the mount is there
    assert main(["lustre", "snapshot", "--root", str(FIXTURE), "--osc", "nomatch*"]) == 2
    err = capsys.readouterr().err
    assert "no client OSC under" in err
    assert "matches --osc 'nomatch*'" in err
    assert err.count("\n") == 1
