"""Tests of the virtual client tree (needs the compiled core)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pfstune.sim import tree as tree_module
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree, write_atomically


def make_tree(small_scenario: Path, root: Path) -> tuple[Engine, VirtualTree, list[str]]:
    engine = Engine(load_scenario(small_scenario))
    log: list[str] = []
    return engine, VirtualTree(engine, 0, root, log.append), log


def served_rif(small_scenario: Path, root: Path) -> tuple[Engine, VirtualTree, list[str], Path, str]:
    """A refreshed tree, its log, and the first OSC's max_rpcs_in_flight file and lctl name."""
    engine, tree, log = make_tree(small_scenario, root)
    tree.refresh()
    osc = engine.clients()[0]["osc"][0]
    return engine, tree, log, root / "sys/fs/lustre/osc" / osc / "max_rpcs_in_flight", f"osc.{osc}.max_rpcs_in_flight"


def test_tree_has_every_file_with_its_text_and_mode(small_scenario: Path, tmp_path: Path) -> None:
    engine, tree, _ = make_tree(small_scenario, tmp_path / "root")
    assert tree.refresh() == len(tree.params)
    for param in tree.params:
        path = tmp_path / "root" / param.path
        assert path.read_text() == engine.get_param(0, param.name)
        assert path.stat().st_mode & 0o777 == (0o644 if param.writable else 0o444)
    assert tree.refresh() == 0  # nothing changed without simulated time passing
    assert not list((tmp_path / "root").rglob(".*.tmp"))


def test_written_values_are_applied_and_refused_ones_revert(small_scenario: Path, tmp_path: Path) -> None:
    engine, tree, log, file, name = served_rif(small_scenario, tmp_path)

    file.write_text("32")
    inode = file.stat().st_ino
    tree.apply_writes()
    assert engine.get_param(0, name) == "32\n"
    assert log == []
    # an accepted value stays as written: the tree never rewrites the file behind a writer's
    # back, where it could undo a newer write (the agent restoring an original, say)
    engine.run(engine.now_ns + 500_000_000)
    tree.refresh()
    tree.apply_writes()
    assert file.read_text() == "32"
    assert file.stat().st_ino == inode

    file.write_text("0\n")
    tree.apply_writes()
    assert engine.get_param(0, name) == "32\n"
    assert file.read_text() == "32\n"
    assert len(log) == 1
    assert log[0] == f"set_param {name}=0: Numerical result out of range; valid: 1 to 256"


def test_empty_or_removed_files_are_left_for_the_next_refresh(small_scenario: Path, tmp_path: Path) -> None:
    _, tree, log, file, _ = served_rif(small_scenario, tmp_path)
    file.write_text("")
    tree.apply_writes()
    file.unlink()
    tree.apply_writes()
    assert log == []
    tree.refresh()
    assert file.read_text() == "8\n"


def test_write_atomically_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "value"
    write_atomically(path, "1\n", 0o444)
    write_atomically(path, "2\n", 0o444)
    assert path.read_text() == "2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["value"]


def test_white_space_around_a_value_is_refused_as_the_kernel_refuses_it(small_scenario: Path, tmp_path: Path) -> None:
    # kstrtouint() takes one trailing newline and nothing else: `echo -n "13 "` is EINVAL
    engine, tree, log, file, name = served_rif(small_scenario, tmp_path)
    for text in ("13 ", " 14", "15\n\n"):
        file.write_text(text)
        tree.apply_writes()
        assert engine.get_param(0, name) == "8\n", text
        assert file.read_text() == "8\n"
    assert len(log) == 3
    assert all("Invalid argument" in line for line in log)
    file.write_text("16\n")
    tree.apply_writes()
    assert engine.get_param(0, name) == "16\n"


def test_an_empty_write_shows_the_value_again_after_a_grace(
    small_scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr(tree_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    _, tree, log, file, _ = served_rif(small_scenario, tmp_path)
    file.write_text("")
    tree.apply_writes()
    clock[0] += tree_module.EMPTY_GRACE_S / 2
    tree.apply_writes()
    assert file.read_text() == ""  # perhaps a writer between truncating and writing
    clock[0] += tree_module.EMPTY_GRACE_S
    tree.apply_writes()
    assert file.read_text() == "8\n"
    assert log == []


def test_a_write_into_a_read_only_file_is_undone(small_scenario: Path, tmp_path: Path) -> None:
    engine, tree, log = make_tree(small_scenario, tmp_path)
    tree.refresh()
    osc = engine.clients()[0]["osc"][0]
    file = tmp_path / "sys/fs/lustre/osc" / osc / "cur_dirty_bytes"
    assert file.stat().st_mode & 0o777 == 0o444
    file.chmod(0o644)  # what root may do without asking
    file.write_text("123")
    tree.apply_writes()
    assert file.read_text() == engine.get_param(0, f"osc.{osc}.cur_dirty_bytes")
    assert file.stat().st_mode & 0o777 == 0o444
    assert log == [f"write to read-only osc.{osc}.cur_dirty_bytes: Permission denied"]
    tree.apply_writes()
    assert len(log) == 1


def test_an_idle_import_reads_as_a_real_one_does(small_scenario: Path, tmp_path: Path) -> None:
    """30 s after the mount the OSCs the reader never used are IDLE (the pinger's first look, at
    25 s), and the agent's prober reads them as it reads a real client's idle imports."""
    from pfstune.lustre.snapshot import Prober

    engine, tree, _ = make_tree(small_scenario, tmp_path / "root")
    engine.run(until_ns=30 * 10**9)
    tree.refresh()
    snapshot = Prober(tmp_path / "root").probe(time=30.0)
    states = {name: osc["import"]["state"] for name, osc in snapshot["osc"].items()}
    assert len(states) == 8
    assert sorted(states.values()).count("IDLE") == 7, states
    (busy,) = [name for name, state in states.items() if state == "FULL"]
    idle = next(name for name, state in states.items() if state == "IDLE")
    history = [line.strip(" -[]").split(", ") for line in engine.get_param(0, f"osc.{idle}.state").splitlines()[2:]]
    mount = int(history[0][0])
    assert [(int(t) - mount, state) for t, state in history] == [
        (0, "CONNECTING"),
        (0, "FULL"),
        (25, "CONNECTING"),
        (25, "IDLE"),
    ]
    assert snapshot["osc"][idle]["stats"]["ost_disconnect"]["samples"] == 1
    assert snapshot["osc"][busy]["stats"]["obd_ping"]["samples"] == 1
