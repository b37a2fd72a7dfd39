"""Damaged client trees, generated: whatever a file holds, a probe warns and goes on, never raises.

The fault-injection tests of test_snapshot.py name each case (a half-written file, NUL bytes, a
counter beyond 2^64, ...). This one throws random damage at the files a probe reads (cut short,
bytes changed, lines doubled or dropped, tokens the parsers look for put in odd places) in a copy
of the real 2.10 client tree, through both readers: the Rust table reader the agent uses and
the Python parsers of ``lustre snapshot``. A crash here would stop the agent on a production node.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pfstune.lustre.parse import ParseError
from pfstune.lustre.snapshot import MAX_FILE_BYTES, MINIMAL_FILES, Prober, parse_param
from tests.conftest import SHARED

FIXTURE = SHARED / "fixtures" / "lustre-2.10-client"
#: The files whose text a probe parses (the rest are one-line values or not read at all).
PARSED = (
    "rpc_stats",
    "stats",
    "import",
    "osc_stats",
    "read_ahead_stats",
    "max_pages_per_rpc",
    "max_rpcs_in_flight",
    "max_dirty_mb",
    "cur_dirty_bytes",
    "cur_grant_bytes",
    "max_cached_mb",
)
FILES = sorted(p.relative_to(FIXTURE) for p in FIXTURE.rglob("*") if p.is_file() and p.name in PARSED)
TOKENS = (b"\x00", b"\n", b" ", b"\t", b"-1", b"18446744073709551616", b"9" * 25, b"%%", b":", b"usecs", b"[", b"]")
TOKENS += (b"snapshot_time", b"samples", b"nan", b"1e308", b"\xff\xfe", b"|", b"read", b"write", b"pages per rpc")


def damage(rng: random.Random, data: bytes) -> bytes:
    """A few random edits of ``data``."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if not out:
            out += rng.choice(TOKENS)
            continue
        at = rng.randrange(len(out))
        edit = rng.randrange(6)
        if edit == 0:
            del out[at : at + rng.randint(1, 40)]
        elif edit == 1:
            out[at:at] = rng.choice(TOKENS)
        elif edit == 2:
            del out[at:]  # cut short, as a file read while it is rewritten
        elif edit == 3:
            out[at] = rng.randrange(256)
        elif edit == 4:
            end = out.find(b"\n", at)
            out[at:at] = out[at : end + 1] if end >= 0 else b""  # a line twice
        else:
            out[at:at] = bytes(rng.randrange(48, 58) for _ in range(rng.randint(1, 30)))  # a long number
    return bytes(out)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(rng=st.randoms(use_true_random=False), count=st.integers(1, 4))
def test_a_damaged_tree_never_breaks_a_probe(
    tmp_path_factory: pytest.TempPathFactory, rng: random.Random, count: int
) -> None:
    root = tmp_path_factory.mktemp("client")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    damaged = rng.sample(FILES, count)
    for relative in damaged:
        (root / relative).write_bytes(damage(rng, (FIXTURE / relative).read_bytes()))
    logging.disable(logging.WARNING)  # the warnings are the point; thousands of them are noise here
    try:
        table = Prober(root, files=MINIMAL_FILES).probe_table(1.0)
        snapshot = Prober(root).probe(1.0)
    finally:
        logging.disable(logging.NOTSET)
    assert len(table.oscs) <= 7
    assert len(snapshot["osc"]) <= 7
    for relative in damaged:
        text = (root / relative).read_bytes().decode("ascii", "replace")
        # ParseError is the one exception a parser may raise: the probe reports it and leaves the file out
        with contextlib.suppress(ParseError):
            parse_param(relative.name, text, [])


def test_files_that_are_not_lustres_are_left_out_not_read_forever(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A copied tree can hold what /proc cannot: a pipe (blocks at open), a link to /dev/zero
    (never ends), a file of megabytes. Each is left out with a warning; the rest is read."""
    root = tmp_path / "client"
    shutil.copytree(FIXTURE, root)
    osc = root / "proc" / "fs" / "lustre" / "osc"
    devices = sorted(p for p in osc.iterdir() if p.is_dir() and "-osc-ffff" in p.name)
    pipe = devices[0] / "stats"
    pipe.unlink()
    os.mkfifo(pipe)
    long = devices[1] / "rpc_stats"
    long.write_bytes(long.read_bytes() * (MAX_FILE_BYTES // len(long.read_bytes()) + 2))
    endless = devices[2] / "import"
    if os.path.exists("/dev/zero"):
        endless.unlink()
        endless.symlink_to("/dev/zero")
    with caplog.at_level(logging.WARNING, logger="pfstune.lustre"):
        table = Prober(root, files=MINIMAL_FILES).probe_table(1.0)
        snapshot = Prober(root).probe(1.0)
    assert len(table.oscs) == len(snapshot["osc"]) == 7  # every device is still there
    warned = caplog.text
    assert f"{pipe}: not a regular file; left out" in warned
    assert f"{long}: longer than {MAX_FILE_BYTES} bytes" in warned
    if endless.is_symlink():
        assert f"{endless}: not a regular file; left out" in warned
    assert "rpc_stats" not in snapshot["osc"][devices[1].name]
    assert "rpc_stats" in snapshot["osc"][devices[0].name]  # what is left of a device is read


def test_a_device_directory_that_cannot_be_listed_costs_only_that_device(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A device directory replaced by a link to itself (ELOOP): that device's files are left out,
    with one warning that says so, and every other device is read."""
    root = tmp_path / "client"
    shutil.copytree(FIXTURE, root)
    osc = root / "proc" / "fs" / "lustre" / "osc"
    devices = sorted(p for p in osc.iterdir() if p.is_dir() and "-osc-ffff" in p.name)
    looped = devices[0]
    shutil.rmtree(looped)
    looped.symlink_to(looped.name)
    with caplog.at_level(logging.WARNING, logger="pfstune.lustre"):
        table = Prober(root, files=MINIMAL_FILES).probe_table(1.0)
        snapshot = Prober(root).probe(1.0)
    assert f"{looped}: cannot list" in caplog.text
    assert "its files are left out" in caplog.text
    assert "rpc_stats" not in snapshot["osc"].get(looped.name, {})
    for device in devices[1:]:
        assert "rpc_stats" in snapshot["osc"][device.name]
        assert snapshot["osc"][device.name]["tunables"]["max_rpcs_in_flight"] == 8
    readable = [name for name, tunables in zip(table.oscs, table.tunables, strict=True) if tunables]
    assert sorted(readable) == sorted(d.name for d in devices[1:])
