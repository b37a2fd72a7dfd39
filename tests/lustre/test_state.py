"""The state directory: the agent lock, originals.json written atomically, crash recovery."""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pfstune.errors import UserError
from pfstune.lustre.state import (
    AgentLock,
    Original,
    OriginalsFile,
    load_originals,
    recover,
    restore_originals,
    write_json_atomically,
)
from tests.lustre._fake_client import LLITE, OSC, build_tree


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "run" / "pfstune"


# ---- the lock --------------------------------------------------------------------------------------


def test_lock_holds_our_pid_and_refuses_a_second_holder(state_dir: Path) -> None:
    first = AgentLock(state_dir)
    first.acquire()
    assert first.held
    assert (state_dir / "agent.lock").read_text() == f"{os.getpid()}\n"
    second = AgentLock(state_dir)
    with pytest.raises(UserError, match=rf"another pfstune agent \(pid {os.getpid()}\) is running"):
        second.acquire()
    assert not second.held
    first.release()
    first.release()  # idempotent
    second.acquire()
    assert second.held
    second.release()
    assert (state_dir / "agent.lock").exists()  # never removed: see the module docstring


LOCK_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pfstune.lustre.state import AgentLock

    AgentLock(Path(sys.argv[1])).acquire()
    print("locked", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.parametrize(("where", "reason"), [("file", "a file is in the way"), ("file/sub", "Not a directory")])
def test_a_state_directory_that_cannot_be_made_is_a_user_error(tmp_path: Path, where: str, reason: str) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match=rf"cannot use .*{where} as the agent's state directory \({reason}\)"):
        AgentLock(tmp_path / where).acquire()


def test_lock_names_another_process_and_is_freed_when_it_is_killed(state_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(LOCK_HOLDER)
    holder = subprocess.Popen([sys.executable, str(script), str(state_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(UserError, match=rf"\(pid {holder.pid}\)"):
            AgentLock(state_dir).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    lock = AgentLock(state_dir)
    lock.acquire()  # the kernel dropped the dead holder's flock
    lock.release()


# ---- originals.json -----------------------------------------------------------------------------------


def test_originals_file_format_and_first_value_wins(state_dir: Path, tmp_path: Path) -> None:
    state_dir.mkdir(parents=True)
    originals = OriginalsFile(state_dir, tmp_path / "root")
    name = f"osc.{OSC}.max_rpcs_in_flight"
    assert originals.save({name: Original("/x/max_rpcs_in_flight", "8")}) == [name]
    assert originals.save({name: Original("/x/max_rpcs_in_flight", "16")}) == []  # not the first value
    data = json.loads((state_dir / "originals.json").read_text())
    assert set(data) == {"version", "pid", "root", "started", "originals"}
    assert (data["version"], data["pid"], data["root"]) == (1, os.getpid(), str(tmp_path / "root"))
    assert data["originals"] == {name: {"path": "/x/max_rpcs_in_flight", "value": "8"}}
    loaded = load_originals(state_dir)
    assert loaded is not None
    assert loaded.originals == {name: Original("/x/max_rpcs_in_flight", "8")}
    originals.forget([name])
    assert not (state_dir / "originals.json").exists()
    assert load_originals(state_dir) is None


def test_atomic_write_leaves_the_old_file_when_interrupted(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state_dir.mkdir(parents=True)
    path = state_dir / "originals.json"
    write_json_atomically(path, {"a": 1})

    def failing_replace(src: object, dst: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="I/O error"):
        write_json_atomically(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in state_dir.iterdir()) == ["originals.json"]  # no temporary file left


def test_atomic_write_fsyncs_file_and_directory(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state_dir.mkdir(parents=True)
    synced: list[bool] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.path.isdir(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    write_json_atomically(state_dir / "originals.json", {})
    assert synced == [False, True]


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"version": 2, "pid": 1, "root": "/", "started": "", "originals": {}}),
        json.dumps({"version": 1, "pid": 1, "root": "/", "started": ""}),
        json.dumps([1, 2]),
    ],
)
def test_a_damaged_originals_file_is_a_user_error(state_dir: Path, text: str) -> None:
    state_dir.mkdir(parents=True)
    (state_dir / "originals.json").write_text(text)
    with pytest.raises(UserError, match=r"not a pfstune originals file.*by hand"):
        load_originals(state_dir)


# ---- restore and recovery -----------------------------------------------------------------------------


def saved_state(state_dir: Path, root: Path, values: dict[str, tuple[str, str]]) -> None:
    """Write an originals.json as a killed agent would have left it: {lctl name: (relative path, value)}."""
    state_dir.mkdir(parents=True, exist_ok=True)
    originals = {name: {"path": str(root / rel), "value": val} for name, (rel, val) in values.items()}
    data = {"version": 1, "pid": 999999, "root": str(root), "started": "2024-06-10T12:00:00+00:00"}
    (state_dir / "originals.json").write_text(json.dumps({**data, "originals": originals}))


def test_recover_restores_in_coupling_order_logs_each_and_removes_the_file(
    state_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = build_tree(tmp_path / "root")
    sys_osc, proc_osc = f"sys/fs/lustre/osc/{OSC}", f"proc/fs/lustre/osc/{OSC}"
    (root / sys_osc / "max_rpcs_in_flight").write_text("64")
    (root / sys_osc / "max_dirty_mb").write_text("256")
    (root / proc_osc / "max_pages_per_rpc").write_text("16")
    saved_state(
        state_dir,
        root,
        {
            f"osc.{OSC}.max_dirty_mb": (f"{sys_osc}/max_dirty_mb", "2000"),
            f"osc.{OSC}.max_rpcs_in_flight": (f"{sys_osc}/max_rpcs_in_flight", "8"),
            f"osc.{OSC}.max_pages_per_rpc": (f"{proc_osc}/max_pages_per_rpc", "1024"),
            f"llite.{LLITE}.max_read_ahead_mb": (f"sys/fs/lustre/llite/{LLITE}/max_read_ahead_mb", "1024"),
        },
    )
    (state_dir / ".originals.json.4242.partial").write_text("{")  # a kill between write and rename
    writes: list[str] = []

    def write(path: Path, text: str) -> None:
        writes.append(path.name)
        path.write_text(text)

    caplog.set_level(logging.INFO)
    done = recover(state_dir, read=lambda p: p.read_text(), write=write)
    assert writes == ["max_pages_per_rpc", "max_rpcs_in_flight", "max_dirty_mb"]  # llite already at its value
    assert len(done) == 4
    assert (root / sys_osc / "max_rpcs_in_flight").read_text() == "8"
    assert (root / sys_osc / "max_dirty_mb").read_text() == "2000"
    assert not (state_dir / "originals.json").exists()
    assert not list(state_dir.glob(".*.partial"))
    assert "pid 999999" in caplog.text
    assert f"restored osc.{OSC}.max_rpcs_in_flight=8 (was 64)" in caplog.text
    assert recover(state_dir, read=lambda p: p.read_text(), write=write) == []


def test_recover_refuses_entries_that_are_not_allow_listed_lustre_files(
    state_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = build_tree(tmp_path / "root")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    saved_state(
        state_dir,
        root,
        {
            f"osc.{OSC}.max_rpcs_in_flight": (str(victim), "8"),  # absolute path outside the tree
            f"osc.{OSC}.active": (f"sys/fs/lustre/osc/{OSC}/active", "0"),  # not allow-listed
            "osc.testfs-OST0000-osc-MDT0000.max_rpcs_in_flight": (
                "sys/fs/lustre/osc/testfs-OST0000-osc-MDT0000/max_rpcs_in_flight",
                "1",
            ),  # a server device
        },
    )
    writes: list[Path] = []
    recover(state_dir, read=lambda p: p.read_text(), write=lambda p, t: writes.append(p))
    assert writes == []
    assert victim.read_text() == "precious"
    assert caplog.text.count("not restoring") == 3
    # the file is gone, so the log names each value for a person to restore by hand
    assert f"osc.{OSC}.active='0'" in caplog.text
    assert "restore them by hand" in caplog.text
    assert not (state_dir / "originals.json").exists()


def _changed_osc(tmp_path: Path, **values: str) -> tuple[Path, Path]:
    """A client tree whose first OSC's sysfs files hold ``values`` (as an agent left them)."""
    root = build_tree(tmp_path / "root")
    sys_osc = root / f"sys/fs/lustre/osc/{OSC}"
    for param, value in values.items():
        (sys_osc / param).write_text(value)
    return root, sys_osc


def test_restore_counts_a_vanished_device_as_done_and_reports_kernel_errors(tmp_path: Path) -> None:
    root, sys_osc = _changed_osc(tmp_path, max_rpcs_in_flight="64", max_dirty_mb="300")
    originals = {
        f"osc.{OSC}.max_rpcs_in_flight": Original(str(sys_osc / "max_rpcs_in_flight"), "8"),
        f"osc.{OSC}.max_dirty_mb": Original(str(sys_osc / "max_dirty_mb"), "2000"),
        "osc.testfs-OST0007-osc-ffff88105db50000.max_rpcs_in_flight": Original(
            str(root / "sys/fs/lustre/osc/testfs-OST0007-osc-ffff88105db50000/max_rpcs_in_flight"), "8"
        ),
    }

    def write(path: Path, text: str) -> None:
        if path.name == "max_dirty_mb":
            raise OSError(errno.ERANGE, os.strerror(errno.ERANGE))
        path.write_text(text)

    done, failed = restore_originals(originals, root=str(root), read=lambda p: p.read_text(), write=write)
    assert sorted(done) == sorted(
        [f"osc.{OSC}.max_rpcs_in_flight", "osc.testfs-OST0007-osc-ffff88105db50000.max_rpcs_in_flight"]
    )
    assert list(failed) == [f"osc.{OSC}.max_dirty_mb"]
    assert "Numerical result out of range" in failed[f"osc.{OSC}.max_dirty_mb"]


def test_recover_without_permission_keeps_the_file(state_dir: Path, tmp_path: Path) -> None:
    root = build_tree(tmp_path / "root")
    path = f"sys/fs/lustre/osc/{OSC}/max_rpcs_in_flight"
    (root / path).write_text("64")
    saved_state(state_dir, root, {f"osc.{OSC}.max_rpcs_in_flight": (path, "8")})

    def write(p: Path, text: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(p))

    with pytest.raises(PermissionError):
        recover(state_dir, read=lambda p: p.read_text(), write=write)
    assert (state_dir / "originals.json").exists()


def test_an_original_that_is_not_an_integer_is_not_written_back(tmp_path: Path) -> None:
    # a state file is input: a value written back as root must be what such a parameter holds
    root, sys_osc = _changed_osc(tmp_path, max_rpcs_in_flight="64", max_pages_per_rpc="64")
    originals = {
        f"osc.{OSC}.max_rpcs_in_flight": Original(str(sys_osc / "max_rpcs_in_flight"), "abc\n9"),
        f"osc.{OSC}.max_pages_per_rpc": Original(str(sys_osc / "max_pages_per_rpc"), "\u0661\u0660\u0662\u0664"),
    }
    written: list[Path] = []
    done, failed = restore_originals(
        originals, root=str(root), read=lambda p: p.read_text(), write=lambda p, t: written.append(p)
    )
    assert done == []
    assert written == []
    assert all("is not an integer" in why for why in failed.values()), failed


@pytest.mark.parametrize("kind", ["not utf-8", "a directory"])
def test_an_unreadable_originals_file_is_a_user_error(state_dir: Path, kind: str) -> None:
    state_dir.mkdir(parents=True)
    path = state_dir / "originals.json"
    if kind == "a directory":
        path.mkdir()
    else:
        path.write_bytes(b"\xff\xfe{")
    with pytest.raises(UserError, match="cannot read it as a pfstune originals file"):
        load_originals(state_dir)
