"""Saved `lctl get_param` output: splitting into parameters, and parsing into a snapshot."""

from __future__ import annotations

import doctest
import logging
from pathlib import Path

import pytest

from pfstune.lustre import lctl
from pfstune.lustre.lctl import parse_get_param, snapshot_from_get_param
from pfstune.lustre.parse import ParseError
from pfstune.lustre.snapshot import STRUCTURED_FILES, merge_param, parse_param
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from tests.conftest import SHARED

DATA = Path(__file__).parent / "data"


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def lctl_output(names_and_texts: list[tuple[str, str]]) -> str:
    """What `lctl get_param` prints for these files (read_param(), lustre-client.md §2.2)."""
    out = []
    for name, text in names_and_texts:
        if not text:
            continue  # empty files print nothing
        longbuf = "\n" in text[:-1] or len(text) + len(name) >= 80
        out.append(f"{name}={chr(10) if longbuf else ''}{text}")
    return "".join(out)


def test_docstring_examples() -> None:
    result = doctest.testmod(lctl)
    assert result.attempted > 0
    assert result.failed == 0


def test_b5_names_and_values() -> None:
    values = parse_get_param(read("b5_get_param.txt"))
    assert list(values) == [
        "osc.testfs-OST0000-osc-ffff8881234abcd0.max_rpcs_in_flight",
        "osc.testfs-OST0001-osc-ffff8881234abcd0.max_rpcs_in_flight",
        "osc.testfs-OST0000-osc-ffff8881234abcd0.rpc_stats",
    ]
    assert values["osc.testfs-OST0001-osc-ffff8881234abcd0.max_rpcs_in_flight"] == "8"
    # The "# lctl set_param" and "error: ...=300: ..." lines do not start parameters.
    assert values["osc.testfs-OST0000-osc-ffff8881234abcd0.rpc_stats"].endswith("Numerical result out of range\n")


def test_b5_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pfstune.lustre"):
        snap = snapshot_from_get_param(read("b5_get_param.txt"), time=5.0)
    assert snap["time"] == 5.0
    assert snap["llite"] == {}
    assert snap["osc"]["testfs-OST0000-osc-ffff8881234abcd0"] == {"tunables": {"max_rpcs_in_flight": 8}}
    assert snap["osc"]["testfs-OST0001-osc-ffff8881234abcd0"] == {"tunables": {"max_rpcs_in_flight": 8}}
    assert "rpc_stats" in caplog.text  # the elided rpc_stats is not an rpc_stats: left out, said so


def test_equals_signs_and_colons_inside_values() -> None:
    text = (
        "osc.fs-OST0000-osc-ffff88.connect_flags=\nflags=0x20405af0e3440478\nflags2=0x0\nwrite_grant\n"
        "osc.fs-OST0000-osc-ffff88.state=\ncurrent_state: FULL\nstate_history:\n - [ 1, FULL ]\n"
        "osc.fs-OST0000-osc-ffff88.ost_conn_uuid=172.20.20.5@o2ib\n"
        "osc.fs-OST0000-osc-ffff88.timeouts=\nlast reply : 1510950459, 0s ago\nportal 28  : cur   1 = 1\n"
    )
    values = parse_get_param(text)
    assert values == {
        "osc.fs-OST0000-osc-ffff88.connect_flags": "flags=0x20405af0e3440478\nflags2=0x0\nwrite_grant\n",
        "osc.fs-OST0000-osc-ffff88.state": "current_state: FULL\nstate_history:\n - [ 1, FULL ]\n",
        "osc.fs-OST0000-osc-ffff88.ost_conn_uuid": "172.20.20.5@o2ib",
        "osc.fs-OST0000-osc-ffff88.timeouts": "last reply : 1510950459, 0s ago\nportal 28  : cur   1 = 1\n",
    }


def test_cut_last_value_keeps_its_missing_newline() -> None:
    text = (
        "osc.fs-OST0000-osc-ffff88.stats=\nsnapshot_time 1.000000000 secs.nsecs\n"
        "ost_write 5 samples [usec] 1 2 3 4\nost_read 7 samp"
    )
    assert parse_get_param(text)["osc.fs-OST0000-osc-ffff88.stats"].endswith("ost_read 7 samp")
    snap = snapshot_from_get_param(text)
    assert list(snap["osc"]["fs-OST0000-osc-ffff88"]["stats"]) == ["ost_write"]


@pytest.mark.parametrize("text", ["", "\n\n", "just text\nwith lines\n", "8\n", "max_dirty_mb=32\n"])
def test_no_names_raises(text: str) -> None:
    with pytest.raises(ParseError, match="name=value"):
        parse_get_param(text)


def test_b2_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pfstune.lustre"):
        snap = snapshot_from_get_param(read("b2_client.txt"))
    osc_name = "a361000-OST0000-osc-ffff000189257000"
    llite_name = "a361000-ffff000189257000"
    assert list(snap["osc"]) == [osc_name]  # mdc is not an OSC
    osc = snap["osc"][osc_name]
    assert set(osc) == {"rpc_stats", "stats", "stats_header", "tunables"}  # state, unstable_stats: no place
    assert osc["tunables"] == {"cur_grant_bytes": 8437760}
    assert osc["rpc_stats"]["dio_rpcs_in_flight"] == 0
    assert osc["rpc_stats"]["pages_per_rpc"]["write"][1] == 320551
    assert osc["rpc_stats"]["rpcs_in_flight"]["write"][9] == 28707
    assert osc["stats"]["read_bytes"]["sumsq"] == 44858222896480256
    assert osc["stats_header"]["elapsed_time"] == 268875.238395491
    llite = snap["llite"][llite_name]
    assert llite["osc"] == [osc_name]
    assert llite["stats"]["openclosetime"]["sumsq"] == 9223372036854775807
    assert llite["read_ahead_stats"]["readahead_pages"]["max"] == 510
    assert llite["read_ahead_stats_header"]["start_time"] == 1790008165.367575861
    # The doc's "..." elision inside llite stats is skipped with a warning, the rest kept.
    assert f"llite.{llite_name}.stats" in caplog.text


def test_b3_snapshot() -> None:
    snap = snapshot_from_get_param(read("b3_client.txt"))
    osc = snap["osc"]["a361000-OST0000-osc-ffff8b524be17800"]
    assert osc["rpc_stats"]["offset"] == {"read": {0: 0}, "write": {0: 0}}
    # The device exists, but its only file (io_latency_stats) has no place in a snapshot.
    assert snap["osc"]["a361000-OST0003-osc-ffff8b524be17800"] == {}
    llite = snap["llite"]["a361000-ffff8b524be17800"]
    assert llite["stats"]["close"]["sum"] == 349851
    assert llite["osc"] == ["a361000-OST0000-osc-ffff8b524be17800", "a361000-OST0003-osc-ffff8b524be17800"]


def test_server_devices_are_skipped() -> None:
    text = (
        "osc.lustrefs-OST0000-osc-MDT0000.max_rpcs_in_flight=8\n"
        "osc.lustrefs-OST0000-osc-ffff88105db50000.max_rpcs_in_flight=16\n"
        "mdc.lustrefs-MDT0000-mdc-ffff88105db50000.max_rpcs_in_flight=8\n"
    )
    snap = snapshot_from_get_param(text)
    assert snap["osc"] == {"lustrefs-OST0000-osc-ffff88105db50000": {"tunables": {"max_rpcs_in_flight": 16}}}


def test_a_stats_file_of_one_line_given_inline_is_kept() -> None:
    """A one-line stats file (the 2.10 fixture's read_ahead_stats has no counter yet) as name=line.

    lctl itself prints it on the next line (name and text reach 80 characters), but saved
    output edited by hand, or printed by a script of `name=value` pairs, holds it inline.
    """
    path = next((SHARED / "fixtures" / "lustre-2.10-client" / "proc/fs/lustre/llite").glob("*/read_ahead_stats"))
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") == 1  # the header alone
    name = f"llite.{path.parent.name}.read_ahead_stats"
    printed = f"{name}={text}"
    llite = snapshot_from_get_param(printed)["llite"][path.parent.name]
    assert llite["read_ahead_stats"] == {}
    assert llite["read_ahead_stats_header"]["snapshot_time"] == pytest.approx(1510950459.776359249)


def test_round_trip_of_a_pfsim_client(small_scenario: Path) -> None:
    """Every file of a simulated client, printed the way lctl prints it, parses to the same snapshot."""
    engine = Engine(load_scenario(small_scenario))
    engine.run(until_ns=500_000_000)
    params = [(param.name, engine.get_param(0, param.name)) for param in engine.list_params(0)]
    snap = snapshot_from_get_param(lctl_output(params), time=1.0)

    expected: dict[str, dict[str, dict[str, object]]] = {"osc": {}, "llite": {}}
    for name, text in params:
        kind, device, param = name.split(".", 2) if name.count(".") >= 2 else ("", "", "")
        if kind not in expected or (param not in STRUCTURED_FILES and text.count("\n") > 1):
            continue
        problems: list[str] = []
        merge_param(expected[kind].setdefault(device, {}), parse_param(param, text, problems))
        assert problems == []
    info = engine.clients()[0]
    expected["llite"][info["llite"]]["osc"] = info["osc"]
    assert snap == {"time": 1.0, **expected}
    osc = snap["osc"][info["osc"][0]]
    assert {"tunables", "rpc_stats", "stats", "stats_header", "import", "osc_stats", "osc_stats_header"} <= set(osc)
    assert osc["tunables"]["max_pages_per_rpc"] == 1024
    assert osc["import"]["state"] == "FULL"
