"""`pfstune train` and `pfstune model eval` on a small slice of the real dataset."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pfstune.cli.main import main
from pfstune.cli.train import MAX_ITERATIONS, iteration_list
from pfstune.models import load_model
from tests.conftest import SHARED

DEV = SHARED / "data" / "dial-lustre" / "dev.parquet"
pytestmark = pytest.mark.skipif(not DEV.is_file(), reason=f"{DEV} is not there")
FIGURES = {"auc", "precision_at_0.8", "positives", "rows", "calibration"}


@pytest.fixture(scope="module")
def slice_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Iterations 1-3 of one random-read and one sequential-write workload of dev.parquet."""
    raw = pd.read_parquet(
        DEV, filters=[("iteration", "in", [1, 2, 3]), ("workload", "in", ["rnd_r_1_io_16m", "seq_w_1_io_8k"])]
    )
    path = tmp_path_factory.mktemp("data") / "slice.parquet"
    raw.to_parquet(path)
    return path


@pytest.fixture(scope="module")
def trained(slice_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("models") / "m"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(
            ["train", str(slice_path), "--out", str(out), "--holdout-iterations", "3", "--rounds", "40", "--json"]
        )
    assert status == 0
    return out, json.loads(buffer.getvalue())


def test_train_report_and_files(trained: tuple[Path, dict[str, object]], slice_path: Path) -> None:
    out, report = trained
    assert sorted(p.name for p in out.iterdir()) == ["model.json", "read.txt", "write.txt"]
    assert report["rows"] == len(pd.read_parquet(slice_path))
    holdout = report["holdout"]
    assert isinstance(holdout, dict)
    assert holdout["kind"] == "iterations"
    assert holdout["iterations"] == [3]
    evaluation = report["evaluation"]
    assert isinstance(evaluation, dict)
    assert set(evaluation) == {"read", "write"}
    for figures in evaluation.values():
        assert set(figures) >= FIGURES
        assert 0.5 < figures["auc"] <= 1.0
    meta = load_model(out).metadata
    assert meta["training"]["holdout"]["iterations"] == [3]
    assert meta["training"]["evaluation"] == evaluation
    pairs, train_pairs = report["pairs"], report["train_pairs"]
    assert isinstance(pairs, dict)
    assert isinstance(train_pairs, dict)
    held = holdout["pairs"]
    assert all(pairs[op] == train_pairs[op] + held[op] for op in pairs)


def test_eval_json(
    trained: tuple[Path, dict[str, object]], slice_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = trained
    assert main(["model", "eval", str(out), str(slice_path), "--iterations", "3", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert set(figures) == {"read", "write"}
    for op, values in figures.items():
        assert set(values) >= FIGURES
        assert values == report["evaluation"][op]  # type: ignore[index]
        for predicted, observed, count in values["calibration"]:
            assert 0 <= predicted <= 1
            assert 0 <= observed <= 1
            assert count > 0
        assert sum(row[2] for row in values["calibration"]) == values["rows"]


def test_eval_text_and_default_model(slice_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "eval", "default", str(slice_path)]) == 0
    text = capsys.readouterr().out
    assert "ROC AUC" in text
    assert "read calibration" in text


def test_train_with_validation_fraction(slice_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", str(slice_path), "--out", str(tmp_path / "m"), "--rounds", "20"]) == 0
    text = capsys.readouterr().out
    assert "held out: 0.2 of the series" in text
    assert "ROC AUC" in text
    training = load_model(tmp_path / "m").metadata["training"]
    assert training["holdout"]["kind"] == "series"
    # Series are drawn per workload: both workloads (so both ops) are scored.
    assert training["holdout"]["pairs"]["read"] > 0
    assert training["holdout"]["pairs"]["write"] > 0
    assert training["evaluation"]["read"]["auc"] is not None


def test_train_without_enough_series_for_validation(
    slice_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = tmp_path / "one.parquet"
    raw = pd.read_parquet(slice_path)
    raw[raw["iteration"] == 1].to_parquet(one)
    assert main(["train", str(one), "--out", str(tmp_path / "m"), "--rounds", "10"]) == 0
    captured = capsys.readouterr().out
    assert "no validation fit" in captured
    assert load_model(tmp_path / "m").metadata["training"]["evaluation"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "{tmp}/absent.parquet", "--out", "{tmp}/m"], "absent.parquet: no such dataset"),
        (["train", "{tmp}/other.parquet", "--out", "{tmp}/m"], "not a pfstune dataset"),
        (
            ["train", "{slice}", "--out", "{tmp}/m", "--holdout-iterations", "9"],
            "--holdout-iterations 9 (the data has iterations 1-3) leaves",
        ),
        (["train", "{slice}", "--out", "{tmp}/other.parquet"], "other.parquet: cannot create the model directory"),
        (["model", "eval", "{tmp}/nomodel", "{slice}"], "no such model directory"),
        (["model", "eval", "{slice}", "{slice}"], "slice.parquet: is a file, not a model directory"),
        (["model", "eval", "default", "{slice}", "--iterations", "9"], "no pairs to evaluate"),
    ],
)
def test_user_errors_are_one_line(
    argv: list[str], message: str, slice_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "other.parquet")
    args = [a.format(tmp=tmp_path, slice=slice_path) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pfstune: error: ")
    assert message in err
    assert "\n" not in err
    assert not (tmp_path / "m").exists(), "a failed train left its model directory behind"


def test_a_model_that_cannot_be_saved_leaves_the_earlier_one_whole(
    trained: tuple[Path, dict[str, object]],
    slice_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "m"
    shutil.copytree(trained[0], out)
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    write_text = Path.write_text

    def disk_full(self: Path, data: str, encoding: str | None = None) -> int:
        if "model.json" not in self.name:  # the disk fills up at the last file
            return write_text(self, data, encoding=encoding)
        write_text(self, data[: len(data) // 2], encoding=encoding)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", disk_full)
    assert main(["train", str(slice_path), "--out", str(out), "--rounds", "5", "--validation-fraction", "0"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"pfstune: error: --out {out}: cannot write the model: No space left on device\n")
    assert err.count("pfstune: error") == 1
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before  # no partial file either
    monkeypatch.undo()
    assert load_model(out).metadata == load_model(trained[0]).metadata


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--threads", "100000"], "argument --threads: 100000 is more than "),
        (["--threads", "0"], "argument --threads: '0' is not a positive integer"),
        (["--out", ""], "argument --out: an empty path"),
    ],
)
def test_bad_train_options_are_one_line_before_anything_is_made(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "x.parquet", "--out", "m", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"pfstune train: error: {message}"), err
    assert list(tmp_path.iterdir()) == []


def test_bad_iteration_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "x.parquet", "--out", "m", "--holdout-iterations", "20-17"])
    assert exit_info.value.code == 2
    assert "not a list of iterations" in capsys.readouterr().err


def test_an_iteration_range_too_long_to_hold_is_refused() -> None:
    assert iteration_list("1-3,7") == [1, 2, 3, 7]
    assert len(iteration_list(f"1-{MAX_ITERATIONS}")) == MAX_ITERATIONS
    for text in (f"1-{MAX_ITERATIONS + 1}", "1-1000000000"):
        with pytest.raises(argparse.ArgumentTypeError, match="at most"):
            iteration_list(text)
