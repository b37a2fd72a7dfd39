"""What a tuner has learned, kept across agent restarts: ``STATE_DIR/tuner.json``.

The Tuner interface has ``state_dict`` / ``load_state_dict`` (plain JSON data, never pickle) so
that an agent that stops, for an upgrade, a reboot or a crash, continues where it stopped: the
bandit keeps its value table, DIAL its per-OSC memory, IOPathTune its trends.  The agent saves
the state every :data:`SAVE_EVERY_S` seconds and when it stops, and loads it when it starts if
the file was written by the same tuner with the same options; otherwise it starts afresh and
says why.  The file is written atomically (:func:`~pfstune.lustre.state.write_json_atomically`).

An agent restored every original value when it stopped, so a tuner may find its OSCs at other
values than it last chose; every tuner copes with that already (an administrator's change looks
the same).
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pfstune.agent import TickReport
from pfstune.errors import UserError
from pfstune.lustre.state import write_json_atomically
from pfstune.tuners._base import Tuner

log = logging.getLogger("pfstune.agent")

TUNER_STATE_FILE = "tuner.json"
#: Seconds between two saves while the agent runs (a crash loses at most this much learning).
SAVE_EVERY_S = 60.0
STATE_VERSION = 1


def load_tuner_state(state_dir: Path, tuner: Tuner, options: Mapping[str, str]) -> bool:
    """Load ``tuner``'s saved state if the file is its own (same tuner and options); True if loaded."""
    path = state_dir / TUNER_STATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError) as err:
        log.warning("%s: cannot read it (%s); the tuner starts afresh", path, err)
        return False
    try:
        saved = json.loads(text)
        if not isinstance(saved, dict) or saved.get("version") != STATE_VERSION:
            raise ValueError("not a pfstune tuner state")
        if saved.get("tuner") != tuner.name or saved.get("options") != dict(options):
            log.info(
                "%s holds the state of tuner %s with options %s; %s with %s starts afresh",
                path, saved.get("tuner"), saved.get("options"), tuner.name, dict(options),
            )  # fmt: skip
            return False
        # into a copy first: a state that fails half-way must not leave the tuner half-loaded
        copy.deepcopy(tuner).load_state_dict(saved["state"])
        tuner.load_state_dict(saved["state"])
    except (UserError, ValueError, KeyError, TypeError, AttributeError) as err:
        log.warning("%s: not a state this tuner can load (%s); the tuner starts afresh", path, err)
        return False
    log.info("tuner %s continues from the state saved at %s", tuner.name, saved.get("saved"))
    return True


def save_tuner_state(state_dir: Path, tuner: Tuner, options: Mapping[str, str]) -> None:
    """Write ``tuner``'s state to ``state_dir``; a failure is logged, never raised (it is not safety)."""
    document: dict[str, Any] = {
        "version": STATE_VERSION,
        "tuner": tuner.name,
        "options": dict(options),
        "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "state": tuner.state_dict(),
    }
    try:
        write_json_atomically(state_dir / TUNER_STATE_FILE, document)
    except (OSError, TypeError, ValueError) as err:
        log.warning("cannot save the tuner's state in %s: %s", state_dir / TUNER_STATE_FILE, err)


class PeriodicSave:
    """A tick listener that saves the tuner's state every ``every`` seconds of agent time."""

    def __init__(self, state_dir: Path, tuner: Tuner, options: Mapping[str, str], every: float = SAVE_EVERY_S) -> None:
        """Save ``tuner``'s state into ``state_dir`` at most every ``every`` seconds."""
        self.state_dir, self.tuner, self.options, self.every = state_dir, tuner, dict(options), every
        self._last: float | None = None

    def __call__(self, report: TickReport) -> None:
        """Save if ``every`` seconds passed since the last save (the first tick only starts the count)."""
        if self._last is None:
            self._last = report.time
        elif report.time - self._last >= self.every:
            save_tuner_state(self.state_dir, self.tuner, self.options)
            self._last = report.time
