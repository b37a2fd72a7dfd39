"""`pfstune sim serve` in a subprocess: a live tree that applies writes (needs the compiled core)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SCENARIO = """\
name: serve
seed: 1
duration: {duration}
cluster: {{preset: cloudlab-c6525, clients: 1}}
jobs:
  - {{name: reader, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 1g}}
"""


def serve(scenario: Path, root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pfstune", "sim", "serve", str(scenario), "--root", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], bool], timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def sim_ns(root: Path) -> int:
    try:
        return int(json.loads((root / ".pfsim-serve.json").read_text())["sim_ns"])
    except (OSError, ValueError):
        return -1


def test_serve_applies_writes_and_reverts_refused_ones(write_scenario: Callable[[str], Path], tmp_path: Path) -> None:
    root = tmp_path / "root"
    process = serve(write_scenario(SCENARIO.format(duration="600s")), root, "--speed", "50")
    try:
        wait_for(lambda: sim_ns(root) >= 0)
        status = json.loads((root / ".pfsim-serve.json").read_text())
        assert status["pid"] == process.pid
        assert status["scenario"] == "serve"

        files = sorted(root.glob("sys/fs/lustre/osc/*/max_rpcs_in_flight"))
        assert len(files) == 8
        file = files[0]
        device = file.parent.name
        rpc_stats = root / "proc/fs/lustre/osc" / device / "rpc_stats"
        assert (root / "sys/kernel/debug/lustre/osc" / device / "stats").is_file()
        assert file.read_text() == "8\n"

        file.write_text("32")
        before_ns, before_stats = sim_ns(root), rpc_stats.read_text()
        wait_for(lambda: sim_ns(root) >= before_ns + 2_000_000_000 and rpc_stats.read_text() != before_stats)
        assert file.read_text() == "32"  # an accepted value stays as written

        file.write_text("0")
        wait_for(lambda: file.read_text() != "0")
        assert file.read_text() == "32\n"  # a refused one reverts to the value in force: 32
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    assert f"set_param osc.{device}.max_rpcs_in_flight=0: " in stderr
    assert "Traceback" not in stderr


def test_a_write_is_applied_before_the_next_probe_interval(
    write_scenario: Callable[[str], Path], tmp_path: Path
) -> None:
    """A sysfs write takes effect (or fails) at once: a refused value shows the old one again well
    before the tree's next refresh, 3 s of simulated and real time away."""
    root = tmp_path / "root"
    scenario = SCENARIO.format(duration="60s").replace("seed: 1\n", "seed: 1\nprobe_interval: 3s\n")
    process = serve(write_scenario(scenario), root, "--speed", "1")
    try:
        wait_for(lambda: sim_ns(root) == 0)
        file = sorted(root.glob("sys/fs/lustre/osc/*/max_rpcs_in_flight"))[0]
        file.write_text("0")
        wait_for(lambda: file.read_text() == "8\n", timeout=2.0)
        assert sim_ns(root) == 0  # no refresh yet
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    assert "max_rpcs_in_flight=0: " in stderr


def test_serve_stops_at_the_end_of_the_scenario(write_scenario: Callable[[str], Path], tmp_path: Path) -> None:
    root = tmp_path / "root"
    process = serve(write_scenario(SCENARIO.format(duration="5s")), root, "--speed", "100")
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert sim_ns(root) == 5_000_000_000
