"""Agent options: defaults, the TOML file, flags over the file, one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pfstune.cli.main import build_parser
from pfstune.config import AgentOptions, load_file, resolve
from pfstune.errors import UserError
from pfstune.tuners import make_tuner

PACKAGING = Path(__file__).parents[1] / "packaging"


def test_defaults_without_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("pfstune.config.DEFAULT_CONFIG", tmp_path / "absent.toml")
    options = resolve(None, {})
    assert options == AgentOptions()
    assert options.interval == 0.5
    assert options.state_dir == Path("/run/pfstune")
    assert options.metrics_address == "127.0.0.1"


def test_the_shipped_example_file_loads() -> None:
    options = resolve(PACKAGING / "agent.toml", {})
    assert options.backend == "lustre"
    assert options.tuner == "iopathtune"
    # every tuner option is commented out: another tuner (--tuner dial) would refuse them
    assert options.tuner_options == {}


def test_the_shipped_example_options_each_suit_their_tuner() -> None:
    """Each commented-out option of the example names the tuner it is for, and that tuner takes it."""
    text = (PACKAGING / "agent.toml").read_text()
    table = text.split("[tuner_options]", 1)[1]
    found = re.findall(r"^#(\w+) = \"([^\"]*)\"\s+# (\w+):", table, flags=re.MULTILINE)
    assert {key for key, _, _ in found} == {"period", "guard"}
    for key, value, tuner in found:
        make_tuner(tuner, {key: value})


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('interval = "2s"\ntuner = "default"\nmetrics_port = 9000\n[tuner_options]\na = "1"\nb = 2\n')
    options = resolve(path, {"interval": 0.25, "tuner": None, "tuner_options": {"b": "3"}})
    assert options.interval == 0.25
    assert options.tuner == "default"
    assert options.metrics_port == 9000
    assert options.tuner_options == {"a": "1", "b": "3"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope = 1\n", "unknown key 'nope'"),
        ('interval = "fast"\n', "interval"),
        ("interval = inf\n", "interval: inf is not a positive duration"),  # TOML has inf and nan
        ("duration = nan\n", "duration: nan is not a positive duration"),
        ('interval = "500us"\n', "interval: '500us' is shorter than the shortest probe interval, 1ms"),
        ('backend = "nfs"\n', "backend"),
        ("metrics_port = 70000\n", "metrics_port"),
        ('metrics_port = "abc"\n', "metrics_port: 'abc' is not a TCP port"),
        ("dry_run = 3\n", "dry_run"),
        ("tuner_options = 3\n", "tuner_options"),
        ("this is not toml", "not valid TOML"),
        # text options given another kind of value: refused, not taken as their Python spelling
        ('osc = ["*OST0000*", "*OST0001*"]\n', "osc: expected a string in quotes"),
        ("tuner = 3\n", "tuner: expected a string in quotes"),
        ("state_dir = 5\n", "state_dir: expected a string in quotes"),
    ],
)
def test_bad_files_are_one_line_user_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message) as caught:
        load_file(path)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_utf8_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_bytes(b"\xff\xfe t\x00u\x00n\x00e\x00r\x00")  # saved as UTF-16 by an editor
    with pytest.raises(UserError, match="not valid TOML: not UTF-8 text"):
        load_file(path)


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="No such file"):
        resolve(tmp_path / "absent.toml", {})


def test_no_dry_run_on_the_command_line_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text("dry_run = true\n")
    for argv, expected in ((["agent"], True), (["agent", "--no-dry-run"], False), (["agent", "--dry-run"], True)):
        args = build_parser().parse_args(argv)
        assert resolve(path, {"dry_run": args.dry_run}).dry_run is expected, argv
