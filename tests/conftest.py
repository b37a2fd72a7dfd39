"""Shared fixtures: the example scenarios in ../shared/scenarios and small scenario files."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

#: shared/ lies beside every checkout (and in CI); it holds the example scenarios.
SHARED = Path(__file__).parents[1] / ".." / "shared"

#: One client reading 16 MiB at random offsets for 2 simulated seconds: fast with the real core.
SMALL_SCENARIO = """\
name: small
seed: 7
duration: 2s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: reader, client: 0, workload: filebench.randomread, iosize: 16m, filesize: 1g}
"""


@pytest.fixture(autouse=True)
def _pfstune_logging_as_a_fresh_process_has_it() -> Iterator[None]:
    """Undo a test's `setup_json_logging`: its handler would stay on that test's captured stderr
    (closed afterwards) at its level, and a later test that runs the agent without setting up
    logging (collect) would see records no fresh process prints."""
    logger = logging.getLogger("pfstune")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.propagate = saved[0], saved[2]
    logger.setLevel(saved[1])  # through setLevel, which also drops the loggers' cached levels


@pytest.fixture
def shared_scenarios() -> list[Path]:
    """The example scenario files of shared/scenarios (at least the four seeded ones)."""
    paths = sorted((SHARED / "scenarios").glob("*.yaml"))
    assert len(paths) >= 4, f"expected the example scenarios in {SHARED / 'scenarios'}"
    return paths


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[[str], Path]:
    """Write YAML text to tmp_path/scenario.yaml and return the path."""

    def write(text: str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def small_scenario(write_scenario: Callable[[str], Path]) -> Path:
    """A 2-second, one-client scenario file."""
    return write_scenario(SMALL_SCENARIO, "small.yaml")
