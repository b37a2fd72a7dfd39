"""The actuator on a fake client tree: allow-list, ranges, verified writes, originals, restore, dry run, crashes."""

from __future__ import annotations

import doctest
import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pfstune.errors import UserError
from pfstune.lustre import actuator as actuator_module
from pfstune.lustre import limits
from pfstune.lustre import state as state_module
from pfstune.lustre.actuator import (
    Actuator,
    ActuatorError,
    ActuatorPermissionError,
    LimitError,
    WriteError,
)
from pfstune.lustre.layout import param_path
from pfstune.lustre.limits import DeviceContext, dirty_mb_after
from tests.conftest import SHARED
from tests.lustre._fake_client import LLITE, OSC, OSC2, SERVER_OSC, build_tree, tree_bytes


@pytest.fixture(params=["2.15", "2.10"])
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path, layout: str) -> Path:
    return build_tree(tmp_path / "root", layout)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def value(root: Path, param: str, device: str = OSC, kind: str = "osc") -> str:
    path = param_path(root, kind, device, param)
    assert path is not None
    return path.read_text(encoding="ascii").strip()


def originals_json(state_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((state_dir / "originals.json").read_text())
    return data


# ---- apply, read back, restore ------------------------------------------------------------------------


def test_apply_writes_reads_back_and_restores_on_exit(root: Path, state_dir: Path, layout: str) -> None:
    with Actuator(root, state_dir) as act:
        in_force = act.apply(OSC, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 256})
        assert in_force == {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 256}
        assert act.current(OSC, "max_rpcs_in_flight") == 16
        assert value(root, "max_rpcs_in_flight") == "16"
        assert value(root, "max_pages_per_rpc") == "256"
        # Only the device asked for is touched.
        assert value(root, "max_rpcs_in_flight", OSC2) == "8"
        assert value(root, "max_rpcs_in_flight", SERVER_OSC) == "8"
        # The originals of both and of the max_dirty_mb they are coupled to are on disk.
        saved = originals_json(state_dir)["originals"]
        assert saved == {
            f"osc.{OSC}.max_rpcs_in_flight": {
                "path": str(param_path(root, "osc", OSC, "max_rpcs_in_flight")),
                "value": "8",
            },
            f"osc.{OSC}.max_pages_per_rpc": {
                "path": str(param_path(root, "osc", OSC, "max_pages_per_rpc")),
                "value": "1024",
            },
            f"osc.{OSC}.max_dirty_mb": {"path": str(param_path(root, "osc", OSC, "max_dirty_mb")), "value": "2000"},
        }
    assert value(root, "max_rpcs_in_flight") == "8"
    assert value(root, "max_pages_per_rpc") == "1024"
    assert not (state_dir / "originals.json").exists()


def test_2_15_layout_finds_each_file_where_lctl_does(root: Path, layout: str) -> None:
    rif, mppr = param_path(root, "osc", OSC, "max_rpcs_in_flight"), param_path(root, "osc", OSC, "max_pages_per_rpc")
    assert rif is not None
    assert mppr is not None
    assert rif.is_relative_to(root / ("sys/fs/lustre" if layout == "2.15" else "proc/fs/lustre"))
    assert mppr.is_relative_to(root / "proc/fs/lustre")


def test_write_is_the_ascii_value_without_newline(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 32})
        path = param_path(root, "osc", OSC, "max_rpcs_in_flight")
        assert path is not None
        assert path.read_bytes() == b"32"


def test_no_write_when_the_value_is_already_in_force(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[Path] = []
    monkeypatch.setattr(actuator_module, "write_param", lambda path, text: writes.append(path))
    with Actuator(root, state_dir) as act:
        assert act.apply(OSC, {"max_rpcs_in_flight": 8, "max_pages_per_rpc": 1024}) == {
            "max_rpcs_in_flight": 8,
            "max_pages_per_rpc": 1024,
        }
        assert not (state_dir / "originals.json").exists()
    assert writes == []


def test_restore_on_exception(root: Path, state_dir: Path) -> None:
    def agent_that_fails() -> None:
        with Actuator(root, state_dir) as act:
            act.apply(OSC, {"max_rpcs_in_flight": 64})
            act.apply(LLITE, {"max_read_ahead_mb": 64}, kind="llite")
            raise RuntimeError("tuner blew up")

    with pytest.raises(RuntimeError, match="tuner blew up"):
        agent_that_fails()
    assert value(root, "max_rpcs_in_flight") == "8"
    assert value(root, "max_read_ahead_mb", LLITE, "llite") == "1024"
    assert not (state_dir / "originals.json").exists()


def test_restore_is_idempotent_and_apply_works_after_it(root: Path, state_dir: Path) -> None:
    act = Actuator(root, state_dir)
    with act:
        act.apply(OSC, {"max_rpcs_in_flight": 64})
        assert act.restore() == {}
        assert act.restore() == {}
        assert value(root, "max_rpcs_in_flight") == "8"
        assert not (state_dir / "originals.json").exists()
        act.apply(OSC, {"max_rpcs_in_flight": 4})  # originals saved afresh
        assert originals_json(state_dir)["originals"][f"osc.{OSC}.max_rpcs_in_flight"]["value"] == "8"
    act.close()
    act.close()
    assert value(root, "max_rpcs_in_flight") == "8"


def test_the_first_original_is_kept_across_several_writes(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir) as act:
        for rif in (16, 32, 2, 128):
            act.apply(OSC, {"max_rpcs_in_flight": rif})
        assert act.saved[f"osc.{OSC}.max_rpcs_in_flight"].value == "8"
    assert value(root, "max_rpcs_in_flight") == "8"


def test_originals_are_on_disk_before_every_write(root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = actuator_module.write_param
    applied: list[str] = []

    def checking_write(path: Path, text: str) -> None:
        # At the moment of any write, originals.json must already name this file...
        saved = originals_json(state_dir)["originals"]
        entries = [entry for entry in saved.values() if entry["path"] == str(path)]
        assert len(entries) == 1, f"{path} written before its original was saved"
        if text != entries[0]["value"]:  # ...and, unless this is the restore, hold what it holds now.
            assert entries[0]["value"] == path.read_text().strip()
            applied.append(path.name)
        real_write(path, text)

    monkeypatch.setattr(actuator_module, "write_param", checking_write)
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 64, "max_dirty_mb": 512})
        act.apply(LLITE, {"max_read_ahead_whole_mb": 2}, kind="llite")
    assert applied == ["max_pages_per_rpc", "max_rpcs_in_flight", "max_dirty_mb", "max_read_ahead_whole_mb"]
    assert value(root, "max_dirty_mb") == "2000"


def test_apply_many_saves_every_original_in_one_write_before_any_change(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One synced rewrite of originals.json per device made a 1,000-OSC node's first tick take 11 s.
    saves: list[int] = []
    real_save = state_module.write_json_atomically
    written: list[str] = []
    real_write = actuator_module.write_param

    def counting_save(path: Path, data: Any) -> None:
        saves.append(len(data["originals"]))
        real_save(path, data)

    def checking_write(path: Path, text: str) -> None:
        saved = originals_json(state_dir)["originals"]
        assert any(entry["path"] == str(path) for entry in saved.values()), f"{path} written before its original"
        written.append(path.name)
        real_write(path, text)

    monkeypatch.setattr(state_module, "write_json_atomically", counting_save)
    monkeypatch.setattr(actuator_module, "write_param", checking_write)
    with Actuator(root, state_dir) as act:
        results = act.apply_many(
            {
                OSC: {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 64},
                OSC2: {"max_rpcs_in_flight": 32},
                SERVER_OSC: {"max_rpcs_in_flight": 4},  # refused, without stopping the others
            }
        )
        assert saves == [5]  # both tunables and max_dirty_mb of OSC, max_rpcs_in_flight and max_dirty_mb of OSC2
        assert results[OSC] == {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 64}
        assert results[OSC2] == {"max_rpcs_in_flight": 32}
        assert isinstance(results[SERVER_OSC], LimitError)
        assert written == ["max_pages_per_rpc", "max_rpcs_in_flight", "max_rpcs_in_flight"]
        assert value(root, "max_rpcs_in_flight", OSC2) == "32"
        # Nothing new to save: no rewrite.
        act.apply_many({OSC: {"max_rpcs_in_flight": 8}, OSC2: {"max_rpcs_in_flight": 8}})
        assert saves == [5]
    assert value(root, "max_rpcs_in_flight") == "8"  # the default, restored
    assert value(root, "max_rpcs_in_flight", OSC2) == "8"
    assert value(root, "max_pages_per_rpc") == "1024"
    assert not (state_dir / "originals.json").exists()


def test_apply_many_goes_on_when_a_device_vanishes_after_planning(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_save_planned = Actuator._save_planned
    gone = param_path(root, "osc", OSC, "max_rpcs_in_flight")
    assert gone is not None

    def unmount_then_save(self: Actuator, kind: str, plans: Any) -> str | None:
        gone.unlink()  # OSC's file disappears between the plan and the save
        return real_save_planned(self, kind, plans)

    monkeypatch.setattr(Actuator, "_save_planned", unmount_then_save)
    with Actuator(root, state_dir) as act:
        results = act.apply_many({OSC: {"max_rpcs_in_flight": 16}, OSC2: {"max_rpcs_in_flight": 32}})
        assert isinstance(results[OSC], WriteError)
        assert "no such parameter file" in str(results[OSC])
        assert results[OSC2] == {"max_rpcs_in_flight": 32}
        assert set(originals_json(state_dir)["originals"]) == {
            f"osc.{OSC2}.max_rpcs_in_flight",
            f"osc.{OSC2}.max_dirty_mb",
        }
    assert value(root, "max_rpcs_in_flight", OSC2) == "8"


def test_apply_many_writes_nothing_when_the_originals_cannot_be_saved(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(path: Path, data: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with Actuator(root, state_dir) as act:
        monkeypatch.setattr(state_module, "write_json_atomically", full_disk)
        results = act.apply_many({OSC: {"max_rpcs_in_flight": 16}, OSC2: {"max_pages_per_rpc": 64}})
        for device, param, old in ((OSC, "max_rpcs_in_flight", 8), (OSC2, "max_pages_per_rpc", 1024)):
            err = results[device]
            assert isinstance(err, WriteError)
            assert "cannot save the original values" in str(err)
            assert err.in_force == {param: old}
        monkeypatch.undo()
    assert value(root, "max_rpcs_in_flight") == "8"
    assert value(root, "max_pages_per_rpc", OSC2) == "1024"


def test_originals_that_could_not_be_saved_are_saved_before_the_next_write(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One failed save (a full /run) must not count as saved: the next tick saves them first.
    real = state_module.write_json_atomically
    calls = []

    def full_once(path: Path, data: Any) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(state_module, "write_json_atomically", full_once)
    with Actuator(root, state_dir) as act:
        assert isinstance(act.apply_many({OSC: {"max_rpcs_in_flight": 64}})[OSC], WriteError)
        assert value(root, "max_rpcs_in_flight") == "8"
        assert act.apply_many({OSC: {"max_rpcs_in_flight": 64}})[OSC] == {"max_rpcs_in_flight": 64}
        assert originals_json(state_dir)["originals"][f"osc.{OSC}.max_rpcs_in_flight"]["value"] == "8"
    assert value(root, "max_rpcs_in_flight") == "8"


def test_a_short_write_of_the_originals_fails_and_keeps_the_old_file(tmp_path: Path) -> None:
    # A disk that fills part-way makes write() return a short count; the file that was there stays.
    path = tmp_path / "originals.json"
    state_module.write_json_atomically(path, {"a": 1})
    code = textwrap.dedent(
        f"""
        import resource, signal, sys
        from pathlib import Path
        from pfstune.lustre.state import write_json_atomically
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, resource.RLIM_INFINITY))
        try:
            write_json_atomically(Path({str(path)!r}), {{"a": "x" * 1000}})
        except OSError as err:
            sys.exit(f"refused: {{err}}")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "refused" in done.stderr
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["originals.json"]  # no temporary file left


def test_a_relative_root_is_saved_absolute(
    root: Path, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent that restores after a crash may start in another working directory.
    monkeypatch.chdir(root.parent)
    with Actuator(Path(root.name), state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 64})
        saved = originals_json(state_dir)
        assert saved["root"] == str(root)
        assert all(Path(o["path"]).is_absolute() for o in saved["originals"].values())
        act._originals = None  # a crash: nothing is restored on exit
        act._lock.release()
    monkeypatch.chdir(tmp_path)
    with Actuator(root, state_dir):
        assert value(root, "max_rpcs_in_flight") == "8"


def test_a_saved_relative_root_is_not_written_to(
    root: Path, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A file from a pfstune that saved relative paths: they would resolve in this agent's
    # working directory, perhaps in another tree, so the values are left for a person.
    monkeypatch.chdir(root.parent)
    relative = Path(root.name)
    path = param_path(relative, "osc", OSC, "max_rpcs_in_flight")
    assert path is not None
    state_dir.mkdir()
    state_module.write_json_atomically(
        state_dir / "originals.json",
        {
            "version": state_module.STATE_VERSION,
            "pid": 1,
            "root": str(relative),
            "started": "2026-01-01T00:00:00+00:00",
            "originals": {f"osc.{OSC}.max_rpcs_in_flight": {"path": str(path), "value": "4"}},
        },
    )
    with Actuator(root, state_dir):
        pass
    assert value(root, "max_rpcs_in_flight") == "8"
    assert "is not an absolute path" in caplog.text
    assert f"osc.{OSC}.max_rpcs_in_flight='4'" in caplog.text  # what to restore by hand


# ---- the allow-list and the ranges -----------------------------------------------------------------

BOUNDS_CASES = [
    # (kind, param, value, accepted)
    ("osc", "max_pages_per_rpc", 0, False),
    ("osc", "max_pages_per_rpc", 1, True),
    ("osc", "max_pages_per_rpc", 1024, True),  # brw_size 4 MiB
    ("osc", "max_pages_per_rpc", 1025, False),
    ("osc", "max_rpcs_in_flight", 0, False),
    ("osc", "max_rpcs_in_flight", 1, True),
    ("osc", "max_rpcs_in_flight", 256, True),
    ("osc", "max_rpcs_in_flight", 257, False),
    ("osc", "max_dirty_mb", -1, False),
    ("osc", "max_dirty_mb", 0, True),
    ("osc", "max_dirty_mb", 2047, True),
    ("osc", "max_dirty_mb", 2048, False),
    ("osc", "short_io_bytes", -1, False),
    ("osc", "short_io_bytes", 0, True),
    ("osc", "short_io_bytes", 1, False),
    ("osc", "short_io_bytes", 63, False),
    ("osc", "short_io_bytes", 64, True),
    ("osc", "short_io_bytes", 1 << 20, True),
    ("osc", "short_io_bytes", (1 << 20) + 1, False),
    ("osc", "checksums", -1, False),
    ("osc", "checksums", 0, True),
    ("osc", "checksums", 1, True),
    ("osc", "checksums", 2, False),
    ("llite", "max_read_ahead_mb", -1, False),
    ("llite", "max_read_ahead_mb", 0, True),
    ("llite", "max_read_ahead_mb", 4096, True),  # RAM/2 of 8 GiB
    ("llite", "max_read_ahead_mb", 4097, False),
    ("llite", "max_read_ahead_per_file_mb", -1, False),
    ("llite", "max_read_ahead_per_file_mb", 1024, True),  # max_read_ahead_mb
    ("llite", "max_read_ahead_per_file_mb", 1025, False),
    ("llite", "max_read_ahead_whole_mb", -1, False),
    ("llite", "max_read_ahead_whole_mb", 256, True),  # max_read_ahead_per_file_mb
    ("llite", "max_read_ahead_whole_mb", 257, False),
]


@pytest.mark.parametrize(("kind", "param", "number", "accepted"), BOUNDS_CASES)
def test_every_bound_plus_and_minus_one(
    tmp_path: Path, state_dir: Path, kind: str, param: str, number: int, accepted: bool
) -> None:
    root = build_tree(tmp_path / "root")
    device = OSC if kind == "osc" else LLITE
    before = tree_bytes(root)
    with Actuator(root, state_dir, ram_bytes=8 << 30) as act:
        lo, hi = act.bounds(device, param, kind)
        if accepted:
            assert lo <= number <= hi
            assert act.apply(device, {param: number}, kind) == {param: number}
            assert value(root, param, device, kind) == str(number)
        else:
            with pytest.raises(LimitError) as caught:
                act.apply(device, {param: number}, kind)
            message = str(caught.value)
            assert f"{kind}.{device}.{param}={number}" in message
            assert f"is out of range {lo}" in message
            assert f"..{hi}" in message
            assert "\n" not in message
            assert tree_bytes(root) == before
            assert not (state_dir / "originals.json").exists()


@pytest.mark.parametrize(("ram_gib", "hi"), [(4, 1024), (16, 2047)])
def test_max_dirty_mb_is_bounded_by_a_quarter_of_ram(tmp_path: Path, state_dir: Path, ram_gib: int, hi: int) -> None:
    root = build_tree(tmp_path / "root")
    with Actuator(root, state_dir, ram_bytes=ram_gib << 30) as act:
        assert act.bounds(OSC, "max_dirty_mb") == (0, hi)
        assert act.apply(OSC, {"max_dirty_mb": hi}) == {"max_dirty_mb": hi}
        with pytest.raises(LimitError, match=rf"max_dirty_mb={hi + 1} is out of range 0\.\.{hi}"):
            act.apply(OSC, {"max_dirty_mb": hi + 1})


def test_max_pages_per_rpc_is_bounded_by_the_servers_brw_size(tmp_path: Path, state_dir: Path) -> None:
    root = build_tree(tmp_path / "root", brw_size=16 << 20)
    with Actuator(root, state_dir) as act:
        assert act.bounds(OSC, "max_pages_per_rpc") == (1, 4096)
        assert act.apply(OSC, {"max_pages_per_rpc": 4096}) == {"max_pages_per_rpc": 4096}
        with pytest.raises(LimitError, match=r"1\.\.4096 \(server brw_size 16384 KiB\)"):
            act.apply(OSC, {"max_pages_per_rpc": 4097})


def test_max_pages_per_rpc_is_rounded_up_to_the_ost_chunk(tmp_path: Path, state_dir: Path) -> None:
    # A ZFS OST with 1 MiB records: the kernel rounds 8 pages up to 256.
    root = build_tree(tmp_path / "root", grant_block_size=1 << 20)
    with Actuator(root, state_dir) as act:
        assert act.apply(OSC, {"max_pages_per_rpc": 8}) == {"max_pages_per_rpc": 256}
        assert value(root, "max_pages_per_rpc") == "256"


def test_a_refused_value_writes_nothing_at_all(root: Path, state_dir: Path) -> None:
    before = tree_bytes(root)
    with Actuator(root, state_dir) as act:
        with pytest.raises(LimitError, match="max_rpcs_in_flight=300"):
            act.apply(OSC, {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 300})
        assert tree_bytes(root) == before
        # The agent logs it and goes on: the actuator still works.
        assert act.apply(OSC, {"max_rpcs_in_flight": 16}) == {"max_rpcs_in_flight": 16}


@pytest.mark.parametrize(
    ("kind", "param", "message"),
    [
        ("osc", "active", "not a parameter pfstune may write; allowed osc parameters: max_pages_per_rpc"),
        ("osc", "max_cached_mb", "not a parameter pfstune may write"),
        ("osc", "rpc_stats", "not a parameter pfstune may write"),
        ("llite", "statahead_max", "allowed llite parameters: max_read_ahead_mb"),
        ("mdc", "max_rpcs_in_flight", "pfstune writes only osc and llite parameters"),
    ],
)
def test_parameters_not_allow_listed_are_refused(
    root: Path, state_dir: Path, kind: str, param: str, message: str
) -> None:
    before = tree_bytes(root)
    device = LLITE if kind == "llite" else OSC
    with Actuator(root, state_dir) as act:
        with pytest.raises(LimitError, match=message):
            act.apply(device, {param: 1}, kind)
        with pytest.raises(LimitError, match=message):
            act.current(device, param, kind)
    assert tree_bytes(root) == before


@pytest.mark.parametrize("device", [SERVER_OSC, "testfs-clilov-ffff88105db50000", "../../etc", LLITE])
def test_only_client_osc_devices_are_touched(root: Path, state_dir: Path, device: str) -> None:
    before = tree_bytes(root)
    with Actuator(root, state_dir) as act, pytest.raises(LimitError, match="is not a client OSC"):
        act.apply(device, {"max_rpcs_in_flight": 16})
    assert tree_bytes(root) == before


def test_llite_instance_names_are_checked(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir) as act, pytest.raises(LimitError, match="is not an llite instance"):
        act.apply(OSC, {"max_read_ahead_mb": 16}, kind="llite")


def test_a_missing_device_is_an_actuator_error(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir) as act, pytest.raises(ActuatorError, match="no such parameter file"):
        act.apply("testfs-OST0009-osc-ffff88105db50000", {"max_rpcs_in_flight": 16})


def test_apply_outside_with_is_refused(root: Path, state_dir: Path) -> None:
    with pytest.raises(ActuatorError, match="with Actuator"):
        Actuator(root, state_dir).apply(OSC, {"max_rpcs_in_flight": 16})


def test_read_ahead_chain_is_written_outermost_first_and_restored(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir, ram_bytes=64 << 30) as act:
        # Raising both: max_read_ahead_mb must be in force before per_file is checked against it.
        act.apply(LLITE, {"max_read_ahead_per_file_mb": 2048, "max_read_ahead_mb": 4096}, kind="llite")
        assert value(root, "max_read_ahead_per_file_mb", LLITE, "llite") == "2048"
        # whole_mb is checked against the per_file value this apply sets, not the one on disk.
        with pytest.raises(LimitError, match=r"max_read_ahead_whole_mb=600 is out of range 0\.\.512"):
            act.apply(LLITE, {"max_read_ahead_per_file_mb": 512, "max_read_ahead_whole_mb": 600}, kind="llite")
        act.apply(LLITE, {"max_read_ahead_per_file_mb": 512, "max_read_ahead_whole_mb": 512}, kind="llite")
    assert [value(root, p, LLITE, "llite") for p in ("max_read_ahead_mb", "max_read_ahead_per_file_mb")] == [
        "1024",
        "256",
    ]
    assert value(root, "max_read_ahead_whole_mb", LLITE, "llite") == "4"


@pytest.mark.parametrize(
    ("param", "text", "number"),
    [
        ("max_pages_per_rpc", "256", 256),  # a bare number is pages
        ("max_pages_per_rpc", "4M", 1024),  # 1 MiB or more is bytes
        ("max_pages_per_rpc", "1048576", 256),
        ("max_rpcs_in_flight", "0x10", 16),  # kstrtouint base 0
        ("max_rpcs_in_flight", "010", 8),
        ("max_dirty_mb", "512\n", 512),
        ("short_io_bytes", "-1", 16384),  # back to the default
        ("short_io_bytes", "32K", 32768),
        ("checksums", "off", 0),
        ("checksums", "Y", 1),
    ],
)
def test_strings_mean_what_lctl_set_param_would_make_of_them(param: str, text: str, number: int) -> None:
    assert limits.rule("osc", param).validate(text, DeviceContext()) == number


@pytest.mark.parametrize(
    ("param", "text"),
    [("max_pages_per_rpc", "512K"), ("max_rpcs_in_flight", "sixteen"), ("max_dirty_mb", "0x10"), ("checksums", "2")],
)
def test_strings_the_kernel_refuses_are_refused(param: str, text: str) -> None:
    with pytest.raises(LimitError, match=param):
        limits.rule("osc", param).validate(text, DeviceContext())


def test_limits_docstring_examples_run() -> None:
    result = doctest.testmod(limits)
    assert result.attempted > 0
    assert result.failed == 0


def test_a_short_io_size_the_kernel_clamps_is_accepted(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    if layout == "2.10":
        pytest.skip("2.10 has no short_io_bytes")
    real_write = actuator_module.write_param
    monkeypatch.setattr(actuator_module, "write_param", lambda path, text: real_write(path, str(min(int(text), 61440))))
    with Actuator(root, state_dir) as act:
        assert act.apply(OSC, {"short_io_bytes": 1 << 20}) == {"short_io_bytes": 61440}


# ---- coupling -------------------------------------------------------------------------------------------


def fake_kernel(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make writes behave like client_adjust_max_dirty(): rif/mppr may raise max_dirty_mb; return the write log."""
    real_write = actuator_module.write_param
    log: list[str] = []

    def write(path: Path, text: str) -> None:
        real_write(path, text)
        log.append(f"{path.name}={text}")
        if path.name in ("max_rpcs_in_flight", "max_pages_per_rpc"):
            device = path.parent.name
            dirty_path = param_path(root, "osc", device, "max_dirty_mb")
            assert dirty_path is not None
            dirty = dirty_mb_after(
                int(value(root, "max_rpcs_in_flight", device)),
                int(value(root, "max_pages_per_rpc", device)),
                int(value(root, "max_dirty_mb", device)),
                None,
            )
            dirty_path.write_text(f"{dirty}\n")

    monkeypatch.setattr(actuator_module, "write_param", write)
    return log


def test_coupled_max_dirty_mb_is_saved_and_restored_last(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # An admin set max_dirty_mb below one RPC window (8 x 4 MiB = 32 MiB): restoring rif after
    # max_dirty_mb would let the kernel raise it again, so max_dirty_mb must be restored last.
    root = build_tree(tmp_path / "root", osc_values={"max_dirty_mb": "16\n"})
    log = fake_kernel(root, monkeypatch)
    caplog.set_level(logging.INFO)
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 64})
        assert value(root, "max_dirty_mb") == "256"  # 64 x 4 MiB
        assert originals_json(state_dir)["originals"][f"osc.{OSC}.max_dirty_mb"]["value"] == "16"
        assert "max_dirty_mb from 16 to 256" in caplog.text
        log.clear()
    assert log == ["max_rpcs_in_flight=8", "max_dirty_mb=16"]
    assert value(root, "max_rpcs_in_flight") == "8"
    assert value(root, "max_dirty_mb") == "16"


def test_max_dirty_mb_raised_by_the_kernel_after_our_own_write_is_not_an_outside_change(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake_kernel(root, monkeypatch)
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_dirty_mb": 64})
        assert act.apply(OSC, {"max_rpcs_in_flight": 128}) == {"max_rpcs_in_flight": 128}
        assert value(root, "max_dirty_mb") == "512"  # 128 x 4 MiB
        assert act.apply(OSC, {"max_rpcs_in_flight": 16}) == {"max_rpcs_in_flight": 16}
        assert not act.left_alone
    assert "changed outside pfstune" not in caplog.text
    assert value(root, "max_rpcs_in_flight") == "8"
    assert value(root, "max_dirty_mb") == "2000"


def test_explicit_max_dirty_mb_is_written_after_the_tunables_that_raise_it(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_kernel(root, monkeypatch)
    with Actuator(root, state_dir) as act:
        in_force = act.apply(OSC, {"max_dirty_mb": 100, "max_rpcs_in_flight": 256, "max_pages_per_rpc": 1024})
        assert log == ["max_rpcs_in_flight=256", "max_dirty_mb=100"]  # max_pages_per_rpc already 1024
        assert in_force == {"max_dirty_mb": 100, "max_rpcs_in_flight": 256, "max_pages_per_rpc": 1024}
        assert value(root, "max_dirty_mb") == "100"


# ---- values someone else changes ---------------------------------------------------------------------


def admin_sets(root: Path, param: str, text: str, device: str = OSC) -> None:
    """What `lctl set_param` by hand does to the file while the agent runs."""
    path = param_path(root, "osc", device, param)
    assert path is not None
    path.write_text(text)


def test_a_value_an_administrator_changes_is_kept_and_its_device_left_alone(
    root: Path, state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 256})
        act.apply(OSC2, {"max_rpcs_in_flight": 64})
        admin_sets(root, "max_rpcs_in_flight", "32")
        # The next decision for that OSC writes nothing (not even the other parameter) and says why, once.
        assert act.apply(OSC, {"max_rpcs_in_flight": 4, "max_pages_per_rpc": 64}) == {
            "max_rpcs_in_flight": 32,
            "max_pages_per_rpc": 256,
        }
        assert act.apply(OSC, {"max_rpcs_in_flight": 4}) == {"max_rpcs_in_flight": 32}
        assert caplog.text.count("changed outside pfstune") == 1
        assert f"osc.{OSC}.max_rpcs_in_flight changed outside pfstune (pfstune left 16, now 32)" in caplog.text
        assert f"osc.{OSC}.max_rpcs_in_flight" not in originals_json(state_dir)["originals"]
        assert act.apply(OSC2, {"max_rpcs_in_flight": 128}) == {"max_rpcs_in_flight": 128}  # the others go on
    assert value(root, "max_rpcs_in_flight") == "32"  # the administrator's value stays
    assert value(root, "max_pages_per_rpc") == "1024"  # what pfstune changed and nobody else did is put back
    assert value(root, "max_rpcs_in_flight", OSC2) == "8"
    assert not (state_dir / "originals.json").exists()


def test_a_change_made_after_the_last_write_is_kept_at_exit(
    root: Path, state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_pages_per_rpc": 256})
        admin_sets(root, "max_pages_per_rpc", "512\n")
    assert value(root, "max_pages_per_rpc") == "512"
    assert "changed outside pfstune (pfstune left 256, now 512)" in caplog.text
    assert not (state_dir / "originals.json").exists()


def test_letting_go_survives_a_state_file_that_cannot_be_rewritten(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 16})
        admin_sets(root, "max_rpcs_in_flight", "32")

        def disk_full(self: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as patch:
            patch.setattr(actuator_module.OriginalsFile, "_write", disk_full)
            assert act.apply(OSC, {"max_rpcs_in_flight": 4}) == {"max_rpcs_in_flight": 32}
        assert "cannot update" in caplog.text
    assert value(root, "max_rpcs_in_flight") == "32"


def test_values_restored_by_pfstune_itself_are_not_outside_changes(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 64})
        act.restore()
        assert act.apply(OSC, {"max_rpcs_in_flight": 4}) == {"max_rpcs_in_flight": 4}
    assert value(root, "max_rpcs_in_flight") == "8"


# ---- what the kernel says ------------------------------------------------------------------------------


def test_a_value_that_does_not_read_back_is_reported_and_undone(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_write = actuator_module.write_param

    def stubborn_kernel(path: Path, text: str) -> None:
        # Accepts the write, then shows something else (a kernel that clamps silently).
        real_write(path, str(int(text) // 2) if path.name == "max_rpcs_in_flight" and text == "64" else text)

    monkeypatch.setattr(actuator_module, "write_param", stubborn_kernel)
    with Actuator(root, state_dir) as act:
        with pytest.raises(WriteError) as caught:
            act.apply(OSC, {"max_rpcs_in_flight": 64, "max_pages_per_rpc": 512})
        err = caught.value
        assert isinstance(err, ActuatorError)
        assert err.in_force == {"max_rpcs_in_flight": 8, "max_pages_per_rpc": 512}
        assert set(err.failures) == {"max_rpcs_in_flight"}
        assert "max_rpcs_in_flight=64 but it reads 32" in str(err)
        assert value(root, "max_rpcs_in_flight") == "8"  # the old value was put back
        assert value(root, "max_pages_per_rpc") == "512"  # the other change was made
    assert "reads 32" in caplog.text


def test_a_file_that_ignores_writes_is_not_silently_accepted(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actuator_module, "write_param", lambda path, text: None)
    with Actuator(root, state_dir) as act, pytest.raises(WriteError, match="but it reads 8") as caught:
        act.apply(OSC, {"max_rpcs_in_flight": 16})
    assert caught.value.in_force == {"max_rpcs_in_flight": 8}


@pytest.mark.parametrize(("code", "text"), [(errno.ERANGE, "Numerical result out of range"), (errno.EINVAL, "Invalid")])
def test_a_kernel_error_is_reported_and_the_old_value_stays(
    root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, code: int, text: str
) -> None:
    real_write = actuator_module.write_param

    def kernel(path: Path, value_text: str) -> None:
        if path.name == "max_rpcs_in_flight":
            raise OSError(code, os.strerror(code), str(path))
        real_write(path, value_text)

    monkeypatch.setattr(actuator_module, "write_param", kernel)
    with Actuator(root, state_dir) as act:
        with pytest.raises(WriteError, match=text) as caught:
            act.apply(OSC, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 64})
        assert caught.value.in_force == {"max_rpcs_in_flight": 8, "max_pages_per_rpc": 64}
        assert f"osc.{OSC}.max_rpcs_in_flight=16" in str(caught.value)
        assert value(root, "max_rpcs_in_flight") == "8"


def test_permission_denied_on_a_parameter_file(root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def denying_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(path).startswith(str(root)) and flags & os.O_WRONLY:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denying_open)
    before = tree_bytes(root)
    with Actuator(root, state_dir) as act, pytest.raises(ActuatorPermissionError) as caught:
        act.apply(OSC, {"max_rpcs_in_flight": 16})
    message = str(caught.value)
    assert isinstance(caught.value, UserError)
    assert not isinstance(caught.value, ActuatorError)  # the agent must stop, not log it every tick
    assert "needs root" in message
    assert "--dry-run" in message
    assert "\n" not in message
    assert tree_bytes(root) == before
    # The original saved before the failed write was at its value already: nothing left behind.
    assert not (state_dir / "originals.json").exists()


def test_permission_denied_on_the_state_directory(root: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def denying_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(path).startswith(str(state_dir)):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denying_open)
    with pytest.raises(ActuatorPermissionError, match=r"needs root .*--dry-run"):
        Actuator(root, state_dir).__enter__()


# ---- dry run -----------------------------------------------------------------------------------------


def test_dry_run_prints_lctl_lines_once_and_writes_nothing(root: Path, state_dir: Path) -> None:
    before = tree_bytes(root)
    lines: list[str] = []
    with Actuator(root, state_dir, dry_run=True, echo=lines.append) as act:
        assert act.apply(OSC, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 256}) == {
            "max_rpcs_in_flight": 16,
            "max_pages_per_rpc": 256,
        }
        # The next tick asks for the same: nothing more is printed.
        act.apply(OSC, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 256})
        assert act.current(OSC, "max_rpcs_in_flight") == 16
        act.apply(OSC, {"max_rpcs_in_flight": 8})  # back to what the file holds: printed, it is a change
        act.apply(LLITE, {"max_read_ahead_mb": 64}, kind="llite")
        act.apply(OSC, {"max_rpcs_in_flight": 8})
    assert lines == [
        f"lctl set_param osc.{OSC}.max_pages_per_rpc=256",
        f"lctl set_param osc.{OSC}.max_rpcs_in_flight=16",
        f"lctl set_param osc.{OSC}.max_rpcs_in_flight=8",
        f"lctl set_param llite.{LLITE}.max_read_ahead_mb=64",
    ]
    assert not any("-P" in line for line in lines)
    assert tree_bytes(root) == before
    assert not state_dir.exists()


def test_dry_run_prints_to_stdout_by_default(root: Path, state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Actuator(root, state_dir, dry_run=True) as act:
        act.apply(OSC, {"max_rpcs_in_flight": 32})
    assert capsys.readouterr().out == f"lctl set_param osc.{OSC}.max_rpcs_in_flight=32\n"


def test_dry_run_still_refuses_what_a_real_run_would(root: Path, state_dir: Path) -> None:
    lines: list[str] = []
    with Actuator(root, state_dir, dry_run=True, echo=lines.append) as act:
        with pytest.raises(LimitError):
            act.apply(OSC, {"max_rpcs_in_flight": 0})
        with pytest.raises(LimitError):
            act.apply(SERVER_OSC, {"max_rpcs_in_flight": 16})
    assert lines == []


def test_dry_run_needs_no_lock(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir), Actuator(root, state_dir, dry_run=True, echo=lambda line: None) as dry:
        dry.apply(OSC, {"max_rpcs_in_flight": 16})
    assert value(root, "max_rpcs_in_flight") == "8"


def test_a_dry_run_beside_a_running_agent_does_not_call_its_changes_a_crash(
    root: Path, state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with Actuator(root, state_dir) as live:
        live.apply(OSC, {"max_rpcs_in_flight": 16})
        saved = (state_dir / "originals.json").read_bytes()
        with Actuator(root, state_dir, dry_run=True, echo=lambda line: None):
            pass
    assert f"an agent (pid {os.getpid()}) is running on this node" in caplog.text
    assert "did not restore" not in caplog.text
    # the same originals with no agent holding the lock: those of one that crashed
    caplog.clear()
    (state_dir / "originals.json").write_bytes(saved)
    with Actuator(root, state_dir, dry_run=True, echo=lambda line: None):
        pass
    assert "a previous agent did not restore its changes" in caplog.text
    assert "is running on this node" not in caplog.text


# ---- one agent per node, and crashes --------------------------------------------------------------------


def test_a_second_actuator_on_the_same_state_dir_is_refused(root: Path, state_dir: Path) -> None:
    with Actuator(root, state_dir) as first:
        first.apply(OSC, {"max_rpcs_in_flight": 16})
        with pytest.raises(UserError, match=rf"another pfstune agent \(pid {os.getpid()}\)"):
            Actuator(root, state_dir).__enter__()
        assert value(root, "max_rpcs_in_flight") == "16"  # the refused one restored nothing
    with Actuator(root, state_dir):
        pass  # the lock is free again


CRASHING_AGENT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from pfstune.lustre import actuator

    root, state_dir, device, when = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    real_write = actuator.write_param

    def write(path, text):
        if when == "before-first-write":
            os.kill(os.getpid(), signal.SIGKILL)
        real_write(path, text)
        if when == "after-first-write":
            os.kill(os.getpid(), signal.SIGKILL)

    actuator.write_param = write
    with actuator.Actuator(root, state_dir) as act:
        act.apply(device, {"max_rpcs_in_flight": 64, "max_pages_per_rpc": 256})
        act.apply("testfs-ffff88105db50000", {"max_read_ahead_mb": 8}, kind="llite")
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.parametrize("when", ["before-first-write", "after-first-write", "after-apply"])
def test_the_next_agent_restores_what_a_killed_one_changed(
    root: Path, state_dir: Path, tmp_path: Path, when: str, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "crash.py"
    script.write_text(CRASHING_AGENT)
    done = subprocess.run(
        [sys.executable, str(script), str(root), str(state_dir), OSC, when], capture_output=True, timeout=60
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    saved = originals_json(state_dir)
    assert saved["pid"] != os.getpid()
    assert f"osc.{OSC}.max_pages_per_rpc" in saved["originals"]
    if when == "after-apply":
        assert value(root, "max_rpcs_in_flight") == "64"
        assert value(root, "max_read_ahead_mb", LLITE, "llite") == "8"
    if when == "after-first-write":
        assert value(root, "max_pages_per_rpc") == "256"

    caplog.set_level(logging.INFO)
    with Actuator(root, state_dir) as act:
        assert not (state_dir / "originals.json").exists()
        assert act.current(OSC, "max_rpcs_in_flight") == 8
        assert act.current(OSC, "max_pages_per_rpc") == 1024
        assert act.current(LLITE, "max_read_ahead_mb", kind="llite") == 1024
    assert "did not restore" in caplog.text
    if when != "before-first-write":
        assert f"restored osc.{OSC}.max_pages_per_rpc=1024 (was 256)" in caplog.text


def test_on_the_real_2_10_fixture(tmp_path: Path, state_dir: Path) -> None:
    fixture = SHARED / "fixtures" / "lustre-2.10-client"
    if not fixture.is_dir():
        pytest.skip("shared/fixtures/lustre-2.10-client is not beside this checkout")
    root = tmp_path / "root"
    shutil.copytree(fixture, root)
    device = "lustrefs-OST0000-osc-ffff88105db50000"
    with Actuator(root, state_dir) as act:
        # Its OSTs have 1 MiB grant blocks: max_pages_per_rpc moves in chunks of 256 pages.
        assert act.bounds(device, "max_pages_per_rpc") == (1, 1024)
        assert act.apply(device, {"max_rpcs_in_flight": 16, "max_pages_per_rpc": 100}) == {
            "max_rpcs_in_flight": 16,
            "max_pages_per_rpc": 256,
        }
        assert (root / "proc/fs/lustre/osc" / device / "max_rpcs_in_flight").read_text() == "16"
        with pytest.raises(LimitError):
            act.apply("lustrefs-OST0000-osc-MDT0000", {"max_rpcs_in_flight": 16})
    assert (root / "proc/fs/lustre/osc" / device / "max_rpcs_in_flight").read_text().strip() == "8"
    assert (root / "proc/fs/lustre/osc" / device / "max_pages_per_rpc").read_text().strip() == "1024"


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_parameter_file_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    # sysfs and procfs files are regular files; a FIFO in a tunable's place blocked open() (and
    # SIGTERM with it), /dev/zero never ended a read
    from pfstune.lustre.actuator import read_param, write_param

    path = tmp_path / "max_rpcs_in_flight"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        read_param(path)
    if kind == "/dev/zero":
        with pytest.raises(OSError, match="not a regular file"):
            write_param(path, "8")
    else:  # no reader: O_NONBLOCK makes open() fail at once (ENXIO) instead of waiting for one
        with pytest.raises(OSError, match=r"No such device or address|not a regular file"):
            write_param(path, "8")


def test_a_value_that_is_not_ascii_is_an_os_error(tmp_path: Path) -> None:
    from pfstune.lustre.actuator import write_param

    path = tmp_path / "max_rpcs_in_flight"
    path.write_text("8")
    with pytest.raises(OSError, match="is not ASCII"):
        write_param(path, "\u00e9")
    assert path.read_text() == "8"
