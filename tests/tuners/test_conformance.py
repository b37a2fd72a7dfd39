"""Every registered tuner passes the conformance suite of pfstune.testing.tuners."""

from __future__ import annotations

import pytest

from pfstune.testing.tuners import check_tuner
from pfstune.tuners import TUNERS, make_tuner

#: Options a tuner cannot be built without (the oracle holds a configuration found by sweeping).
REQUIRED_OPTIONS = {"oracle": {"max_pages_per_rpc": "16", "max_rpcs_in_flight": "128"}}


@pytest.mark.parametrize("name", sorted(TUNERS))
def test_tuner_conforms(name: str) -> None:
    check_tuner(lambda: make_tuner(name, REQUIRED_OPTIONS.get(name)))


@pytest.mark.parametrize("objective", ["osc", "llite"])
def test_iopathtune_with_a_short_period_conforms(objective: str) -> None:
    check_tuner(lambda: make_tuner("iopathtune", {"period": "1", "objective": objective}))
