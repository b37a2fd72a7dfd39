"""Files a user names are refused when they are not files: a directory, or a device that never ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pfstune.cli.main import main
from pfstune.config import load_file
from pfstune.errors import ScenarioError, UserError
from pfstune.sim.scenario import load_scenario
from pfstune.textfiles import check_is_a_file

needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")


@needs_dev_zero
def test_a_device_is_refused_before_it_is_read() -> None:
    # /dev/zero never ends: reading it whole would take all the memory there is
    with pytest.raises(ScenarioError, match="/dev/zero: is a device or socket, not a scenario file"):
        load_scenario("/dev/zero")
    with pytest.raises(UserError, match="/dev/zero: is a device or socket, not an agent config file"):
        load_file(Path("/dev/zero"))


@needs_dev_zero
def test_lustre_parse_refuses_a_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lustre", "parse", "/dev/zero"]) == 2
    assert "/dev/zero: is a device or socket, not saved `lctl get_param` output" in capsys.readouterr().err


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="is a directory, not a scenario file"):
        load_scenario(tmp_path)


def test_files_pipes_and_absent_paths_pass(tmp_path: Path) -> None:
    regular = tmp_path / "s.yaml"
    regular.write_text("name: s\n")
    check_is_a_file(regular, "a scenario file")
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # `pfstune sim run <(generate-scenario)` reads a pipe
    check_is_a_file(pipe, "a scenario file")
    check_is_a_file(tmp_path / "absent.yaml", "a scenario file")  # the caller's open says why
    if os.path.exists(os.devnull):
        check_is_a_file(os.devnull, "an agent config file")  # `--config /dev/null`: no options
        assert load_file(Path(os.devnull)) == {}
