"""Logging set-up: one JSON object per line on stderr, as log collectors (journald, Loki) expect.

Each line has ``time`` (ISO 8601, UTC), ``level``, ``logger`` and ``message``, plus any
``extra={...}`` fields given to the logging call.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import TextIO

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as ``{"time", "level", "logger", "message", ...extra}``."""
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def json_logging() -> bool:
    """Whether :func:`setup_json_logging` has run: errors then go out as JSON lines too."""
    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger("pfstune").handlers)


def setup_json_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Send pfstune's log records, as JSON lines, to ``stream`` (default stderr) at ``level``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("pfstune")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False
