"""pfstune: online tuning of the I/O path of parallel file systems, and a simulator to study it.

The package is organised by concern: :mod:`pfstune.sim` holds scenarios, presets and the wrapper
around the compiled simulator core (``pfstune._pfsim``), :mod:`pfstune.cli` one module per
subcommand, and :mod:`pfstune.testing` the conformance suites that every backend, tuner and model
must pass.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pfstune")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
