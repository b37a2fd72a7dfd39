"""The parsers read real client text exactly: the 2.10 fixture tree, the §A and §B samples of
docs/lustre-client.md, and pfsim's 2.15.0/2.15.5/2.15.7 text; damage never yields a wrong number."""

from __future__ import annotations

import contextlib
import doctest
import math
import time
from pathlib import Path
from typing import Any

import pytest

from pfstune.lustre import parse
from pfstune.lustre.lctl import parse_get_param
from pfstune.lustre.parse import (
    ParseError,
    parse_import,
    parse_key_values,
    parse_osc_stats,
    parse_rpc_stats,
    parse_scalar,
    parse_stats,
    split_unit,
)
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from tests.conftest import SHARED

DATA = Path(__file__).parent / "data"
FIXTURE = SHARED / "fixtures" / "lustre-2.10-client"
OSC_DIR = FIXTURE / "proc/fs/lustre/osc"
OST0 = OSC_DIR / "lustrefs-OST0000-osc-ffff88105db50000"
LLITE_DIR = FIXTURE / "proc/fs/lustre/llite/lustrefs-ffff88105db50000"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def sections(text: str, marker: str) -> dict[str, str]:
    """Split a data file at lines starting with ``marker``; the key is the rest of that line."""
    out: dict[str, str] = {}
    key = ""
    for line in text.splitlines(keepends=True):
        if line.startswith(marker):
            key = line[len(marker) :].strip()
            out[key] = ""
        else:
            out[key] = out.get(key, "") + line
    return out


def a_sample(tag: str) -> str:
    """One [A.x] block of the §A samples file (the text between its marker line and the next)."""
    blocks: dict[str, str] = {}
    current = ""
    for line in read(DATA / "a_samples.txt").splitlines(keepends=True):
        if line.startswith(("[A.", "=====")):
            current = line.split("]")[0].lstrip("[") if line.startswith("[A.") else "after " + current
            blocks[current] = ""
        else:
            blocks[current] += line
    return blocks[tag]


def test_docstring_examples() -> None:
    result = doctest.testmod(parse)
    assert result.attempted > 0
    assert result.failed == 0


# --- the real 2.10 client tree ---------------------------------------------------------------


def test_fixture_osc_stats_exact() -> None:
    problems: list[str] = []
    header, counters = parse_stats(read(OST0 / "stats"), problems)
    assert problems == []
    assert header == {"snapshot_time": 1510950459.787092770}
    assert list(counters) == [
        "req_waittime",
        "req_active",
        "write_bytes",
        "ost_write",
        "ost_connect",
        "ost_punch",
        "ost_statfs",
        "ldlm_cancel",
        "obd_ping",
    ]
    assert counters["req_waittime"] == {
        "samples": 18215581,
        "unit": "usec",
        "min": 69,
        "max": 1348857,
        "sum": 110282569237,
        "sumsq": 8342874290406023,
    }
    write = counters["write_bytes"]
    assert write["sumsq"] == 10009909738331963392
    assert write["sumsq"] > 2**63  # printed %llu: kept exact, not wrapped or floated
    assert (write["samples"], write["unit"], write["min"], write["max"], write["sum"]) == (
        18210280,
        "bytes",
        4096,
        4194304,
        65298098221056,
    )
    assert counters["req_active"]["unit"] == "reqs"
    assert counters["ost_punch"] == {
        "samples": 134,
        "unit": "usec",
        "min": 69,
        "max": 686367,
        "sum": 2942876,
        "sumsq": 1397147767330,
    }
    assert counters["obd_ping"]["samples"] == 5153

    _, other = parse_stats(read(OSC_DIR / "lustrefs-OST0003-osc-ffff88105db50000" / "stats"))
    assert other["req_waittime"]["samples"] == 7348
    assert other["obd_ping"]["sumsq"] == 1072683363
    assert "write_bytes" not in other  # zero counters are not printed


def test_fixture_rpc_stats_exact() -> None:
    problems: list[str] = []
    rpc = parse_rpc_stats(read(OST0 / "rpc_stats"), problems)
    assert problems == []
    assert rpc["header"] == {"snapshot_time": 1510950459.787901292}
    assert (rpc["read_rpcs_in_flight"], rpc["write_rpcs_in_flight"]) == (0, 6)
    assert (rpc["pending_write_pages"], rpc["pending_read_pages"]) == (1244, 0)
    assert "dio_rpcs_in_flight" not in rpc
    pages = rpc["pages_per_rpc"]
    assert list(pages["write"]) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert pages["write"][1] == 1537
    assert pages["write"][256] == 458648
    assert pages["write"][1024] == 16389010
    assert set(pages["read"].values()) == {0}
    inflight = rpc["rpcs_in_flight"]
    assert list(inflight["write"]) == list(range(16))  # 2.10 prints a 0: row
    assert inflight["write"][0] == 0
    assert inflight["write"][3] == 4520192
    assert inflight["write"][15] == 2
    offset = rpc["offset"]
    assert offset["write"][0] == 64
    assert offset["write"][16] == 2
    assert offset["write"][134217728] == 8127518
    assert sum(pages["write"].values()) == sum(inflight["write"].values()) == sum(offset["write"].values())

    idle = parse_rpc_stats(read(OSC_DIR / "lustrefs-OST0001-osc-ffff88105db50000" / "rpc_stats"))
    assert idle["pages_per_rpc"] == {"read": {1: 0}, "write": {1: 0}}
    assert idle["rpcs_in_flight"] == {"read": {0: 0}, "write": {0: 0}}
    assert idle["offset"] == {"read": {0: 0}, "write": {0: 0}}


def test_fixture_import_exact() -> None:
    problems: list[str] = []
    data = parse_import(read(OST0 / "import"), problems)
    assert problems == []
    imp = data["import"]
    assert imp["name"] == "lustrefs-OST0000-osc-ffff88105db50000"
    assert imp["state"] == "FULL"
    assert imp["connect_flags"][:3] == ["write_grant", "server_lock", "version"]
    assert len(imp["connect_flags"]) == 22
    connect = imp["connect_data"]
    assert connect["flags"] == "0x20405af0e3440478"  # hex masks stay as printed
    assert connect["target_version"] == "2.10.1.0"
    assert connect["max_brw_size"] == 4194304
    assert connect["grant_extent_tax"] == 655360
    assert connect["max_object_bytes"] == 9223372036854775807
    assert imp["import_flags"] == ["replayable", "pingable", "connect_tried"]
    assert imp["connection"]["failover_nids"] == ["172.20.20.5@o2ib", "172.20.20.6@o2ib"]
    assert imp["connection"]["in-progress_invalidations"] == 0
    assert imp["rpcs"] == {"inflight": 8, "unregistering": 0, "timeouts": 0, "avg_waittime": "6054 usec"}
    assert split_unit(imp["rpcs"]["avg_waittime"]) == (6054, "usec")
    assert imp["service_estimates"] == {"services": "1 sec", "network": "1 sec"}
    assert imp["transactions"]["peer_committed"] == 12903111294
    assert imp["write_data_averages"] == {"bytes_per_rpc": 3585782, "usec_per_rpc": 6055, "MB_per_sec": 592.2}
    assert "read_data_averages" not in imp


def test_fixture_llite_and_small_files_exact() -> None:
    header, counters = parse_stats(read(LLITE_DIR / "stats"))
    assert header == {"snapshot_time": 1510950459.772792457}
    assert counters["read_bytes"] == {
        "samples": 1,
        "unit": "bytes",
        "min": 4194304,
        "max": 4194304,
        "sum": 4194304,
        "sumsq": None,  # 2.10 llite: no sumsq
    }
    assert counters["write_bytes"]["sum"] == 93813797294080
    assert counters["open"] == {"samples": 136, "unit": "regs", "min": None, "max": None, "sum": None, "sumsq": None}
    assert counters["inode_permission"]["samples"] == 398
    header, ra = parse_stats(read(LLITE_DIR / "read_ahead_stats"))
    assert (header, ra) == ({"snapshot_time": 1510950459.776359249}, {})
    assert parse_key_values(read(LLITE_DIR / "max_cached_mb")) == {
        "users": 9,
        "max_cached_mb": 32064,
        "used_mb": 5116,
        "unused_mb": 26948,
        "reclaim_count": 0,
    }
    assert parse_key_values(read(LLITE_DIR / "statahead_stats")) == {
        "statahead total": 0,
        "statahead wrong": 0,
        "agl total": 0,
    }
    header, values = parse_osc_stats(read(OST0 / "osc_stats"))
    assert header == {"snapshot_time": 1510950459.787841366}
    assert values == {"lockless_write_bytes": 0, "lockless_read_bytes": 0, "lockless_truncate": 0}
    assert parse_key_values(read(OST0 / "osc_cached_mb")) == {"used_mb": 5085, "busy_cnt": 5748, "reclaim": 5397}
    assert parse_scalar(read(OST0 / "max_pages_per_rpc")) == 1024
    assert parse_scalar(read(OST0 / "cur_dirty_bytes")) == 27815936
    assert parse_scalar(read(OST0 / "cur_grant_bytes")) == 262144
    assert parse_scalar(read(OST0 / "max_dirty_mb")) == 32
    assert parse_scalar(read(OST0 / "checksum_type")) == "crc32 adler [crc32c]"
    assert parse_scalar(read(OST0 / "ost_server_uuid")) == "lustrefs-OST0000_UUID\tFULL"
    state = parse_import(read(OST0 / "state"))
    assert state == {"current_state": "FULL", "state_history": [[1510766261, "CONNECTING"], [1510766261, "FULL"]]}


# --- §B excerpts -----------------------------------------------------------------------------


def test_b1_files_are_the_fixture_text() -> None:
    assert read(DATA / "b1_rpc_stats.txt") == read(OST0 / "rpc_stats")
    assert read(DATA / "b1_stats.txt") == read(OST0 / "stats")
    assert read(DATA / "b1_import.txt") == read(OST0 / "import")


def test_b1_llite_excerpt() -> None:
    parts = sections(read(DATA / "b1_llite.txt"), "--- ")
    _, stats = parse_stats(parts[""])
    assert stats["getxattr_hits"]["samples"] == 20
    assert stats["alloc_inode"]["unit"] == "regs"
    assert parse_stats(parts["read_ahead_stats"]) == ({"snapshot_time": 1510950459.776359249}, {})
    assert parse_key_values(parts["max_cached_mb"])["used_mb"] == 5116


def test_b2_ddn_216_vendor_lines() -> None:
    values = parse_get_param(read(DATA / "b2_client.txt"))
    osc = "osc.a361000-OST0000-osc-ffff000189257000"
    llite = "llite.a361000-ffff000189257000"

    problems: list[str] = []
    rpc = parse_rpc_stats(values[f"{osc}.rpc_stats"], problems)
    assert problems == []
    assert rpc["dio_rpcs_in_flight"] == 0
    assert rpc["header"] == {
        "snapshot_time": 1790277040.614799671,
        "start_time": 1790008165.378161500,
        "elapsed_time": 268875.236638171,
    }
    assert rpc["pages_per_rpc"]["read"][1] == 100395
    assert rpc["pages_per_rpc"]["write"][64] == 6268
    assert rpc["rpcs_in_flight"]["write"][10] == 254
    assert rpc["rpcs_in_flight"]["read"][9] == 0
    assert rpc["offset"]["read"][256] == 689
    assert rpc["offset"]["write"][1] == 0

    _, stats = parse_stats(values[f"{osc}.stats"])
    assert stats["ost_write"] == {
        "samples": 377625,
        "unit": "usecs",
        "min": 461,
        "max": 421471,
        "sum": 979664781,
        "sumsq": 20082940007221,
    }
    assert stats["write_bytes"]["min"] == 1
    assert stats["ldlm_glimpse_enqueue"]["sumsq"] == 113496

    problems = []
    _, lstats = parse_stats(values[f"{llite}.stats"], problems)
    assert problems == ["not a counter line, ignored: '...'"]  # the doc's elision, skipped
    assert lstats["openclosetime"]["sumsq"] == 9223372036854775807
    assert lstats["hybrid_write_bytes"]["sumsq"] == 299067162755072
    assert lstats["hybrid_noswitch"] == {
        "samples": 88821351,
        "unit": "reqs",
        "min": None,
        "max": None,
        "sum": None,
        "sumsq": None,
    }
    assert lstats["unlink"]["samples"] == 18379792

    _, ra = parse_stats(values[f"{llite}.read_ahead_stats"])
    assert ra["hits"]["samples"] == 7072178
    assert ra["readahead_pages"] == {
        "samples": 344943,
        "unit": "pages",
        "min": 1,
        "max": 510,
        "sum": 7072198,
        "sumsq": None,
    }

    # mdc rpc_stats: a one-column "modify" block with %% titles, then the OSC-style histograms.
    problems = []
    mdc = parse_rpc_stats(values["mdc.a361000-MDT0000-mdc-ffff000189257000.rpc_stats"], problems)
    assert problems == []
    assert mdc["read_rpcs_in_flight"] == 0
    assert mdc["rpcs_in_flight"] == {"read": {1: 0}, "write": {1: 0}}

    state = parse_import(values[f"{osc}.state"])
    assert state["current_state"] == "FULL"
    assert state["state_history"][2] == [1790008190, "CONNECTING"]
    assert len(state["state_history"]) == 10
    assert parse_key_values(values[f"{osc}.unstable_stats"]) == {"unstable_pages": 0, "unstable_mb": 0}
    assert parse_scalar(values[f"{osc}.cur_grant_bytes"]) == 8437760


def test_b3_ddn_214_vendor_block_and_files() -> None:
    values = parse_get_param(read(DATA / "b3_client.txt"))
    problems: list[str] = []
    rpc = parse_rpc_stats(values["osc.a361000-OST0000-osc-ffff8b524be17800.rpc_stats"], problems)
    assert problems == []  # the vendor "RPC latency (us)" block is recognised and skipped
    assert rpc["header"]["elapsed_time"] == 228.022771215
    assert rpc["dio_rpcs_in_flight"] == 0
    assert rpc["pages_per_rpc"] == {"read": {1: 0}, "write": {1: 0}}
    assert rpc["rpcs_in_flight"] == {"read": {1: 0}, "write": {1: 0}}
    assert rpc["offset"] == {"read": {0: 0}, "write": {0: 0}}

    problems = []
    _, stats = parse_stats(values["llite.a361000-ffff8b524be17800.stats"], problems)
    assert len(problems) == 1
    assert stats["read"] == {
        "samples": 16,
        "unit": "usecs",
        "min": 1207,
        "max": 24862,
        "sum": 219695,
        "sumsq": 4038499167,
    }
    assert stats["ioctl"]["samples"] == 2
    assert stats["openclosetime"]["sumsq"] == 51789960364453
    assert parse_key_values(values["llite.a361000-ffff8b524be17800.statahead_stats"]) == {
        "statahead total": 3,
        "statahead wrong": 0,
        "agl total": 3,
    }
    assert parse_key_values(values["llite.a361000-ffff8b524be17800.unstable_stats"])["unstable_check"] == 1


def test_b5_get_param_excerpt() -> None:
    values = parse_get_param(read(DATA / "b5_get_param.txt"))
    assert parse_scalar(values["osc.testfs-OST0000-osc-ffff8881234abcd0.max_rpcs_in_flight"]) == 8
    assert parse_scalar(values["osc.testfs-OST0001-osc-ffff8881234abcd0.max_rpcs_in_flight"]) == 8
    excerpt = values["osc.testfs-OST0000-osc-ffff8881234abcd0.rpc_stats"]
    assert excerpt.startswith("snapshot_time:            1718000000.123456789 secs.nsecs\n...\n")
    with pytest.raises(ParseError, match="rpc_stats"):
        parse_rpc_stats(excerpt)  # a header and elided lines: not an rpc_stats


# --- §A source-derived samples ---------------------------------------------------------------


def test_a_samples() -> None:
    fresh = parse_rpc_stats(a_sample("A.1"))
    assert fresh["header"] == {
        "snapshot_time": 1718000000.123456789,
        "start_time": 0.0,
        "elapsed_time": 1718000000.123456789,
    }
    assert fresh["pages_per_rpc"] == {"read": {1: 0}, "write": {1: 0}}

    busy = parse_rpc_stats(a_sample("A.2"))
    assert busy["write_rpcs_in_flight"] == 3
    assert busy["pending_write_pages"] == 2048
    assert busy["pages_per_rpc"]["write"] == dict.fromkeys([2**i for i in range(11)], 0) | {
        1: 1,
        4: 1,
        32: 1,
        1024: 256,
    }
    assert busy["rpcs_in_flight"]["write"][9] == 248
    assert busy["offset"]["read"][32768] == 18
    assert busy["offset"]["write"][262144] == 3

    body = a_sample("A.2")
    old_style = a_sample("A.2b") + body[body.index("read RPCs") :]  # the 2.15.0 header
    header = parse_rpc_stats(old_style)["header"]
    assert header == {
        "snapshot_time": 1718000000.123456789,
        "start_time": 1717990000.987654321,
        "elapsed_time": 9999.135802468,
    }

    _, stats = parse_stats(a_sample("A.3"))
    assert stats["ost_write"]["samples"] == stats["write_bytes"]["samples"] == 259
    assert stats["req_waittime"]["sumsq"] == 40874916763
    imp = parse_import(a_sample("A.4"))["import"]
    assert imp["connection"]["idle"] == "0 sec"
    assert imp["read_data_averages"] == {"bytes_per_rpc": 4194304, "usec_per_rpc": 4780, "MB_per_sec": 877.46}
    assert imp["connect_data"]["cksum_types"] == "0xf7"
    _, llite = parse_stats(a_sample("A.5"))
    assert llite["opencount"] == {"samples": 3, "unit": "reqs", "min": 1, "max": 2, "sum": 4, "sumsq": 6}
    _, ra = parse_stats(a_sample("A.6"))
    assert ra["failed_to_fast_read"]["samples"] == 240
    assert parse_key_values(a_sample("A.7"))["used_read_ahead_mb"] == 0
    assert parse_key_values(a_sample("A.8")) == {"used_mb": 312, "busy_cnt": 0, "reclaim": 0}
    assert parse_osc_stats(a_sample("A.9"))[1] == {"lockless_write_bytes": 0, "lockless_read_bytes": 0}
    assert parse_key_values(a_sample("A.10")) == {"unstable_pages": 0, "unstable_mb": 0}


# --- variants --------------------------------------------------------------------------------

COUNTER = "ost_write                 259 samples [usec] 9001 15954 3168136 39709227448\n"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("snapshot_time             1718000000.123456789 secs.nsecs\n", 1718000000.123456789),  # no colon
        ("snapshot_time:            1718000000.123456789 secs.nsecs\n", 1718000000.123456789),  # 2.15.2+
        ("snapshot_time            : 1718000000.123456789 secs.nsecs\n", 1718000000.123456789),  # 2.15.0
        ("snapshot_time:         1510950459.787901292 (secs.nsecs)\n", 1510950459.787901292),  # 2.10
        ("snapshot_time: 1790276932.811612826\n", 1790276932.811612826),  # vendor, no unit
        ("snapshot_time:         1510950459.5 (secs.usecs)\n", 1510950459.000005),  # old, unpadded µs
        ("snapshot_time 86400\n", 86400.0),
    ],
)
def test_header_styles(header: str, expected: float) -> None:
    assert parse_stats(header + COUNTER)[0] == {"snapshot_time": expected}
    assert parse_stats(header + COUNTER)[1]["ost_write"]["sum"] == 3168136


@pytest.mark.parametrize(
    "header",
    [
        f"start_time {'9' * 400}.5 secs.usecs\n",  # float(int) would overflow
        f"start_time {'9' * 400}.123 secs.nsecs\n",  # float() gives inf
        f"start_time 1.{'9' * 5000} secs.usecs\n",  # int() refuses more than 4300 digits
    ],
)
def test_a_header_number_beyond_a_float_is_reported_not_raised(header: str) -> None:
    problems: list[str] = []
    header_values, counters = parse_stats(header + COUNTER, problems=problems)
    assert header_values == {}
    assert counters["ost_write"]["samples"] == 259
    assert len(problems) == 1
    assert "header value out of range" in problems[0]


@pytest.mark.parametrize("unit", ["usec", "usecs", "regs", "reqs", "bytes", "pages", "secs", "bufs", "whatever"])
def test_any_unit(unit: str) -> None:
    _, counters = parse_stats(f"read_bytes 3 samples [{unit}] 1 2 4 6\n")
    assert counters["read_bytes"]["unit"] == unit


def test_line_shapes() -> None:
    _, counters = parse_stats(
        "a 1 samples [reqs]\n"
        "b 2 samples [bytes] 1 2 3\n"
        "c 3 samples [bytes] 1 2 3 18446744073709551615\n"
        "d\t4\tsamples\t[usec]\t5\t6\t7\t8\n"
    )
    assert counters["a"]["min"] is None
    assert (counters["b"]["sum"], counters["b"]["sumsq"]) == (3, None)
    assert counters["c"]["sumsq"] == 2**64 - 1
    assert counters["d"]["sumsq"] == 8


def test_damage_is_skipped_and_reported() -> None:
    text = read(OST0 / "stats")
    problems: list[str] = []
    _, counters = parse_stats(text + "garbage here\n\n" + "ost_read 5 samples [usec] 1\n", problems)
    assert len(problems) == 2
    assert "ost_read" not in counters  # a line with 1 number is not a counter
    assert counters["write_bytes"]["sumsq"] == 10009909738331963392
    # Cut mid-line: the cut line is not read as a counter with a shorter number.
    cut = text[: text.index("65298098221056") + 5]
    problems = []
    _, counters = parse_stats(cut, problems)
    assert "write_bytes" not in counters
    assert counters["req_active"]["sumsq"] == 470089669
    assert len(problems) == 1
    assert "no newline" in problems[0]


def test_nul_bytes() -> None:
    text = read(OST0 / "stats")
    padded = text + "\x00" * 100
    assert parse_stats(padded) == parse_stats(text)
    problems: list[str] = []
    garbled = text.replace("1348857 110282569237", "1348857\x00110282569237")
    _, counters = parse_stats(garbled, problems)
    assert "req_waittime" not in counters  # "1348857110282569237" would be a wrong max
    assert counters["ost_write"]["max"] == 1348857
    assert len(problems) == 1
    assert parse_scalar("8\n\x00\x00") == 8
    with pytest.raises(ParseError):
        parse_scalar("1\x002\n")
    rpc = read(OST0 / "rpc_stats")
    assert parse_rpc_stats("\x00" + rpc + "\x00\x00") == parse_rpc_stats(rpc)


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (parse_stats, ""),
        (parse_stats, "\x00\x00\x00"),
        (parse_stats, "8\n"),
        (parse_stats, "import:\n    name: x\n"),
        (parse_stats, "snapshot_time 1.000000000 secs.nsecs\nreq_wait"),  # cut before any counter
        (parse_rpc_stats, ""),
        (parse_rpc_stats, "ost_write 1 samples [usec] 1 1 1 1\n"),
        (parse_rpc_stats, "snapshot_time:            1718000000.123456789 secs.nsecs\n"),
        (parse_import, ""),
        (parse_import, "just words\nno colons\n"),
        (parse_import, "    name: half"),
        (parse_key_values, ""),
        (parse_key_values, "state: FULL\n"),
        (parse_osc_stats, "snapshot_time:            1718000000.123456789 secs.nsecs\n"),
    ],
)
def test_not_the_format_raises(parser: Any, text: str) -> None:
    with pytest.raises(ParseError) as err:
        parser(text)
    assert "not a Lustre" in str(err.value)


@pytest.mark.parametrize("text", ["", " \n", "\x00", "1\n2\n"])
def test_scalar_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_scalar(text)


def test_import_damage() -> None:
    text = read(OST0 / "import")
    problems: list[str] = []
    data = parse_import(text.replace("       timeouts: 0\n", "      timeouts: 0\n") + "garbage\n", problems)
    assert len(problems) == 2
    assert "timeouts" not in data["import"]["rpcs"]
    assert data["import"]["rpcs"]["avg_waittime"] == "6054 usec"
    problems = []
    data = parse_import(text.replace(", 172.20.20.6@o2ib ]", ", 172.20"), problems)
    assert "failover_nids" not in data["import"]["connection"]
    assert problems


def test_an_import_garbage_line_does_not_orphan_the_lines_after_it() -> None:
    text = read(OST0 / "import")
    clean = parse_import(text)
    # a line that is neither `key: value` nor `- item`, at column 0, in the middle of `import:`
    at = text.index("    connection:")
    problems: list[str] = []
    damaged = parse_import(text[:at] + "\x01garbage\n" + text[at:], problems)
    assert damaged == clean
    assert problems == ["not a 'key: value' or '- item' line, ignored: '\\x01garbage'"]


# --- cutting a file anywhere never gives a wrong number --------------------------------------


def leaves(value: Any, prefix: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Flatten nested dicts and tuples to {path: leaf} (lists are leaves)."""
    if isinstance(value, (dict, tuple)):
        out: dict[tuple[Any, ...], Any] = {}
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            out.update(leaves(item, (*prefix, key)))
        return out
    return {prefix: value}


@pytest.mark.parametrize(
    ("parser", "path"),
    [
        (parse_stats, OST0 / "stats"),
        (parse_rpc_stats, OST0 / "rpc_stats"),
        (parse_import, OST0 / "import"),
        (parse_key_values, LLITE_DIR / "max_cached_mb"),
        (parse_stats, DATA / "b1_llite.txt"),
    ],
)
def test_every_cut_gives_complete_lines_or_an_error(parser: Any, path: Path) -> None:
    text = read(path)
    if path.name == "b1_llite.txt":
        text = text.split("---")[0]
    full = leaves(parser(text))
    for cut in range(len(text)):
        problems: list[str] = []
        try:
            partial = leaves(parser(text[:cut], problems))
        except ParseError:
            continue
        for key, value in partial.items():
            assert full.get(key) == value, (cut, key)
        if parser is parse_rpc_stats and partial != full:
            assert problems, cut  # missing rows are always noticed in rpc_stats


def test_fast_and_line_readers_agree() -> None:
    texts = [read(path) for path in OSC_DIR.glob("*ffff*/*stats")] + [a_sample("A.2"), a_sample("A.3")]
    fast_hits = 0
    for text in texts:
        if "pages per rpc" in text:
            fast: Any = parse._rpc_stats_fast(text)
            slow = _slow(parse_rpc_stats, "_rpc_stats_fast", text)
        elif "samples" in text:
            fast = parse._stats_fast(text)
            slow = _slow(parse_stats, "_stats_fast", text)
        else:
            continue
        if fast is not None:
            fast_hits += 1
            assert fast == slow
    assert fast_hits >= 10


def _slow(parser: Any, fast_name: str, text: str) -> Any:
    saved = getattr(parse, fast_name)
    setattr(parse, fast_name, lambda _text: None)
    try:
        return parser(text)
    finally:
        setattr(parse, fast_name, saved)


# --- pfsim text round trip -------------------------------------------------------------------

ROUND_TRIP = """\
name: round-trip
seed: 3
duration: 2s
cluster: {{preset: cloudlab-c6525, clients: 1, lustre_version: "{version}"}}
jobs:
  - {{name: writer, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 64m}}
  - {{name: reader, client: 0, workload: filebench.randomread, iosize: 4m, filesize: 256m}}
"""


@pytest.mark.parametrize(("version", "unit"), [("2.15.0", "usec"), ("2.15.5", "usec"), ("2.15.7", "usecs")])
def test_pfsim_text_round_trip(version: str, unit: str, tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(ROUND_TRIP.format(version=version))
    engine = Engine(load_scenario(path))
    engine.run(until_ns=700_000_000)
    info = engine.clients()[0]
    texts = {param.name: engine.get_param(0, param.name) for param in engine.list_params(0)}
    writes = reads = 0
    for osc in info["osc"]:

        def text(param: str, osc: str = osc) -> str:
            return texts[f"osc.{osc}.{param}"]

        problems: list[str] = []
        header, stats = parse_stats(text("stats"), problems)
        rpc = parse_rpc_stats(text("rpc_stats"), problems)
        imp = parse_import(text("import"), problems)["import"]
        assert problems == []
        assert parse._rpc_stats_fast(text("rpc_stats")) == rpc  # pfsim prints Lustre's exact layout
        assert parse._stats_fast(text("stats")) == (header, stats)
        assert stats["req_waittime"]["unit"] == unit
        assert imp["rpcs"]["avg_waittime"].endswith(f" {unit}")
        assert imp["name"] == osc
        if version == "2.15.0":
            assert text("rpc_stats").startswith("snapshot_time            : ")
            assert header["snapshot_time"] < 1e9  # monotonic clock (seconds since boot)
        else:
            assert text("rpc_stats").startswith("snapshot_time:            ")
        for direction in ("read", "write"):
            completed = stats.get(f"ost_{direction}", {"samples": 0})["samples"]
            assert completed == stats.get(f"{direction}_bytes", {"samples": 0})["samples"]
            # Histograms tally an RPC when it is sent, stats when it completes.
            sent = completed + rpc[f"{direction}_rpcs_in_flight"]  # type: ignore[literal-required]
            for block in ("pages_per_rpc", "rpcs_in_flight", "offset"):
                assert sum(rpc[block][direction].values()) == sent, (osc, block, direction)  # type: ignore[literal-required]
            mppr = parse_scalar(text("max_pages_per_rpc"))
            mrif = parse_scalar(text("max_rpcs_in_flight"))
            assert isinstance(mppr, int)
            assert isinstance(mrif, int)
            used = [label for label, count in rpc["pages_per_rpc"][direction].items() if count]
            assert max(used, default=1) <= mppr
            in_flight = [label for label, count in rpc["rpcs_in_flight"][direction].items() if count]
            assert max(in_flight, default=1) <= mrif + 1
            if completed:
                assert stats[f"{direction}_bytes"]["max"] <= mppr * 4096  # type: ignore[operator]
        writes += stats.get("ost_write", {"samples": 0})["samples"]
        reads += stats.get("ost_read", {"samples": 0})["samples"]
        assert parse_key_values(text("osc_cached_mb"))["busy_cnt"] >= 0
        assert set(parse_osc_stats(text("osc_stats"))[1]) == {"lockless_write_bytes", "lockless_read_bytes"}
    assert writes > 0
    assert reads > 0

    llite = info["llite"]
    _, lstats = parse_stats(texts[f"llite.{llite}.stats"])
    assert lstats["write_bytes"]["samples"] > 0
    assert lstats["write"]["unit"] == unit
    _, ra = parse_stats(texts[f"llite.{llite}.read_ahead_stats"])
    assert all(counter["unit"] == "pages" and counter["min"] is None for counter in ra.values())
    assert parse_key_values(texts[f"llite.{llite}.max_cached_mb"])["max_read_ahead_mb"] >= 0
    for value in texts.values():  # every one-line file is a scalar
        if value.count("\n") == 1:
            parse_scalar(value)


@pytest.mark.parametrize(
    ("parser", "start"),
    [
        (parse.parse_stats, "snapshot_time"),
        (parse.parse_stats, "snapshot_time: 1.000000000"),
        (parse.parse_rpc_stats, "snapshot_time: 1"),
        (parse.parse_rpc_stats, "pages per rpc"),
        (parse.parse_key_values, "read RPCs in flight"),
        (parse.parse_osc_stats, "snapshot_time"),
    ],
)
def test_a_long_run_of_blanks_is_read_in_linear_time(parser: Any, start: str) -> None:
    # adjacent repetitions of blanks (\s*:?\s*) backtracked quadratically: 16,000 blanks took
    # seconds and a 1 MiB line hours; 200,000 take milliseconds now.  Sixteen times the blanks
    # take about sixteen times as long when linear, 256 times when quadratic (16,000 blanks are
    # small enough for the quadratic case to end in seconds): the bound of 64, over a floor of
    # 1 ms for the small case, leaves room for a noisy machine, and the best of three runs of
    # each is compared.
    def seconds(blanks: int) -> float:
        texts = (start + " " * blanks + "x\n", start + ":" + " " * blanks + "x\n")
        best = math.inf
        for _ in range(3):
            began = time.perf_counter()
            for text in texts:
                with contextlib.suppress(parse.ParseError):
                    parser(text, [])
            best = min(best, time.perf_counter() - began)
        return best

    small, large = seconds(1_000), seconds(16_000)
    assert large < 64 * max(small, 1e-3), f"{large:.4f} s for 16,000 blanks, {small:.4f} s for 1,000"


def test_digits_of_other_scripts_are_not_numbers() -> None:
    problems: list[str] = []
    with pytest.raises(parse.ParseError):
        parse.parse_stats("snapshot_time 1.5 secs.nsecs\nost_write \u0663\u0664 samples [usec] 1 2 3\n", problems)
    assert parse.parse_scalar("\u0668") == "\u0668"  # text, not 8
    with pytest.raises(parse.ParseError, match="not a 'name: number' line"):
        parse.parse_key_values("used_mb: \u0967\u0968\u0969\n", problems)


def test_a_histogram_row_with_leading_blanks_reads_the_same_on_both_paths() -> None:
    text = (OST0 / "rpc_stats").read_text()
    lines = text.split("\n")
    row = next(k for k, line in enumerate(lines) if line.startswith("1:"))
    lines[row] = "    " + lines[row]
    indented = "\n".join(lines)
    fast: list[str] = []
    slow: list[str] = []
    assert parse.parse_rpc_stats(indented, fast) == parse.parse_rpc_stats(indented + "\x00\x00", slow)
    assert fast == []
    assert slow == []


def test_a_get_param_line_of_many_dots_without_a_value_is_read_in_linear_time() -> None:
    # the name pattern nested two repetitions that both took dots: exponential without '='
    with pytest.raises(parse.ParseError, match="no 'name=value'"):
        parse_get_param("osc." + "b." * 5_000 + " x\n")
