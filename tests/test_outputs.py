"""pfstune.outputs: files replaced only once written in full, and scenario names as file names."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pfstune.errors import UserError
from pfstune.outputs import check_file_name, file_stem, no_empty_directory, replacing


def _write(path: Path, write: Callable[[Path], None]) -> None:
    with replacing(path) as partial:
        write(partial)


def _write_both(first: Path, second: Path, fail: bool) -> None:
    with contextlib.ExitStack() as stack:
        stack.enter_context(replacing(first)).write_text("new a")
        partial = stack.enter_context(replacing(second))
        if fail:
            _disk_full(partial)  # while writing the second file
        partial.write_text("new b")


def test_a_file_is_replaced_only_once_written(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    with replacing(path) as partial:
        partial.write_text("new")
        assert path.read_text() == "old"  # not yet
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def _disk_full(partial: Path) -> None:
    """Write half a file, then fail as a full disk does."""
    partial.write_text("half")
    raise OSError(28, "No space left on device")


def test_a_failed_write_leaves_the_earlier_file_and_no_partial_one(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(OSError, match="No space left"):
        _write(path, _disk_full)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_files_entered_together_are_renamed_only_once_all_are_written(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a")
    second.write_text("old b")
    with pytest.raises(OSError, match="No space left"):
        _write_both(first, second, fail=True)
    assert (first.read_text(), second.read_text()) == ("old a", "old b")
    _write_both(first, second, fail=False)
    assert (first.read_text(), second.read_text()) == ("new a", "new b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_a_failed_clean_up_does_not_hide_the_error(tmp_path: Path) -> None:
    directory = tmp_path / "d"
    directory.mkdir()

    def directory_gone(_: Path) -> None:
        directory.rmdir()
        directory.write_text("")  # the partial file's directory is now a file: removing it fails
        raise ValueError("the real error")

    with pytest.raises(ValueError, match="the real error"):
        _write(directory / "out.json", directory_gone)


def test_the_data_is_on_disk_before_the_rename_and_the_rename_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the first fsync a power cut can leave an empty file under the final name (XFS;
    # ext4 only guards a rename over an existing file); without the second, the old entry.
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync " + os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: object, dst: object) -> None:
        events.append("rename")
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with replacing(tmp_path / "out.json") as partial:
        partial.write_text("new")
    assert events == [f"fsync {partial.name}", "rename", f"fsync {tmp_path.name}"]


def test_long_names_get_short_distinct_temporary_names(tmp_path: Path) -> None:
    common = "x" * 200
    paths = [tmp_path / f"{common}-throughput.png", tmp_path / f"{common}-config.png"]
    with contextlib.ExitStack() as stack:
        partials = [stack.enter_context(replacing(path)) for path in paths]
        assert partials[0] != partials[1]
        for partial, path in zip(partials, paths, strict=True):
            partial.write_text(path.name)
    assert [path.read_text() for path in paths] == [path.name for path in paths]


def test_scenario_names_as_file_names() -> None:
    assert file_stem("sub/x") == "sub_x"
    assert file_stem("two phases: 1m") == "two_phases_1m"
    assert file_stem("rnd_r-1.5") == "rnd_r-1.5"
    check_file_name("x" * 255, "s.yaml")
    with pytest.raises(UserError, match=r"s\.yaml: the file name x+\.\.\. would be 256 bytes"):
        check_file_name("x" * 256, "s.yaml")


def test_a_failed_command_leaves_no_empty_directory_it_made(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"

    def fail(keep: bool) -> None:
        with no_empty_directory(out):
            out.mkdir(parents=True)
            if keep:
                (out / "result").write_text("kept")
            raise ValueError("failed")

    with pytest.raises(ValueError, match="failed"):
        fail(keep=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="failed"):
        fail(keep=True)
    assert (out / "result").read_text() == "kept"  # what holds a file stays
    with no_empty_directory(tmp_path / "c"):
        (tmp_path / "c").mkdir()
    assert (tmp_path / "c").is_dir()  # and a command that succeeds keeps its directory
