"""End to end: `pfstune sim serve` keeps a client tree live, `pfstune agent --backend lustre` tunes it.

The tunables change while the agent runs; every original value is back after SIGTERM, and
after SIGKILL plus a restart (the restarted agent restores what the killed one left changed).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SCENARIO = """\
name: e2e
seed: 5
duration: 3600s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 1m, filesize: 20g, stripe_count: 2}
  - {name: writer, client: 0, workload: filebench.seqwrite, iosize: 1m, filesize: 20g, stripe_count: 2}
"""
TUNED = ("max_pages_per_rpc", "max_rpcs_in_flight", "max_dirty_mb")


def _pfstune(*args: str) -> list[str]:
    return [sys.executable, "-m", "pfstune", *args]


def _values(root: Path) -> dict[str, str]:
    """Every tuned parameter file of every OSC under root: relative path -> text."""
    values = {}
    for base in ("sys/fs/lustre/osc", "proc/fs/lustre/osc"):
        for path in sorted((root / base).glob("*/*")):
            if path.name in TUNED:
                values[str(path.relative_to(root))] = path.read_text().strip()
    return values


def _wait(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    scenario = tmp_path / "e2e.yaml"
    scenario.write_text(SCENARIO)
    root = tmp_path / "root"
    # serve's log goes to a file: a pipe nobody reads could fill and block it
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        _pfstune("sim", "serve", str(scenario), "--root", str(root), "--speed", "5"), stderr=log, text=True
    )
    try:
        _wait(lambda: (root / ".pfsim-serve.json").exists(), 60, "sim serve to lay out its tree")
        yield root
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            served_log = (tmp_path / "serve.log").read_text()
            raise AssertionError(f"sim serve did not stop on SIGTERM; its log:\n{served_log}") from None
        finally:
            log.close()


def _agent(root: Path, state: Path, tuner: str = "iopathtune") -> subprocess.Popen[str]:
    options = ["--tuner-option", "period=0.6"] if tuner == "iopathtune" else []
    return subprocess.Popen(
        _pfstune(
            "agent",
            "--backend",
            "lustre",
            "--root",
            str(root),
            "--state-dir",
            str(state),
            "--tuner",
            tuner,
            *options,
            "--interval",
            "0.1s",
            "--config",
            os.devnull,
        ),
        stderr=subprocess.PIPE,
        text=True,
    )


def _sim_time(root: Path) -> int:
    return int(json.loads((root / ".pfsim-serve.json").read_text())["sim_ns"])


def _settled(root: Path) -> None:
    """Wait for two serve steps, so that what was written has been applied and re-published."""
    start = _sim_time(root)
    _wait(lambda: _sim_time(root) >= start + 1_000_000_000, 30, "sim serve to advance")


def test_agent_tunes_a_served_tree_and_restores_it_on_sigterm_and_after_sigkill(served: Path, tmp_path: Path) -> None:
    root, state = served, tmp_path / "state"
    originals = _values(root)
    assert len(originals) == 3 * 8, originals

    agent = _agent(root, state)
    _wait(lambda: _values(root) != originals or agent.poll() is not None, 60, "the agent to change a tunable")
    assert agent.poll() is None, agent.stderr.read() if agent.stderr else ""
    assert (state / "originals.json").exists()
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=30)
    assert agent.returncode == 0, err
    assert _values(root) == originals
    assert not (state / "originals.json").exists()
    _settled(root)
    assert _values(root) == originals, "the simulation did not keep the restored values"
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any("set " in entry["message"] for entry in logs), err

    killed = _agent(root, state)
    _wait(lambda: _values(root) != originals or killed.poll() is not None, 60, "the second agent to change a tunable")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    _settled(root)
    assert _values(root) != originals, "after SIGKILL the changes should still be there"
    assert (state / "originals.json").exists()

    restarted = _agent(root, state, tuner="default")
    _wait(lambda: _values(root) == originals or restarted.poll() is not None, 60, "the restart to restore")
    assert restarted.poll() is None, "the restarted agent exited"
    restarted.send_signal(signal.SIGTERM)
    _, err = restarted.communicate(timeout=30)
    assert restarted.returncode == 0, err
    assert "restor" in err
    _settled(root)
    assert _values(root) == originals
    assert not (state / "originals.json").exists()


def test_a_second_agent_on_the_node_refuses_to_start(served: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = _agent(served, state, tuner="default")
    try:
        _wait(lambda: (state / "agent.lock").exists(), 30, "the first agent's lock")
        time.sleep(0.5)
        second = subprocess.run(
            _pfstune("agent", "--root", str(served), "--state-dir", str(state), "--config", os.devnull),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        assert str(first.pid) in second.stderr
        # the agent logs JSON lines, and the line that says why it stopped is one of them
        last = json.loads(second.stderr.strip().splitlines()[-1])
        assert last["level"] == "error"
        assert last["exit_status"] == 2
        assert str(first.pid) in last["message"]
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)


@pytest.mark.parametrize("json_output", [False, True])
def test_dry_run_prints_lctl_lines_and_writes_nothing(served: Path, tmp_path: Path, json_output: bool) -> None:
    before = _values(served)
    agent = subprocess.Popen(
        _pfstune(
            "agent",
            "--root",
            str(served),
            "--state-dir",
            str(tmp_path / "state"),
            "--dry-run",
            "--tuner-option",
            "period=0.5",
            "--interval",
            "0.1s",
            "--duration",
            "3s",
            "--config",
            os.devnull,
            *(["--json"] if json_output else []),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    if json_output:  # stdout is the summary alone; the lctl lines go to stderr beside the JSON logs
        summary = json.loads(out)
        assert summary["tuner"] == "iopathtune"
        assert summary["decisions"] == 0  # proposals printed, none applied
        out = "\n".join(line for line in err.splitlines() if not line.startswith("{"))
    lines = out.splitlines()
    assert lines, "a dry run of IOPathTune printed no change"
    assert all(line.startswith("lctl set_param osc.") and "=" in line for line in lines), lines
    assert not any(" -P " in line for line in lines)
    assert _values(served) == before
    assert not (tmp_path / "state" / "originals.json").exists()
    assert not (tmp_path / "state" / "tuner.json").exists()


def test_dial_with_the_shipped_model_tunes_a_served_tree_and_restores_it(served: Path, tmp_path: Path) -> None:
    root, state = served, tmp_path / "state"
    originals = _values(root)
    agent = _agent(root, state, tuner="dial")
    _wait(lambda: _values(root) != originals or agent.poll() is not None, 60, "DIAL to change a tunable")
    assert agent.poll() is None, agent.stderr.read() if agent.stderr else ""
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=30)
    assert agent.returncode == 0, err
    assert _values(root) == originals
    _settled(root)
    assert _values(root) == originals
    # what DIAL learned (its per-OSC memory) is saved for the next start
    saved = json.loads((state / "tuner.json").read_text())
    assert saved["tuner"] == "dial"
    assert saved["state"]["originals"]
