"""Prober: exact snapshots of the 2.10 fixture tree and of a pfsim 2.15 tree, and every kind of
damage a live client can show (each one: no exception, one warning, no wrong value)."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pfstune.lustre import snapshot as snapshot_module
from pfstune.lustre.snapshot import (
    DEFAULT_FILES,
    LLITE_FILES,
    MINIMAL_FILES,
    OSC_FILES,
    Prober,
    merge_param,
    parse_param,
)
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree
from tests.conftest import SHARED

FIXTURE = SHARED / "fixtures" / "lustre-2.10-client"
INSTANCE = "ffff88105db50000"
OST0 = f"lustrefs-OST0000-osc-{INSTANCE}"
OST1 = f"lustrefs-OST0001-osc-{INSTANCE}"
LLITE = f"lustrefs-{INSTANCE}"
CLIENT_OSCS = [f"lustrefs-OST000{i}-osc-{INSTANCE}" for i in range(7)]


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.LogCaptureFixture]:
    """caplog for the pfstune.lustre logger, even if a JSON log set-up turned propagation off."""
    monkeypatch.setattr(logging.getLogger("pfstune"), "propagate", True)
    with caplog.at_level(logging.DEBUG, logger="pfstune.lustre"):
        yield caplog


def warnings(log: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in log.records if r.name == "pfstune.lustre" and r.levelno == logging.WARNING]


def copy_tree(source: Path, target: Path) -> Path:
    """Copy a tree with every file and directory writable (the fixture is read-only)."""
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for directory, _, files in os.walk(target):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
    return target


def overwrite(path: Path, text: str) -> None:
    path.chmod(0o644)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the real 2.10 client tree."""
    return copy_tree(FIXTURE, tmp_path / "client")


@pytest.fixture
def sim_tree(small_scenario: Path, tmp_path: Path) -> tuple[Engine, Path]:
    """A pfsim 2.15.5 client tree (sysfs, procfs and debugfs) after 0.5 simulated seconds."""
    engine = Engine(load_scenario(small_scenario))
    engine.run(until_ns=500_000_000)
    root = tmp_path / "sim"
    VirtualTree(engine, 0, root, log=lambda line: None).refresh()
    return engine, root


def osc_dir(root: Path, name: str = OST0) -> Path:
    return root / "proc/fs/lustre/osc" / name


# --- exact snapshots -------------------------------------------------------------------------


def test_fixture_tree_snapshot_is_exact(log: pytest.LogCaptureFixture) -> None:
    prober = Prober(FIXTURE)
    snap = prober.probe(12.5)
    assert snap["time"] == 12.5
    assert list(snap["osc"]) == CLIENT_OSCS  # the server's -osc-MDT0000 devices are not here
    osc = snap["osc"][OST0]
    assert osc["tunables"] == {
        "max_pages_per_rpc": 1024,
        "max_rpcs_in_flight": 8,
        "max_dirty_mb": 32,
        "cur_dirty_bytes": 27815936,
        "cur_grant_bytes": 262144,
        "cur_lost_grant_bytes": 655360,
        "cur_dirty_grant_bytes": 69074944,
        "checksums": 1,
        "checksum_type": "crc32 adler [crc32c]",
        "resend_count": 10,
        "grant_shrink_interval": 1200,
        "active": 1,
    }  # 2.10 has no short_io_bytes or idle_timeout: absent, not made up
    assert osc["stats"]["req_waittime"] == {
        "samples": 18215581,
        "unit": "usec",
        "min": 69,
        "max": 1348857,
        "sum": 110282569237,
        "sumsq": 8342874290406023,
    }
    assert osc["stats"]["write_bytes"]["sumsq"] == 10009909738331963392
    assert osc["stats_header"] == {"snapshot_time": 1510950459.787092770}
    assert osc["rpc_stats"]["pending_write_pages"] == 1244
    assert osc["rpc_stats"]["rpcs_in_flight"]["write"][0] == 0
    assert osc["rpc_stats"]["pages_per_rpc"]["write"][1024] == 16389010
    assert osc["import"]["connect_data"]["max_brw_size"] == 4194304
    assert osc["import"]["rpcs"]["avg_waittime"] == "6054 usec"
    assert osc["osc_stats"] == {"lockless_write_bytes": 0, "lockless_read_bytes": 0, "lockless_truncate": 0}
    assert snap["osc"][OST1]["tunables"]["cur_grant_bytes"] == 9699328
    assert "write_bytes" not in snap["osc"][OST1]["stats"]

    assert list(snap["llite"]) == [LLITE]
    llite = snap["llite"][LLITE]
    assert llite["osc"] == CLIENT_OSCS
    assert llite["stats"]["write_bytes"]["sum"] == 93813797294080
    assert llite["stats"]["open"]["unit"] == "regs"
    assert llite["read_ahead_stats"] == {}
    assert llite["max_cached_mb"]["max_cached_mb"] == 32064
    assert llite["tunables"]["max_read_ahead_mb"] == 64
    assert llite["tunables"]["checksum_pages"] == 1
    assert warnings(log) == []
    assert prober.issues == []


def test_minimal_files_and_osc_glob() -> None:
    snap = Prober(FIXTURE, "*OST000[01]*", files=MINIMAL_FILES).probe(0.0)
    assert list(snap["osc"]) == [OST0, OST1]
    osc = snap["osc"][OST0]
    assert set(osc) == {"rpc_stats", "stats", "stats_header", "tunables"}
    assert set(osc["tunables"]) == {
        "max_pages_per_rpc",
        "max_rpcs_in_flight",
        "max_dirty_mb",
        "cur_dirty_bytes",
        "cur_grant_bytes",
    }
    assert set(snap["llite"]) == {LLITE}
    assert set(snap["llite"][LLITE]) == {"osc", "stats", "stats_header"}
    assert snap["llite"][LLITE]["osc"] == [OST0, OST1]


def test_file_names_are_checked() -> None:
    assert {f"osc.{name}" for name in OSC_FILES} <= DEFAULT_FILES
    assert {f"llite.{name}" for name in LLITE_FILES} <= DEFAULT_FILES
    for bad in ("rpc_stats", "mdc.rpc_stats", "osc.", "osc.a.b", "osc.../x"):
        with pytest.raises(ValueError, match=r"osc\.<file>"):
            Prober(FIXTURE, files=[bad])
    # A one-line file outside the default lists can be asked for.
    snap = Prober(FIXTURE, files=["osc.lockless_truncate"]).probe(0.0)
    assert snap["osc"][OST0]["tunables"] == {"lockless_truncate": 0}


def test_sim_tree_snapshot_matches_the_simulator_text(sim_tree: tuple[Engine, Path]) -> None:
    engine, root = sim_tree
    snap = Prober(root).probe(1.0)
    info = engine.clients()[0]
    assert list(snap["osc"]) == info["osc"]
    for kind, devices, files in (("osc", info["osc"], OSC_FILES), ("llite", [info["llite"]], LLITE_FILES)):
        for device in devices:
            expected: dict[str, Any] = {}
            for param in files:
                name = f"{kind}.{device}.{param}"
                if any(p.name == name for p in engine.list_params(0)):
                    problems: list[str] = []
                    merge_param(expected, parse_param(param, engine.get_param(0, name), problems))
                    assert problems == []
            got = dict(snap[kind][device])  # type: ignore[literal-required]
            got.pop("osc", None)
            assert got == expected, device
    osc = snap["osc"][info["osc"][0]]
    assert {"rpc_stats", "stats", "import", "osc_stats", "tunables"} <= set(osc)  # debugfs stats too
    assert osc["tunables"]["short_io_bytes"] >= 0  # type: ignore[operator]
    assert snap["llite"][info["llite"]]["osc"] == info["osc"]
    assert "max_cached_mb" in snap["llite"][info["llite"]]


@pytest.mark.parametrize("fsname", ["scr-1", "a-OST1"])
def test_an_fsname_with_dashes_is_a_client_like_any_other(small_scenario: Path, tmp_path: Path, fsname: str) -> None:
    # mkfs.lustre allows '-' in an fsname, even "-OST": device names are read from their end
    engine = Engine(load_scenario(small_scenario, {"cluster": {"fsname": fsname}}))
    engine.run(until_ns=500_000_000)
    info = engine.clients()[0]
    device = info["osc"][0]
    assert device.startswith(f"{fsname}-OST0000-osc-")
    engine.set_param(0, f"osc.{device}.max_rpcs_in_flight", "16")  # was ENOENT for "a-OST1"
    assert engine.get_param(0, f"osc.{device}.max_rpcs_in_flight").strip() == "16"
    root = tmp_path / "sim"
    VirtualTree(engine, 0, root, log=lambda line: None).refresh()
    snap = Prober(root).probe(1.0)
    assert list(snap["osc"]) == info["osc"]
    assert snap["llite"][info["llite"]]["osc"] == info["osc"]


# --- devices coming and going ----------------------------------------------------------------


def test_device_removed_between_discovery_and_read(tree: Path, log: pytest.LogCaptureFixture) -> None:
    prober = Prober(tree)
    assert OST1 in prober.probe(1.0)["osc"]
    shutil.rmtree(osc_dir(tree, OST1))
    snap = prober.probe(2.0)
    assert OST1 not in snap["osc"]
    assert list(snap["osc"]) == [name for name in CLIENT_OSCS if name != OST1]
    assert OST1 not in snap["llite"][LLITE]["osc"]
    assert snap["osc"][OST0]["tunables"]["max_pages_per_rpc"] == 1024
    assert len(warnings(log)) == 1
    assert "disappeared" in warnings(log)[0]
    snap = prober.probe(3.0)  # re-discovered: gone for good, nothing more to say
    assert OST1 not in snap["osc"]
    assert len(warnings(log)) == 1


def test_device_removed_from_every_tree_of_a_2_15_client(
    sim_tree: tuple[Engine, Path], log: pytest.LogCaptureFixture
) -> None:
    engine, root = sim_tree
    victim = engine.clients()[0]["osc"][1]
    prober = Prober(root)
    prober.probe(1.0)
    for base in ("sys/fs/lustre", "proc/fs/lustre", "sys/kernel/debug/lustre"):
        shutil.rmtree(root / base / "osc" / victim)
    snap = prober.probe(2.0)
    assert victim not in snap["osc"]
    assert len(snap["osc"]) == len(engine.clients()[0]["osc"]) - 1
    assert any("disappeared" in message for message in warnings(log))


def test_new_device_is_picked_up_at_the_next_discovery(tree: Path) -> None:
    prober = Prober(tree, rediscover_every=3)
    new = f"lustrefs-OST0007-osc-{INSTANCE}"
    assert new not in prober.probe(1.0)["osc"]
    shutil.copytree(osc_dir(tree, OST1), osc_dir(tree, new))
    seen = [new in prober.probe(float(t))["osc"] for t in range(2, 6)]
    assert seen == [False, False, True, True]  # discovery every 3 probes
    assert prober.probe(6.0)["llite"][LLITE]["osc"][-1] == new
    newer = f"lustrefs-OST0008-osc-{INSTANCE}"
    shutil.copytree(osc_dir(tree, OST1), osc_dir(tree, newer))
    prober.rediscover()
    assert newer in prober.probe(7.0)["osc"]


def test_a_vanished_file_triggers_rediscovery(tree: Path, log: pytest.LogCaptureFixture) -> None:
    prober = Prober(tree, rediscover_every=1000)
    prober.probe(1.0)
    (osc_dir(tree) / "import").unlink()
    new = f"lustrefs-OST0009-osc-{INSTANCE}"
    shutil.copytree(osc_dir(tree, OST1), osc_dir(tree, new))
    snap = prober.probe(2.0)
    assert "import" not in snap["osc"][OST0]
    assert snap["osc"][OST0]["rpc_stats"]["write_rpcs_in_flight"] == 6
    assert len(warnings(log)) == 1
    assert "import" in warnings(log)[0]
    assert new in prober.probe(3.0)["osc"]  # the failed read made the prober look again


# --- damaged files ---------------------------------------------------------------------------


def test_file_truncated_mid_line(tree: Path, log: pytest.LogCaptureFixture) -> None:
    stats = osc_dir(tree) / "stats"
    text = stats.read_text()
    overwrite(stats, text[: text.index("65298098221056") + 6])  # cut inside write_bytes' sum
    rpc = osc_dir(tree) / "rpc_stats"
    rpc_text = rpc.read_text()
    overwrite(rpc, rpc_text[: rpc_text.index("\n16384:") + 1])  # whole lines, offset rows missing
    snap = Prober(tree).probe(1.0)
    osc = snap["osc"][OST0]
    assert "stats" not in osc  # partial counters would read as zeros
    assert "stats_header" not in osc
    assert "rpc_stats" not in osc
    assert osc["import"]["rpcs"]["inflight"] == 8
    assert osc["tunables"]["max_rpcs_in_flight"] == 8
    messages = warnings(log)
    assert len(messages) == 2
    assert any("stats" in m and "no newline" in m for m in messages)
    assert any("rpc_stats" in m and "offset" in m for m in messages)


def test_nul_bytes(tree: Path, log: pytest.LogCaptureFixture) -> None:
    clean = Prober(FIXTURE).probe(0.0)["osc"][OST0]
    stats = osc_dir(tree) / "stats"
    overwrite(stats, stats.read_text() + "\x00" * 64)  # buffer padding: harmless
    grant = osc_dir(tree) / "cur_grant_bytes"
    overwrite(grant, "262144\n\x00\x00")
    snap = Prober(tree).probe(0.0)
    assert snap["osc"][OST0]["stats"] == clean["stats"]
    assert snap["osc"][OST0]["tunables"]["cur_grant_bytes"] == 262144
    assert warnings(log) == []

    overwrite(stats, stats.read_text().replace("4194304 65298098221056", "4194304\x0065298098221056"))
    overwrite(grant, "262\x00144\n")
    snap = Prober(tree).probe(0.0)
    assert "stats" not in snap["osc"][OST0]
    assert "cur_grant_bytes" not in snap["osc"][OST0]["tunables"]
    assert len(warnings(log)) == 2


def test_empty_and_garbage_files(tree: Path, log: pytest.LogCaptureFixture) -> None:
    overwrite(osc_dir(tree) / "max_rpcs_in_flight", "")  # a write in progress
    overwrite(osc_dir(tree) / "import", "\x00\x00\x00")
    overwrite(osc_dir(tree) / "max_pages_per_rpc", "1024\n2048\n")
    snap = Prober(tree).probe(0.0)
    osc = snap["osc"][OST0]
    assert "max_rpcs_in_flight" not in osc["tunables"]
    assert "max_pages_per_rpc" not in osc["tunables"]
    assert "import" not in osc
    assert osc["tunables"]["max_dirty_mb"] == 32
    assert len(warnings(log)) == 3


def test_file_replaced_by_a_directory(tree: Path, log: pytest.LogCaptureFixture) -> None:
    prober = Prober(tree)
    prober.probe(0.0)
    for name in ("max_rpcs_in_flight", "rpc_stats"):
        (osc_dir(tree) / name).unlink()
        (osc_dir(tree) / name).mkdir()
    for fresh in (prober, Prober(tree)):  # after and before discovery
        log.clear()
        osc = fresh.probe(1.0)["osc"][OST0]
        assert "max_rpcs_in_flight" not in osc["tunables"]
        assert "rpc_stats" not in osc
        assert osc["tunables"]["max_pages_per_rpc"] == 1024
        assert len(warnings(log)) == 2
        assert all("directory" in message for message in warnings(log))


def test_permission_errors(tree: Path, log: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    denied = str(osc_dir(tree) / "cur_grant_bytes")
    real_open = open

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path) == denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    # The module's own name `open` shadows the builtin, so this works when running as root too.
    monkeypatch.setattr(snapshot_module, "open", fake_open, raising=False)
    prober = Prober(tree)
    for t in range(3):
        osc = prober.probe(float(t))["osc"][OST0]
        assert "cur_grant_bytes" not in osc["tunables"]
        assert osc["tunables"]["cur_dirty_bytes"] == 27815936
    messages = warnings(log)
    assert len(messages) == 1  # once, not every probe
    assert "Permission denied" in messages[0]
    assert len(prober.issues) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_errors_by_mode(tree: Path, log: pytest.LogCaptureFixture) -> None:
    (osc_dir(tree) / "cur_grant_bytes").chmod(0)
    osc = Prober(tree).probe(0.0)["osc"][OST0]
    assert "cur_grant_bytes" not in osc["tunables"]
    assert len(warnings(log)) == 1


def test_unreadable_debugfs(
    sim_tree: tuple[Engine, Path], log: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, root = sim_tree
    debugfs = root / "sys/kernel/debug"
    real_access = os.access

    def fake_access(path: Any, mode: int, **kwargs: Any) -> bool:
        # What a non-root user sees of /sys/kernel/debug (mode 0700, owned by root).
        return False if Path(path) == debugfs else real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", fake_access)
    prober = Prober(root, rediscover_every=1)
    for t in range(3):
        snap = prober.probe(float(t))
        for osc in snap["osc"].values():
            assert "stats" not in osc
            assert {"rpc_stats", "import", "tunables"} <= set(osc)
        llite = snap["llite"][engine.clients()[0]["llite"]]
        assert not {"stats", "read_ahead_stats", "max_cached_mb"} & set(llite)
        assert llite["tunables"]["max_read_ahead_mb"] >= 0
    messages = warnings(log)
    assert len(messages) == 1  # once for the life of the prober, not every probe
    assert "debugfs" in messages[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads directories whatever their mode")
def test_unreadable_debugfs_by_mode(sim_tree: tuple[Engine, Path], log: pytest.LogCaptureFixture) -> None:
    _, root = sim_tree
    debugfs = root / "sys/kernel/debug"
    debugfs.chmod(0)
    try:
        snap = Prober(root).probe(0.0)
    finally:
        debugfs.chmod(0o755)
    assert all("stats" not in osc for osc in snap["osc"].values())
    assert len(warnings(log)) == 1


def test_unlistable_device_directories_warn_once_per_tree(
    sim_tree: tuple[Engine, Path], log: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, root = sim_tree
    sysfs_osc = str(root / "sys/fs/lustre/osc")
    real_scandir = os.scandir

    def fake_scandir(path: Any) -> Any:
        if str(path).startswith(sysfs_osc + "/"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", fake_scandir)
    prober = Prober(root, rediscover_every=1)
    for t in range(2):
        snap = prober.probe(float(t))
    osc = snap["osc"][engine.clients()[0]["osc"][0]]
    assert "max_rpcs_in_flight" not in osc["tunables"]  # a sysfs file
    assert osc["tunables"]["max_pages_per_rpc"] == 1024  # a procfs file
    assert len(warnings(log)) == 1  # for 8 OSCs and 2 discoveries


def test_warnings_repeat_only_after_recovery(tree: Path, log: pytest.LogCaptureFixture) -> None:
    path = osc_dir(tree) / "max_dirty_mb"
    prober = Prober(tree)
    overwrite(path, "")
    prober.probe(0.0)
    prober.probe(1.0)
    assert len(warnings(log)) == 1
    overwrite(path, "64\n")
    assert prober.probe(2.0)["osc"][OST0]["tunables"]["max_dirty_mb"] == 64
    overwrite(path, "")
    prober.probe(3.0)
    assert len(warnings(log)) == 2
    assert any(r.levelno == logging.DEBUG for r in log.records)  # the repeat went to debug


def test_missing_root_gives_an_empty_snapshot(tmp_path: Path, log: pytest.LogCaptureFixture) -> None:
    snap = Prober(tmp_path / "nothing").probe(0.0)
    assert snap == {"time": 0.0, "osc": {}, "llite": {}}


def test_probe_reads_only_what_it_must(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prober = Prober(tree, files=MINIMAL_FILES)
    prober.probe(0.0)
    calls: list[str] = []
    real_listdir: Callable[..., list[str]] = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: calls.append(str(path)) or real_listdir(path))
    prober.probe(1.0)
    assert calls == []  # no directory search between discoveries
