"""The node's page cache (preset field ``client_page_cache``): clean pages are kept only so far.

DIAL's real clients kept about 850 MiB of the data they read (docs/calibration.md, "The real
clients' page cache"): a 10 GiB file read over and over came from the OSTs every time.  Pages
that are dirty or in a write RPC cannot be reclaimed and stay whatever the limit.
"""

from __future__ import annotations

import re

import pytest

from pfstune.errors import ScenarioError
from pfstune.sim.engine import Engine
from pfstune.sim.presets import PRESETS, resolve_field
from pfstune.sim.scenario import parse_scenario


def engine(job: str, page_cache: str, duration: str = "20s") -> Engine:
    text = (
        f"name: cache\nseed: 1\nduration: {duration}\n"
        f"cluster: {{preset: cloudlab-c6525, clients: 1, client_page_cache: {page_cache}}}\n"
        f"jobs:\n  - {job}\n"
    )
    return Engine(parse_scenario(text, "cache.yaml"))


def read_hits(e: Engine, seconds: int) -> list[float]:
    """Per second: the share of the application's reads that no read RPC carried."""
    shares = []
    before = e.totals()
    for second in range(1, seconds + 1):
        e.run(second * 10**9)
        now = e.totals()
        app = now["app_read_bytes"] - before["app_read_bytes"]
        osc = now["osc_read_bytes"] - before["osc_read_bytes"]
        shares.append(1 - osc / app if app else 0.0)
        before = now
    return shares


SEQREAD = "{name: r, client: 0, workload: filebench.seqread, iosize: 1m, filesize: 1g, stripe_count: 1}"


def test_a_file_larger_than_the_page_cache_is_read_again_from_the_osts() -> None:
    # 1 GiB at about 500 MB/s: every pass after the first 2-3 s rereads the file
    unlimited = read_hits(engine(SEQREAD, "none"), 8)
    small = read_hits(engine(SEQREAD, "256m"), 8)
    assert unlimited[-1] > 0.99  # Lustre's own limit (64 GiB) keeps the whole file
    assert max(small) < 0.01  # sequential passes through an LRU smaller than the file find nothing


def test_random_reads_find_the_share_of_the_file_the_cache_holds() -> None:
    job = "{name: r, client: 0, workload: filebench.randomread, iosize: 1m, filesize: 2g, stripe_count: 1}"
    shares = read_hits(engine(job, "512m", duration="40s"), 40)
    # after the cache has filled, a random read finds about 512 MiB / 2 GiB of the file
    assert 0.2 < sum(shares[-10:]) / 10 < 0.3


def ra_counter(e: Engine, name: str) -> int:
    (client,) = e.clients()
    text = e.get_param(0, f"llite.{client['llite']}.read_ahead_stats")
    found = re.search(rf"^{name}\s+(\d+) samples", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def test_read_ahead_the_cache_dropped_unread_resets_the_window_and_is_read_ahead_again() -> None:
    # four readers of files striped over all eight OSTs: replies come back out of order, and
    # read-ahead the readers have not reached yet outgrows a 64 MiB cache. A reader that then
    # misses a page its window had read ahead resets the window (ras_update(),
    # miss_inside_window) and read-ahead starts again after it; pfsim before this rule kept the
    # window where it was and read everything behind it one read() at a time (misses 4x hits)
    job = "{name: r, client: 0, workload: filebench.seqread, iosize: 1m, filesize: 4g, threads: 4, stripe_count: -1}"
    e = engine(job, "64m", duration="10s")
    e.run()
    assert ra_counter(e, "miss_inside_window") > 0
    assert ra_counter(e, "hits") > 10 * ra_counter(e, "misses")
    e.check_invariants()


def test_dirty_pages_stay_cached_beyond_the_limit() -> None:
    # a writer far ahead of its OST: hundreds of MiB dirty, more than the 64 MiB page cache
    job = "{name: w, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 4g, stripe_count: 1}"
    e = engine(job, "64m", duration="4s")
    (client,) = e.clients()
    osc = client["osc"]
    most_dirty = 0
    for tenth in range(1, 41):
        e.run(tenth * 10**8)
        dirty = sum(int(e.get_param(0, f"osc.{name}.cur_dirty_bytes")) for name in osc)
        used = re.search(r"used_mb: (\d+)", e.get_param(0, f"llite.{client['llite']}.max_cached_mb"))
        assert used is not None
        assert int(used.group(1)) >= dirty // 2**20  # every dirty page is still in the cache
        most_dirty = max(most_dirty, dirty)
        e.check_invariants()
    assert most_dirty > 256 * 2**20


def test_lustres_max_cached_mb_drops_no_dirty_page_either() -> None:
    # Lustre counts dirty pages against max_cached_mb but never drops them (a writer waits for a
    # slot instead; pfsim lets it write): a read of dirty data must find it cached
    job = "{name: w, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 4g, stripe_count: 1}"
    e = engine(job, "none", duration="4s")
    e.set_all("llite.max_cached_mb", "64")
    (client,) = e.clients()
    e.run(2 * 10**9)
    dirty = sum(int(e.get_param(0, f"osc.{name}.cur_dirty_bytes")) for name in client["osc"])
    used = re.search(r"used_mb: (\d+)", e.get_param(0, f"llite.{client['llite']}.max_cached_mb"))
    assert used is not None
    assert dirty > 256 * 2**20
    assert int(used.group(1)) >= dirty // 2**20
    e.check_invariants()


def test_the_field_shows_in_no_lustre_file() -> None:
    # it is the node's memory, not a Lustre tunable: max_cached_mb stays Lustre's default
    e = engine(SEQREAD, "256m")
    (client,) = e.clients()
    text = e.get_param(0, f"llite.{client['llite']}.max_cached_mb")
    assert "max_cached_mb: 65536" in text


def test_the_field_takes_a_size_or_none() -> None:
    assert resolve_field("client_page_cache", "850m") == ("client_page_cache_bytes", 850 * 2**20)
    assert resolve_field("client_page_cache", "none") == ("client_page_cache_bytes", None)
    assert PRESETS["cloudlab-c6525"]["client_page_cache"] == "850m"
    with pytest.raises(ScenarioError, match=r"cluster\.client_page_cache"):
        engine(SEQREAD, "0")


def test_a_reclaim_behind_many_dirty_entries_still_keeps_clean_pages_to_the_limit() -> None:
    # 64 KiB random writes with 16-page RPCs leave thousands of dirty entries at the LRU's front,
    # which the reclaim holds aside until they are written; a reader that follows must still
    # find the clean pages held to max_cached_mb, and the cache at it once the writes are out
    text = (
        "name: cache\nseed: 1\nduration: 6s\n"
        "cluster: {preset: cloudlab-c6525, clients: 1}\n"
        "tunables: {osc.max_pages_per_rpc: 16, llite.max_cached_mb: 64}\n"
        "jobs:\n"
        "  - {name: w, client: 0, workload: filebench.randomwrite, iosize: 64k, filesize: 1g,"
        " stripe_count: 1, stop: 1s}\n"
        "  - {name: r, client: 0, workload: filebench.seqread, iosize: 1m, filesize: 2g,"
        " stripe_count: 1, start: 2s}\n"
    )
    e = Engine(parse_scenario(text, "cache.yaml"))
    (client,) = e.clients()
    most_dirty = used_mb = dirty = 0
    for half in range(1, 13):
        e.run(half * 5 * 10**8)
        used = re.search(r"used_mb: (\d+)", e.get_param(0, f"llite.{client['llite']}.max_cached_mb"))
        assert used is not None
        used_mb = int(used.group(1))
        dirty = sum(int(e.get_param(0, f"osc.{name}.cur_dirty_bytes")) for name in client["osc"]) // 2**20
        most_dirty = max(most_dirty, dirty)
        if half >= 5:  # the reader caches pages from 2 s on: clean pages at most the limit and a read
            assert used_mb - dirty <= 64 + 2
    assert most_dirty > 512
    assert used_mb == 64
    assert dirty == 0
    e.check_invariants()
