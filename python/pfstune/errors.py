"""The one exception hierarchy of pfstune.

Every error pfstune raises on purpose derives from :class:`PfstuneError`.  Errors that are the
user's to fix (a bad scenario file, an unknown option value, an out-of-range tunable) derive from
:class:`UserError`: the command line prints them as a single ``pfstune: error: <message>`` line
and exits with status 2, never with a traceback.  Their message must therefore say what was wrong
and where (file, key, value), and where possible what to write instead.
"""

from __future__ import annotations


class PfstuneError(Exception):
    """Root of every error pfstune raises deliberately."""


class UserError(PfstuneError):
    """A mistake the user can fix: bad input, bad option, bad file.  Shown without a traceback."""


class UnitError(UserError):
    """A size, rate or duration string that cannot be parsed (the message names the value)."""


class ScenarioError(UserError):
    """An invalid scenario file; the message names the file and the key path (``jobs[1].iosize``)."""
