"""Allow ``python -m pfstune``; the same entry point as the ``pfstune`` console script."""

from __future__ import annotations

import sys

from pfstune.cli import run

sys.exit(run())
