"""Load a script of benchmarks/ (no .py suffix) as a module, for its tests."""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str) -> ModuleType:
    """``benchmarks/<name>`` as the module ``<name>_script``."""
    module_name = f"{name.replace('-', '_')}_script"
    loader = SourceFileLoader(module_name, str(BENCHMARKS / name))  # no .py suffix: an explicit loader
    spec = importlib.util.spec_from_loader(module_name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up there
    loader.exec_module(module)
    return module
