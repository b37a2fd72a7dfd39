"""Tuning policies behind one interface (:class:`pfstune.tuners._base.Tuner`), one per file.

:func:`make_tuner` builds one by the name users give to ``--tuner``, with options
(``--tuner-option period=5``) converted to the constructor's parameter types.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

from pfstune.errors import UserError
from pfstune.tuners._base import Tuner
from pfstune.tuners.bandit import BanditTuner
from pfstune.tuners.bayesopt import BayesOptTuner
from pfstune.tuners.default import DefaultTuner
from pfstune.tuners.dial import DialTuner
from pfstune.tuners.iopathtune import IOPathTuneTuner
from pfstune.tuners.oracle import OracleTuner
from pfstune.tuners.random import RandomTuner

#: Every tuner by its ``--tuner`` name.
TUNERS: dict[str, Callable[..., Tuner]] = {
    BanditTuner.name: BanditTuner,
    BayesOptTuner.name: BayesOptTuner,
    DefaultTuner.name: DefaultTuner,
    DialTuner.name: DialTuner,
    IOPathTuneTuner.name: IOPathTuneTuner,
    OracleTuner.name: OracleTuner,
    RandomTuner.name: RandomTuner,
}


def _convert(tuner: str, key: str, text: str, annotation: object) -> object:
    kind = {"float": float, "int": int, "str": str, "bool": bool}.get(str(annotation))
    if kind is None:
        return text
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise UserError(f"tuner {tuner}: option {key}={text!r} is not a boolean")
    try:
        return kind(text)
    except ValueError:
        raise UserError(f"tuner {tuner}: option {key}={text!r} is not a valid {kind.__name__}") from None


def tuner_options(name: str) -> dict[str, inspect.Parameter]:
    """The options tuner ``name`` (one of :data:`TUNERS`) takes from the command line, by name."""
    # keyword-only parameters (a DIAL tuner's `predictor` object) are for code, not the command line
    parameters = inspect.signature(TUNERS[name]).parameters.items()
    return {key: p for key, p in parameters if p.kind is not p.KEYWORD_ONLY}


def make_tuner(name: str, options: Mapping[str, str] | None = None) -> Tuner:
    """The tuner called ``name``, built with ``options`` (text values, converted by annotation)."""
    if name not in TUNERS:
        raise UserError(f"unknown tuner {name!r}; known: {', '.join(sorted(TUNERS))}")
    factory = TUNERS[name]
    parameters = tuner_options(name)
    kwargs: dict[str, object] = {}
    for key, text in (options or {}).items():
        if key not in parameters:
            known = ", ".join(p for p in parameters if p != "self") or "none"
            raise UserError(f"tuner {name}: unknown option {key!r}; options: {known}")
        kwargs[key] = _convert(name, key, text, parameters[key].annotation)
    return factory(**kwargs)
