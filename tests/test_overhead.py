"""pfstune overhead: one real agent tick over a virtual tree of N OSCs, timed by phase."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pfstune import overhead
from pfstune.cli.main import main
from pfstune.errors import PfstuneError
from pfstune.lustre import layout
from pfstune.lustre.layout import parse_osc_name
from pfstune.overhead import measure, tree_parent


def test_measure_runs_every_phase_over_n_busy_oscs() -> None:
    result = measure(3, tuner="dial", repeat=2)
    assert result["oscs"] == 3
    assert result["repeat"] == 2
    for key in ("probe_ms", "features_ms", "inference_ms", "apply_ms"):
        assert result[key] >= 0
    phases = result["probe_ms"] + result["features_ms"] + result["inference_ms"] + result["apply_ms"]
    assert result["tick_ms"] == pytest.approx(phases)  # with two ticks each median is a mean, and means add up
    # the copies carry traffic, so DIAL scores them: inference is a real model call, not a skip
    assert result["inference_ms"] > 0.1
    assert result["per_osc_ms"] == pytest.approx(result["tick_ms"] / 3)
    for key in ("probe_ms", "features_ms", "inference_ms", "apply_ms", "tick_ms"):
        assert result["per_osc"][key] == pytest.approx(result[key] / 3)
    assert isinstance(result["writes_per_tick"], float)


def test_overhead_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["overhead", "--oscs", "2", "--repeat", "1", "--tuner", "iopathtune", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"probe_ms", "features_ms", "inference_ms", "apply_ms", "tick_ms", "per_osc_ms"}
    with pytest.raises(SystemExit) as exit_:
        main(["overhead", "--oscs", "0"])
    assert exit_.value.code == 2
    assert "pfstune overhead: error: argument --oscs: 0 is not between 1 and 100000" in capsys.readouterr().err
    # a tuner's options reach it: the oracle needs its configuration
    args = ["--tuner-option", "max_pages_per_rpc=64", "--tuner-option", "max_rpcs_in_flight=16"]
    assert main(["overhead", "--oscs", "2", "--repeat", "1", "--tuner", "oracle", *args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_writes"] == 4


def test_the_first_tick_with_writes_is_reported_apart() -> None:
    """The random tuner writes every OSC at the first tick, after saving every original."""
    result = measure(4, tuner="random", repeat=1)
    assert result["first_writes"] >= 4  # at least one parameter per OSC
    assert 0 < result["first_apply_ms"] <= result["first_tick_ms"]


def test_osts_past_ffff_are_tuned_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # OST%04x prints five hex digits from 0x10000: those OSCs must be read like the others
    device = parse_osc_name("testfs-OST10000-osc-ffff88aa00000000")
    assert device is not None
    assert device.ost_index == 0x10000
    real_range = range
    monkeypatch.setattr(overhead, "range", lambda n: real_range(0xFFFE, 0xFFFE + n), raising=False)
    assert measure(4, tuner="default", repeat=1)["oscs"] == 4
    # and were one missed, the per-OSC figures would be wrong: measure says so instead
    monkeypatch.setattr(layout, "_OSC_NAME", re.compile(layout._OSC_NAME.pattern.replace("{4,8}", "{4}")))
    with pytest.raises(PfstuneError, match=r"the agent saw \[2\] of the 4 virtual OSCs"):
        measure(4, tuner="default", repeat=1)


def test_a_warm_up_tick_is_left_out_of_the_timed_ones() -> None:
    result = measure(2, tuner="dial", repeat=1)
    assert result["warmup_tick_ms"] > 0
    assert result["repeat"] == 1


def test_sigterm_removes_the_temporary_tree(tmp_path: Path) -> None:
    # timeout, kill and systemd send SIGTERM: the tree in /dev/shm (RAM) must not stay behind
    parent = Path(tree_parent() or tempfile.gettempdir())
    before = set(parent.glob("pfstune-overhead-*"))
    code = "import sys; from pfstune.cli.main import main; sys.exit(main(sys.argv[1:]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "overhead", "--oscs", "2000", "--repeat", "50", "--tuner", "default"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not set(parent.glob("pfstune-overhead-*")) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    ours = set(parent.glob("pfstune-overhead-*")) - before
    assert ours, "the tree never appeared"
    time.sleep(0.5)  # inside the measurement
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert not [path for path in ours if path.exists()]
