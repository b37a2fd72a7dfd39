"""The command line: one module per subcommand, wired together by :mod:`pfstune.cli.main`."""

from __future__ import annotations


def run() -> int:
    """The ``pfstune`` console script and ``python -m pfstune``: :func:`pfstune.cli.main.main`.

    Importing the subcommands (numpy, pandas, LightGBM, the simulator core) takes most of a
    second; a Ctrl-C in that time ends the command quietly with status 130, as one later does,
    instead of a traceback from the middle of an import.  This module imports nothing else.
    """
    try:
        from pfstune.cli.main import main
    except KeyboardInterrupt:
        return 130
    return main()
