"""`pfstune collect`: options, the --json manifest, and one-line errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import pfstune.collect
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
    assert "--scheduler ADDRESS" in out


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
    "extra",
    [["--seeds", "1,x"], ["--seeds", "1", "--repeat", "2"], ["--repeat", "0"], ["--duration", "5"], ["--out", ""]],
)
def test_bad_options_are_usage_errors(
    scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # where an accepted --out "" would write
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


@pytest.mark.parametrize("name", ["sub/x", "x" * 300])
def test_a_scenario_name_that_is_no_file_name_is_one_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = tmp_path / "named.yaml"
    path.write_text(SCENARIO.replace("name: tiny", f"name: {name}"), encoding="utf-8")
    code = main(["collect", str(path), "--out", str(tmp_path / "o"), "--duration", "500ms", "--jobs", "1"])
    err = capsys.readouterr().err
    if "/" in name:  # made a file name, as the bench's plots are
        assert code == 0, err
        assert (tmp_path / "o" / "sub_x-seed7.parquet").is_file()
    else:
        assert code == 2
        assert err.startswith(f"pfstune: error: {path}: the file name xxx")
        assert err.count("\n") == 1
        assert not (tmp_path / "o").exists()


def test_unreachable_scheduler_is_a_one_line_error(
    scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr("pfstune.executor.CONNECT_TIMEOUT_S", 1)
    args = ["collect", str(scenario), "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("pfstune: error: --scheduler tcp://127.0.0.1:9: cannot connect")
    assert err.count("\n") == 1
    assert not (tmp_path / "o").exists()  # no empty output directory left behind


def test_a_failed_run_exits_1_with_one_line_after_writing_the_others(
    scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = pfstune.collect.record_run

    def flaky(scenario: Any, tuner_seed: int, scenario_file: str | None = None) -> Any:
        if tuner_seed == 2:
            raise ValueError("no such thing")
        return real(scenario, tuner_seed, scenario_file)

    @contextmanager
    def one_thread(jobs: int | None = None, scheduler: str | None = None) -> Iterator[Executor]:
        with ThreadPoolExecutor(max_workers=1) as pool:
            yield pool

    monkeypatch.setattr(pfstune.collect, "open_executor", one_thread)
    monkeypatch.setattr(pfstune.collect, "record_run", flaky)
    out = tmp_path / "o"
    assert main(["collect", str(scenario), "--out", str(out), "--repeat", "2", "--duration", "1s"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pfstune: error: 1 of 2 runs failed (tiny-seed2.parquet: ValueError: no such thing)")
    assert err.count("\n") == 1
    assert (out / "tiny-seed1.parquet").exists()
    assert json.loads((out / "manifest.json").read_text())["failed"][0]["file"] == "tiny-seed2.parquet"
