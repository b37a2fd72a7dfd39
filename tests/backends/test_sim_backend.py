"""The sim backend passes the backend conformance suite and runs on simulated time."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pfstune.backends.sim import SimBackend
from pfstune.lustre.table import ProbeTable
from pfstune.testing.backends import check_backend
from tests.lustre.test_table import assert_same_table

WRITER = """\
name: writer
seed: 3
duration: 4s
cluster: {preset: cloudlab-c6525, clients: 2}
jobs:
  - {name: w, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 2g, stripe_count: 2}
  - {name: r, client: 1, workload: filebench.randomread, iosize: 1m, filesize: 1g}
"""


@pytest.fixture
def writer(write_scenario) -> Path:  # type: ignore[no-untyped-def]
    return write_scenario(WRITER, "writer.yaml")  # type: ignore[no-any-return]


def _advance(backend: SimBackend) -> None:
    backend.clock.sleep_until(backend.clock.now() + 0.5)


def test_sim_backend_conforms(writer: Path) -> None:
    check_backend(lambda: SimBackend.from_file(writer), _advance)


def test_probe_covers_every_client(writer: Path) -> None:
    with SimBackend.from_file(writer) as backend:
        snapshot = backend.probe()
        assert len(snapshot["llite"]) == 2
        assert len(snapshot["osc"]) == 16  # 2 clients x 8 OSTs
        _advance(backend)
        busy = [osc for osc in backend.probe()["osc"].values() if osc["stats"].get("ost_write")]
        assert busy, "the writer's OSCs show no write RPCs after 0.5 s"


def test_clock_stops_at_the_end_of_the_scenario_and_on_request(writer: Path) -> None:
    stop = threading.Event()
    backend = SimBackend.from_file(writer, stop=stop)
    assert backend.clock.sleep_until(1.0) is True
    assert backend.clock.now() == pytest.approx(1.0)
    assert backend.clock.sleep_until(10.0) is False  # the scenario lasts 4 s
    assert backend.clock.now() == pytest.approx(4.0)
    stop.set()
    assert backend.clock.sleep_until(4.0) is False


def test_probe_table_is_the_probe_packed(writer: Path) -> None:
    """The extension's reader, given pfsim's text, makes the table Python's parsers make of it."""
    with SimBackend.from_file(writer) as backend:
        for _ in range(4):
            _advance(backend)
            fast = backend.probe_table()
            assert_same_table(fast, ProbeTable.from_snapshot(backend.probe()))
        table = fast.table
        assert table.rpc.all()
        assert table.stats.present.all()
        assert table.llite.present.all()
        assert table.hist.sum() > 0  # RPCs were counted: the numbers compared are not all zero
        write_bytes = table.llite.column("write_bytes")
        assert write_bytes is not None
        assert table.llite.total[:, write_bytes].max() > 0
