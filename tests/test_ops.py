"""Operations plumbing: JSON logs, sd_notify, the Prometheus exporter."""

from __future__ import annotations

import io
import json
import logging
import socket
import urllib.request
from pathlib import Path

import pytest

from pfstune.exporter import Exporter
from pfstune.logs import setup_json_logging
from pfstune.systemd import notify


def test_logs_are_one_json_object_per_line() -> None:
    stream = io.StringIO()
    setup_json_logging("debug", stream)
    logging.getLogger("pfstune.agent").info("set %s", "x=1", extra={"osc": "fs-OST0000-osc-ffff0001"})
    logging.getLogger("pfstune.lustre").debug("two")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["message"] == "set x=1"
    assert first["level"] == "info"
    assert first["logger"] == "pfstune.agent"
    assert first["osc"] == "fs-OST0000-osc-ffff0001"
    assert first["time"].endswith("+00:00")
    setup_json_logging("warning", stream)
    logging.getLogger("pfstune").info("hidden")
    assert len(stream.getvalue().splitlines()) == 2


def test_notify_without_systemd_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False


def test_notify_sends_a_datagram(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(str(path))
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        assert notify("READY=1") is True
        assert server.recv(64) == b"READY=1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_oscs_series_go_away_with_it() -> None:
    """A remount renames every OSC: the old names' series must not stay at their last values."""
    from prometheus_client import generate_latest

    from pfstune.agent import TickReport

    exporter = Exporter()
    old, new = "fs-OST0000-osc-ffff000000000001", "fs-OST0000-osc-ffff000000000002"
    config = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 16}
    exporter(
        TickReport(
            time=1.0,
            changes={old: {"max_rpcs_in_flight": 16}},
            mbps={old: 812.5},
            configs={old: config},
            left_alone=frozenset({old}),
        )
    )
    text = generate_latest(exporter.registry).decode()
    assert text.count(f'osc="{old}"') == 6  # two tunables, throughput, decisions (_total, _created), left alone
    exporter(TickReport(time=1.5, configs={old: config, new: config}))  # no throughput this interval
    text = generate_latest(exporter.registry).decode()
    assert f'pfstune_osc_throughput_bytes_per_second{{osc="{old}"}}' not in text
    assert f'pfstune_osc_tunable{{osc="{new}",param="max_rpcs_in_flight"}} 16.0' in text
    exporter(TickReport(time=2.0, mbps={new: 100.0}, configs={new: config}))
    text = generate_latest(exporter.registry).decode()
    assert f'osc="{old}"' not in text
    assert f'pfstune_osc_throughput_bytes_per_second{{osc="{new}"}} 1e+08' in text
    assert text.count(f'osc="{new}"') == 3


def test_exporter_serves_the_agent_metrics_on_localhost() -> None:
    from pfstune.agent import TickReport

    exporter = Exporter()
    osc = "fs-OST0000-osc-ffff000000000001"
    exporter(
        TickReport(
            time=1.0,
            oscs=1,
            changes={osc: {"max_rpcs_in_flight": 16}},
            errors=2,
            mbps={osc: 812.5},
            configs={osc: {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 16}},
            seconds=0.004,
        )
    )
    port = _free_port()
    exporter.serve(port)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert f'pfstune_osc_tunable{{osc="{osc}",param="max_rpcs_in_flight"}} 16.0' in text
    assert f'pfstune_osc_throughput_bytes_per_second{{osc="{osc}"}} 8.125e+08' in text
    assert f'pfstune_decisions_total{{osc="{osc}"}} 1.0' in text
    assert "pfstune_errors_total 2.0" in text
    assert "pfstune_tick_seconds_count 1.0" in text


def test_max_dirty_mb_is_exported_beside_the_tuned_parameters() -> None:
    """Lustre raises max_dirty_mb with the RPC window and the agent restores it: an administrator sees it too."""
    from prometheus_client import generate_latest

    from pfstune.agent import TickReport

    exporter = Exporter()
    osc = "fs-OST0000-osc-ffff000000000001"
    config = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 16}
    exporter(TickReport(time=1.0, configs={osc: config}, dirty_mb={osc: 2000}))
    text = generate_latest(exporter.registry).decode()
    assert f'pfstune_osc_tunable{{osc="{osc}",param="max_dirty_mb"}} 2000.0' in text
    exporter(TickReport(time=1.5, configs={osc: config}))  # its file could not be read this time
    text = generate_latest(exporter.registry).decode()
    assert 'param="max_dirty_mb"' not in text
    assert f'pfstune_osc_tunable{{osc="{osc}",param="max_rpcs_in_flight"}} 16.0' in text
