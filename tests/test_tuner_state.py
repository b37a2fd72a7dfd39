"""A tuner's state across agent restarts: STATE_DIR/tuner.json."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pfstune.agent import TickReport
from pfstune.testing.tuners import SyntheticOsc, drive
from pfstune.tuner_state import TUNER_STATE_FILE, PeriodicSave, load_tuner_state, save_tuner_state
from pfstune.tuners import make_tuner


def _learned(name: str, options: dict[str, str]) -> object:
    tuner = make_tuner(name, options)
    for _ in drive(tuner, SyntheticOsc(), ticks=60):
        pass
    return tuner


@pytest.mark.parametrize("name", ["bandit", "iopathtune"])
def test_a_restarted_agent_s_tuner_continues_where_it_stopped(tmp_path: Path, name: str) -> None:
    options = {"seed": "3"} if name == "bandit" else {"period": "1"}
    before = _learned(name, options)
    save_tuner_state(tmp_path, before, options)  # type: ignore[arg-type]
    after = make_tuner(name, options)
    assert load_tuner_state(tmp_path, after, options)
    assert after.state_dict() == before.state_dict()  # type: ignore[attr-defined]
    saved = json.loads((tmp_path / TUNER_STATE_FILE).read_text())
    assert (saved["tuner"], saved["options"]) == (name, options)


def test_another_tuner_or_other_options_start_afresh(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_tuner_state(tmp_path, _learned("bandit", {"seed": "3"}), {"seed": "3"})  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger="pfstune.agent")
    fresh = make_tuner("bandit", {"seed": "4"})
    assert not load_tuner_state(tmp_path, fresh, {"seed": "4"})
    assert fresh.state_dict() == make_tuner("bandit", {"seed": "4"}).state_dict()
    assert not load_tuner_state(tmp_path, make_tuner("iopathtune"), {})
    assert caplog.text.count("starts afresh") == 2


@pytest.mark.parametrize("text", ["{", "[]", '{"version": 1, "tuner": "bandit", "options": {}, "state": 3}'])
def test_a_damaged_file_is_a_warning_and_a_fresh_start(
    tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / TUNER_STATE_FILE).write_text(text)
    assert not load_tuner_state(tmp_path, make_tuner("bandit"), {})
    assert "starts afresh" in caplog.text


def test_periodic_save_waits_its_period(tmp_path: Path) -> None:
    tuner = make_tuner("default")
    save = PeriodicSave(tmp_path, tuner, {}, every=10.0)
    for t in (0.0, 5.0, 9.5):
        save(TickReport(time=t))
    assert not (tmp_path / TUNER_STATE_FILE).exists()
    save(TickReport(time=10.0))
    assert (tmp_path / TUNER_STATE_FILE).exists()


def test_a_save_that_fails_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_tuner_state(tmp_path / "absent", make_tuner("default"), {})
    assert "cannot save the tuner's state" in caplog.text
