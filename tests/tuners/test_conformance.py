"""Every registered tuner passes the conformance suite of pfstune.testing.tuners."""

from __future__ import annotations

import pytest

from pfstune.testing.tuners import check_tuner
from pfstune.tuners import TUNERS, make_tuner


@pytest.mark.parametrize("name", sorted(TUNERS))
def test_tuner_conforms(name: str) -> None:
    check_tuner(lambda: make_tuner(name))


@pytest.mark.parametrize("objective", ["osc", "llite"])
def test_iopathtune_with_a_short_period_conforms(objective: str) -> None:
    check_tuner(lambda: make_tuner("iopathtune", {"period": "1", "objective": objective}))
