"""The agent's options: one table, read from ``/etc/pfstune/agent.toml`` and the command line.

Every option has a flag (``--state-dir``) and a config-file key (``state_dir``); the command line
wins over the file, the file over the defaults.  A key the agent does not know, or a value of
the wrong kind, is a one-line :class:`~pfstune.errors.UserError` naming the file and the key.

Example ``agent.toml``::

    tuner = "iopathtune"
    interval = "0.5s"
    osc = "*-osc-ffff*"
    state_dir = "/run/pfstune"
    metrics_port = 9419

    [tuner_options]
    period = "10"
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pfstune.errors import UserError
from pfstune.textfiles import check_is_a_file
from pfstune.units import MIN_PROBE_INTERVAL_NS, parse_duration

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

#: Where the agent looks for its config file when ``--config`` is not given.
DEFAULT_CONFIG = Path("/etc/pfstune/agent.toml")


def seconds(value: object) -> float:
    """A duration as seconds: ``"0.5s"``, ``"500ms"``, or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    result = float(value) if isinstance(value, (int, float)) else parse_duration(str(value)) / 1e9
    if not 0 < result < float("inf"):
        raise ValueError(f"{value!r} is not a positive duration")
    return result


def _interval(value: object) -> float:
    result = seconds(value)
    if result * 1e9 < MIN_PROBE_INTERVAL_NS:
        raise ValueError(f"{value!r} is shorter than the shortest probe interval, {MIN_PROBE_INTERVAL_NS / 1e6:g}ms")
    return result


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{value!r} is not a boolean")


def _port(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a port")
    try:
        port = int(str(value))
    except ValueError:
        raise ValueError(f"{value!r} is not a TCP port (0-65535)") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{value!r} is not a TCP port (0-65535)")
    return port


def _choice(*choices: str) -> Callable[[object], str]:
    def convert(value: object) -> str:
        if value not in choices:
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
        return str(value)

    return convert


def _text(value: object) -> str:
    # a TOML list or number where text belongs would otherwise be taken as its Python spelling
    if not isinstance(value, str):
        raise ValueError(f"expected a string in quotes, got {value!r}")
    return value


def _path(value: object) -> Path:
    return Path(_text(value))


def _level(value: object) -> str:
    return _choice("debug", "info", "warning", "error")(str(value).lower())


@dataclass
class AgentOptions:
    """Everything ``pfstune agent`` can be told.  Field metadata: the converter and the help."""

    backend: str = field(default="lustre", metadata={"convert": _choice("lustre", "sim"), "help": "where to tune"})
    root: Path = field(default=Path("/"), metadata={"convert": _path, "help": "client root (lustre backend)"})
    scenario: Path | None = field(default=None, metadata={"convert": _path, "help": "scenario file (sim backend)"})
    tuner: str = field(default="iopathtune", metadata={"convert": _text, "help": "tuning policy"})
    tuner_options: dict[str, str] = field(default_factory=dict, metadata={"help": "options of the tuner"})
    interval: float = field(default=0.5, metadata={"convert": _interval, "help": "probe interval"})
    duration: float | None = field(default=None, metadata={"convert": seconds, "help": "stop after this long"})
    osc: str = field(default="*", metadata={"convert": _text, "help": "glob of the OSC devices to tune"})
    dry_run: bool = field(default=False, metadata={"convert": _boolean, "help": "print, do not write"})
    state_dir: Path = field(default=Path("/run/pfstune"), metadata={"convert": _path, "help": "state and lock"})
    metrics_port: int = field(default=0, metadata={"convert": _port, "help": "Prometheus port"})
    metrics_address: str = field(default="127.0.0.1", metadata={"convert": _text, "help": "Prometheus address"})
    log_level: str = field(default="info", metadata={"convert": _level, "help": "log level"})


def option_names() -> list[str]:
    """The config-file keys, in declaration order."""
    return [f.name for f in fields(AgentOptions)]


def _convert(name: str, value: object, where: str) -> object:
    if name == "tuner_options":
        if not isinstance(value, Mapping):
            raise UserError(f"{where}: tuner_options must be a table of KEY = VALUE")
        return {str(k): str(v) for k, v in value.items()}
    convert = next(f for f in fields(AgentOptions) if f.name == name).metadata["convert"]
    try:
        return convert(value)
    except (ValueError, TypeError, UserError) as err:
        raise UserError(f"{where}: {name}: {err}") from None


def load_file(path: Path) -> dict[str, object]:
    """The options set in the TOML file ``path``, converted and checked."""
    check_is_a_file(path, "an agent config file (TOML)")
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except OSError as err:
        raise UserError(f"{path}: {err.strerror or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML: {err}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid TOML: not UTF-8 text") from None
    known = option_names()
    options: dict[str, object] = {}
    for key, value in document.items():
        name = key.replace("-", "_")
        if name not in known:
            raise UserError(f"{path}: unknown key {key!r}; known: {', '.join(known)}")
        options[name] = _convert(name, value, str(path))
    return options


def resolve(config_path: Path | None, flags: Mapping[str, object]) -> AgentOptions:
    """Defaults, then the config file (``config_path``, or DEFAULT_CONFIG if it exists), then ``flags``.

    ``flags`` holds only the options given on the command line (already converted); the
    ``tuner_options`` of the file and the flags are merged key by key.
    """
    merged: dict[str, Any] = {}
    path = config_path if config_path is not None else (DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None)
    if path is not None:
        merged.update(load_file(path))
    tuner_options = dict(merged.get("tuner_options", {}))
    for name, value in flags.items():
        if name == "tuner_options":
            tuner_options.update(value)  # type: ignore[call-overload]
        elif value is not None:
            merged[name] = value
    merged["tuner_options"] = tuner_options
    return AgentOptions(**merged)
