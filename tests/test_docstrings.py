"""The examples in docstrings are part of the manual: they must run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "pfstune.units",
    "pfstune.sim._values",
    "pfstune.sim.presets",
    "pfstune.sim.scenario",
    "pfstune.sim.sweep",
    "pfstune.cli._output",
    "pfstune.lustre.parse",
    "pfstune.lustre.limits",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
