"""`pfstune collect`: options, the --json manifest, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfstune.cli.main import main

SCENARIO = """\
name: tiny
seed: 7
duration: 2s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: writer, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 1g, stripe_count: 1}
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def test_help_describes_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["collect", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "random dial99 configuration" in " ".join(out.split())
    assert "--repeat" in out


def test_json_prints_the_manifest(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(
        ["collect", str(scenario), "--out", str(out), "--repeat", "2", "--duration", "1s", "--jobs", "1", "--json"]
    )
    assert code == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest == json.loads((out / "manifest.json").read_text())
    assert [(r["file"], r["duration_s"], r["rows"]) for r in manifest["runs"]] == [
        ("tiny-seed1.parquet", 1.0, 16),
        ("tiny-seed2.parquet", 1.0, 16),
    ]
    assert manifest["duration"] == "1s"


def test_table_output_and_explicit_seeds(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collect", str(scenario), "--out", str(tmp_path / "o"), "--seeds", "5", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "tiny-seed5.parquet" in out
    assert "32 rows" in out
    assert (tmp_path / "o" / "tiny-seed5.parquet").exists()


def test_default_seed_is_the_scenario_s(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collect", str(scenario), "--out", str(tmp_path / "o"), "--duration", "500ms", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seeds"] == [7]


@pytest.mark.parametrize(
    "extra", [["--seeds", "1,x"], ["--seeds", "1", "--repeat", "2"], ["--repeat", "0"], ["--duration", "5"]]
)
def test_bad_options_are_usage_errors(scenario: Path, tmp_path: Path, extra: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["collect", str(scenario), "--out", str(tmp_path / "o"), *extra])
    assert exit_.value.code == 2


def test_missing_scenario_and_unwritable_out_are_one_line_errors(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["collect", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pfstune: error:")
    assert "nope.yaml" in err
    assert err.count("\n") == 1
    (tmp_path / "file").write_text("")
    assert main(["collect", str(scenario), "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pfstune: error:")
    assert err.count("\n") == 1
