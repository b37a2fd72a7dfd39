"""Tables of parsed statistics: the Rust reader (Prober.probe_table) gives the same numbers as the
Python parsers (ProbeTable.from_snapshot of Prober.probe) on the real 2.10 tree, on pfsim's text in
every style it prints, and on vendor and damaged text, where it hands the device to Python."""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pfstune.lustre.lctl import parse_get_param
from pfstune.lustre.snapshot import MINIMAL_FILES, Prober
from pfstune.lustre.table import HIST_COLUMNS, PPR_LABELS, TUNABLES, OscTable, ProbeTable, StatsTable
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree
from tests.conftest import SHARED
from tests.lustre.test_snapshot import copy_tree, overwrite

FIXTURE = SHARED / "fixtures" / "lustre-2.10-client"
DATA = Path(__file__).parent / "data"
INSTANCE = "ffff88105db50000"
OST0 = f"lustrefs-OST0000-osc-{INSTANCE}"
OST1 = f"lustrefs-OST0001-osc-{INSTANCE}"
LLITE = f"lustrefs-{INSTANCE}"


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.LogCaptureFixture]:
    """caplog for the pfstune.lustre logger, even if a JSON log set-up turned propagation off."""
    monkeypatch.setattr(logging.getLogger("pfstune"), "propagate", True)
    with caplog.at_level(logging.DEBUG, logger="pfstune.lustre"):
        yield caplog


def fallbacks(log: pytest.LogCaptureFixture) -> list[str]:
    """What the fast reader handed to the Python parsers (warned once, then at debug level)."""
    return [r.getMessage() for r in log.records if "fast reader did not accept" in r.getMessage()]


def warnings(log: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in log.records if r.name == "pfstune.lustre" and r.levelno == logging.WARNING]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the real 2.10 client tree."""
    return copy_tree(FIXTURE, tmp_path / "client")


def osc_dir(root: Path, name: str = OST0) -> Path:
    return root / "proc/fs/lustre/osc" / name


def assert_same_stats(fast: StatsTable, reference: StatsTable) -> None:
    names = reference.names + tuple(name for name in fast.names if reference.column(name) is None)
    a, b = fast.reindex(names), reference.reindex(names)
    for array in ("present", "line", "samples", "summed", "valued", "minimum", "maximum", "total"):
        np.testing.assert_array_equal(getattr(a, array), getattr(b, array), err_msg=array)
    np.testing.assert_array_equal(a.start_time, b.start_time)  # NaN where not printed, on both sides


def assert_same_table(fast: ProbeTable, reference: ProbeTable) -> None:
    """The same OSCs, scalar files and numbers (NaN where NaN), whichever reader made them."""
    assert fast.oscs == reference.oscs
    assert [dict(t) for t in fast.tunables] == [dict(t) for t in reference.tunables]
    a, b = fast.table, reference.table
    for array in ("tunables", "rpc", "rpc_start", "rpc_lines", "hist"):
        np.testing.assert_array_equal(getattr(a, array), getattr(b, array), err_msg=array)
    assert dict(a.unfolded) == dict(b.unfolded)
    assert_same_stats(a.stats, b.stats)
    assert_same_stats(a.llite, b.llite)


def both(prober: Prober, when: float = 1.0) -> tuple[ProbeTable, ProbeTable]:
    """The fast table and the reference table of the same files."""
    fast = prober.probe_table(when)
    return fast, ProbeTable.from_snapshot(prober.probe(when))


# --- the real 2.10 client tree -----------------------------------------------------------------


@pytest.mark.parametrize("files", [MINIMAL_FILES, None])
def test_the_real_2_10_tree_reads_the_same_and_fast(
    files: frozenset[str] | None, log: pytest.LogCaptureFixture
) -> None:
    prober = Prober(FIXTURE, files=files)
    fast, reference = both(prober)
    assert_same_table(fast, reference)
    assert fallbacks(log) == []  # every device was read by the extension
    assert len(fast.oscs) == 7
    table = fast.table
    assert table.stats.present.all()
    assert table.llite.present.all()  # each OSC carries its mount's llite.*.stats
    write_bytes = table.llite.column("write_bytes")
    assert write_bytes is not None
    assert table.llite.total[0, write_bytes] == 93813797294080
    assert dict(fast.tunables[0])["max_pages_per_rpc"] == 1024


def test_the_fixture_values_are_the_parsed_values() -> None:
    fast = Prober(FIXTURE, files=MINIMAL_FILES).probe_table(0.0)
    snapshot = Prober(FIXTURE, files=MINIMAL_FILES).probe(0.0)
    row = fast.oscs.index(OST0)
    osc = snapshot["osc"][OST0]
    table = fast.table
    assert table.tunables[row].tolist() == [float(osc["tunables"][name]) for name in TUNABLES]
    rpc = osc["rpc_stats"]
    assert table.rpc_lines[row, 2] == rpc["write_rpcs_in_flight"]
    assert table.hist[row, len(PPR_LABELS) + PPR_LABELS.index(256)] == rpc["pages_per_rpc"]["write"][256]
    assert math.isnan(table.rpc_start[row])  # 2.10 prints only snapshot_time
    column = table.stats.column("write_bytes")
    assert column is not None
    counter = osc["stats"]["write_bytes"]
    assert table.stats.samples[row, column] == counter["samples"]
    assert table.stats.total[row, column] == counter["sum"]


# --- pfsim's text, in every style it prints --------------------------------------------------------

STYLES = """\
name: styles
seed: 5
duration: 2s
cluster: {{preset: cloudlab-c6525, clients: 1, lustre_version: "{version}"}}
jobs:
  - {{name: writer, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 64m}}
  - {{name: reader, client: 0, workload: filebench.randomread, iosize: 4m, filesize: 256m}}
"""


@pytest.mark.parametrize("version", ["2.15.0", "2.15.5", "2.15.7"])
def test_pfsim_text_reads_the_same_in_every_style(version: str, tmp_path: Path, log: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(STYLES.format(version=version))
    engine = Engine(load_scenario(path))
    root = tmp_path / "root"
    tree = VirtualTree(engine, 0, root, log=lambda line: None)
    prober = Prober(root, files=MINIMAL_FILES)
    for step in range(3):
        engine.run(until_ns=engine.now_ns + 300_000_000)
        tree.refresh()
        fast, reference = both(prober, float(step))
        assert_same_table(fast, reference)
    assert fallbacks(log) == []
    assert fast.table.rpc.all()
    assert fast.table.hist.sum() > 0  # RPCs were sent, and counted
    assert not np.isnan(fast.table.rpc_start).any()  # 2.15 prints start_time
    units = {"2.15.7": "usecs"}.get(version, "usec")
    assert f"[{units}]" in (root / "sys/kernel/debug/lustre/osc" / fast.oscs[0] / "stats").read_text()


# --- vendor variants and odd inputs ------------------------------------------------------------------

B2 = parse_get_param((DATA / "b2_client.txt").read_text(encoding="utf-8"))
B3 = parse_get_param((DATA / "b3_client.txt").read_text(encoding="utf-8"))
STATS = (FIXTURE / "proc/fs/lustre/osc" / OST0 / "stats").read_text(encoding="utf-8")
RPC = (FIXTURE / "proc/fs/lustre/osc" / OST0 / "rpc_stats").read_text(encoding="utf-8")
LLITE_STATS = (FIXTURE / "proc/fs/lustre/llite" / LLITE / "stats").read_text(encoding="utf-8")
B2_OSC = "osc.a361000-OST0000-osc-ffff000189257000"

#: (name, file of OST0000 -> its text, whether the extension hands the device to Python)
VARIANTS: list[tuple[str, dict[str, str], bool]] = [
    ("NUL padding of a stats file", {"stats": STATS + "\x00" * 64}, False),
    ("NUL padding of a one-line file", {"cur_grant_bytes": "262144\n\x00\x00"}, False),
    ("NUL between two numbers", {"stats": STATS.replace("4194304 65298098221056", "4194304\x0065298098221056")}, True),
    ("NUL in rpc_stats", {"rpc_stats": "\x00" + RPC}, True),
    ("lines without sumsq", {"stats": STATS.replace(" 10009909738331963392", "")}, False),
    ("sumsq beyond 2^63", {"stats": STATS.replace("10009909738331963392", "18446744073709551615")}, False),
    ("a sum beyond 2^63", {"stats": STATS.replace("65298098221056", "99999999999999999999")}, True),
    ("usecs units (2.15.7)", {"stats": STATS.replace("[usec]", "[usecs]")}, False),
    ("snapshot_time with a colon", {"stats": STATS.replace("snapshot_time ", "snapshot_time:", 1)}, False),
    ("the 2.15.0 header", {"stats": STATS.replace("snapshot_time ", "snapshot_time            : ", 1)}, False),
    ("an old (secs.usecs) header", {"stats": "snapshot_time:  1510950459.5 (secs.usecs)\n" + STATS}, False),
    ("a start_time that moves", {"stats": "start_time 12.000000000 secs.nsecs\n" + STATS}, False),
    ("only a header", {"stats": STATS.splitlines(keepends=True)[0]}, False),
    ("a blank line", {"stats": STATS + "\n"}, False),
    ("count-only lines", {"stats": STATS + "ldlm_glimpse_enqueue      3 samples [reqs]\n"}, False),
    ("a line printed twice", {"stats": STATS + "ost_write 1 samples [usec] 5 5 5 25\n"}, False),
    ("an elided line", {"stats": STATS + "...\n"}, True),
    ("cut mid-line", {"stats": STATS[: STATS.index("65298098221056") + 6]}, True),
    ("vendor rpc_stats with a DIO line", {"rpc_stats": B2[f"{B2_OSC}.rpc_stats"]}, False),
    ("vendor stats", {"stats": B2[f"{B2_OSC}.stats"]}, False),
    ("a vendor histogram block", {"rpc_stats": B3["osc.a361000-OST0000-osc-ffff8b524be17800.rpc_stats"]}, True),
    ("rows of a histogram missing", {"rpc_stats": RPC[: RPC.index("\n16384:") + 1]}, True),
    ("a pages-per-RPC label beyond 4096", {"rpc_stats": RPC.replace("\n256:", "\n8192:")}, True),
    ("an empty one-line file", {"max_rpcs_in_flight": ""}, True),
    ("two lines in a one-line file", {"max_pages_per_rpc": "1024\n2048\n"}, True),
    ("text in a numeric file", {"max_dirty_mb": "1.5e1\n"}, False),
    ("a number beyond 64 bits", {"cur_dirty_bytes": "99999999999999999999999\n"}, True),
    ("a header time beyond a float", {"stats": f"start_time {'9' * 400}.5 secs.usecs\n" + STATS}, True),
    (
        "an rpc_stats time beyond a float",
        {"rpc_stats": RPC.replace("snapshot_time:", f"start_time: {'9' * 400}.1 secs.nsecs\nsnapshot_time:", 1)},
        True,
    ),
    ("not UTF-8", {"cur_grant_bytes": "caf\xe9\n"}, True),
]


@pytest.mark.parametrize(("files", "handed_over"), [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS])
def test_vendor_and_odd_text_reads_the_same(
    files: dict[str, str], handed_over: bool, tree: Path, log: pytest.LogCaptureFixture
) -> None:
    for name, text in files.items():
        path = osc_dir(tree) / name
        path.chmod(0o644)
        path.write_bytes(text.encode("latin-1"))
    prober = Prober(tree)
    fast, reference = both(prober)
    assert_same_table(fast, reference)
    assert bool(fallbacks(log)) == handed_over
    fast_again = prober.probe_table(2.0)  # and again: the same, the fallback not warned twice
    assert_same_table(fast_again, reference)
    assert len([m for m in warnings(log) if "fast reader" in m]) <= 1


def test_a_long_stats_file_and_many_counters(tree: Path) -> None:
    lines = "".join(
        f"counter_{i:03d}                {i + 1} samples [reqs] 1 {i + 1} {i + 1} {i + 1}\n" for i in range(300)
    )
    overwrite(osc_dir(tree) / "stats", STATS + lines)  # > 16 KiB: several reads, a grown buffer
    fast, reference = both(Prober(tree))
    assert_same_table(fast, reference)
    column = fast.table.stats.column("counter_299")
    assert column is not None
    assert fast.table.stats.samples[fast.oscs.index(OST0), column] == 300


def test_the_fallback_is_warned_once(tree: Path, log: pytest.LogCaptureFixture) -> None:
    for name in (OST0, OST1):
        overwrite(osc_dir(tree, name) / "rpc_stats", B3["osc.a361000-OST0000-osc-ffff8b524be17800.rpc_stats"])
    prober = Prober(tree)
    for t in range(3):
        prober.probe_table(float(t))
    assert len(fallbacks(log)) == 6  # two devices, three probes
    assert len([m for m in warnings(log) if "fast reader" in m]) == 1  # the rest at debug level
    assert warnings(log) == [m for m in warnings(log) if "fast reader" in m]  # the vendor text is fine


# --- devices coming and going, unreadable files ---------------------------------------------------


def test_a_device_removed_between_probes(tree: Path, log: pytest.LogCaptureFixture) -> None:
    prober = Prober(tree, files=MINIMAL_FILES)
    assert OST1 in prober.probe_table(1.0).oscs
    shutil.rmtree(osc_dir(tree, OST1))
    fast = prober.probe_table(2.0)
    assert OST1 not in fast.oscs
    assert len(fast.oscs) == len(fast.table) == 6
    assert any("disappeared" in m for m in warnings(log))
    assert_same_table(prober.probe_table(3.0), ProbeTable.from_snapshot(prober.probe(3.0)))


def test_a_new_device_is_picked_up_at_the_next_discovery(tree: Path) -> None:
    prober = Prober(tree, rediscover_every=2)
    new = f"lustrefs-OST0007-osc-{INSTANCE}"
    assert new not in prober.probe_table(1.0).oscs
    shutil.copytree(osc_dir(tree, OST1), osc_dir(tree, new))
    seen = [new in prober.probe_table(float(t)).oscs for t in range(2, 5)]
    assert seen == [False, True, True]
    fast = prober.probe_table(5.0)
    assert fast.table.llite.present[fast.oscs.index(new)]  # it belongs to the mount


def test_files_that_cannot_be_read_are_left_out(tree: Path, log: pytest.LogCaptureFixture) -> None:
    prober = Prober(tree, files=MINIMAL_FILES)
    prober.probe_table(0.0)
    for name in ("max_rpcs_in_flight", "rpc_stats"):
        (osc_dir(tree) / name).unlink()
        (osc_dir(tree) / name).mkdir()  # read(2) fails: EISDIR
    (osc_dir(tree, OST1) / "stats").unlink()  # gone: the prober looks for the devices again
    fast, reference = both(prober)
    assert_same_table(fast, reference)
    row = fast.oscs.index(OST0)
    assert "max_rpcs_in_flight" not in fast.tunables[row]
    assert not fast.table.rpc[row]
    assert math.isnan(fast.table.tunables[row, TUNABLES.index("max_rpcs_in_flight")])
    assert not fast.table.stats.present[fast.oscs.index(OST1)]
    assert any("directory" in m for m in warnings(log))


def test_a_mount_without_stats(tree: Path) -> None:
    (tree / "proc/fs/lustre/llite" / LLITE / "stats").unlink()
    fast, reference = both(Prober(tree, files=MINIMAL_FILES))
    assert_same_table(fast, reference)
    assert not fast.table.llite.present.any()


def test_without_the_extension_the_python_parsers_fill_the_table(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python parsers give the table the compiled reader gives."""
    from pfstune.lustre import snapshot as snapshot_module

    assert snapshot_module.StatsReader is not None, "the compiled reader is part of the package"
    native = Prober(tree).probe_table(1.0)
    assert native.oscs, "the tree has OSCs"
    monkeypatch.setattr(snapshot_module, "StatsReader", None)
    assert_same_table(Prober(tree).probe_table(1.0), native)


def test_an_empty_tree(tmp_path: Path) -> None:
    fast = Prober(tmp_path / "nothing").probe_table(0.0)
    assert fast.oscs == ()
    assert fast.table.hist.shape == (0, HIST_COLUMNS)


# --- packing -------------------------------------------------------------------------------------------


def test_packing_folds_large_labels_and_keeps_them() -> None:
    snapshot = Prober(FIXTURE, files=MINIMAL_FILES).probe(0.0)
    osc = snapshot["osc"][OST0]
    write = osc["rpc_stats"]["pages_per_rpc"]["write"]
    write[8192] = 7
    table = OscTable.from_snapshots([osc], [None])
    assert table.hist[0, len(PPR_LABELS) + len(PPR_LABELS) - 1] == write.get(4096, 0) + 7
    assert table.unfolded[0][1][8192] == 7
    assert table.take([0, 0]).unfolded.keys() == {0, 1}


def test_packing_takes_a_counter_beyond_64_bits_as_not_read() -> None:
    snapshot = Prober(FIXTURE, files=MINIMAL_FILES).probe(0.0)
    osc = snapshot["osc"][OST0]
    osc["stats"]["write_bytes"]["sum"] = 1 << 70
    assert not OscTable.from_snapshots([osc], [None]).stats.present[0]
