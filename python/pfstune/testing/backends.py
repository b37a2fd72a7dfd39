"""The conformance suite every :class:`~pfstune.backends._base.Backend` must pass.

``check_backend(factory, advance)`` builds fresh backends with ``factory`` and checks the
interface's contract: a probe is a snapshot of client OSCs with their tuned parameters as ints
and parsed statistics; bounds cover the tuned parameters; an in-bounds write is in force at the
next probe; an out-of-bounds or not-allow-listed write raises ActuatorError and changes nothing;
``apply_all`` does what ``apply`` does on each OSC and keeps one OSC's refusal from the
others; closing restores every original value, and closing twice is harmless; the probe as a table (what
the agent reads) holds the numbers of the probe's snapshot; the backend's own writes never make
it leave an OSC alone.  ``advance(backend)``
lets time pass between probes (sleep on a real tree, run the simulation on the sim backend).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pfstune.backends._base import Backend
from pfstune.lustre.limits import ActuatorError
from pfstune.lustre.table import ProbeTable
from pfstune.tuners._base import TUNED_PARAMS, Config


def _configs(backend: Backend) -> dict[str, Config]:
    snapshot = backend.probe()
    configs: dict[str, Config] = {}
    for name, osc in snapshot["osc"].items():
        tunables = osc.get("tunables", {})
        configs[name] = {p: int(tunables[p]) for p in TUNED_PARAMS}
    return configs


def check_backend(factory: Callable[[], Backend], advance: Callable[[Backend], None]) -> None:
    """Run every backend conformance check on backends made by ``factory``."""
    check_probe_shape(factory, advance)
    check_probe_table(factory)
    check_apply_and_restore(factory, advance)
    check_refusals(factory)
    check_apply_all(factory, advance)


def check_probe_shape(factory: Callable[[], Backend], advance: Callable[[Backend], None]) -> None:
    """Probes have client OSCs, int tunables, parsed stats, and a clock that moves forward."""
    with factory() as backend:
        first = backend.probe()
        assert first["osc"], "a probe found no client OSC"
        for name, osc in first["osc"].items():
            assert "-osc-MDT" not in name, f"{name} is a server-side OSC"
            assert "rpc_stats" in osc, f"{name}: no rpc_stats"
            bounds = backend.bounds(name)
            for param in TUNED_PARAMS:
                value = osc.get("tunables", {}).get(param)
                assert isinstance(value, int), f"{name}: {param} = {value!r} is not an int"
                low, high = bounds[param]
                assert 1 <= low <= int(value) <= high, f"{name}: {param} = {value} outside {bounds[param]}"
        advance(backend)
        second = backend.probe()
        assert second["time"] > first["time"], "the probe time did not advance"
        for llite in second["llite"].values():
            for member in llite.get("osc", []):
                assert member in second["osc"], f"llite lists {member}, which the probe did not return"


def check_probe_table(factory: Callable[[], Backend]) -> None:
    """``probe_table()`` gives the numbers of ``probe()``'s snapshot packed (nothing moves in between)."""
    with factory() as backend:
        fast = backend.probe_table()
        packed = ProbeTable.from_snapshot(backend.probe())
        assert fast.oscs == packed.oscs, "probe_table() and probe() found different OSCs"
        assert [dict(t) for t in fast.tunables] == [dict(t) for t in packed.tunables]
        for array in ("tunables", "rpc", "rpc_start", "rpc_lines", "hist"):
            assert np.array_equal(getattr(fast.table, array), getattr(packed.table, array), equal_nan=array != "rpc")
        for kind in ("stats", "llite"):
            mine, theirs = getattr(fast.table, kind), getattr(packed.table, kind)
            names = theirs.names + tuple(name for name in mine.names if theirs.column(name) is None)
            mine, theirs = mine.reindex(names), theirs.reindex(names)
            for array in ("present", "samples", "valued", "minimum", "maximum", "total"):
                assert np.array_equal(getattr(mine, array), getattr(theirs, array)), f"{kind}.{array}"


def check_apply_and_restore(factory: Callable[[], Backend], advance: Callable[[Backend], None]) -> None:
    """An in-bounds write is in force at the next probe, is not taken for someone else's, and close()
    restores the original."""
    backend = factory()
    with backend:
        originals = _configs(backend)
        name = sorted(originals)[0]
        original = originals[name]
        low, high = backend.bounds(name)["max_rpcs_in_flight"]
        target = low if original["max_rpcs_in_flight"] != low else min(high, low * 2)
        in_force = backend.apply(name, {"max_rpcs_in_flight": target})
        assert in_force["max_rpcs_in_flight"] == target, f"apply returned {in_force}, wanted {target}"
        advance(backend)
        assert _configs(backend)[name]["max_rpcs_in_flight"] == target, "the write is not in force at the next probe"
        pages_low, pages_high = backend.bounds(name)["max_pages_per_rpc"]
        pages = pages_low if original["max_pages_per_rpc"] != pages_low else pages_high
        backend.apply(name, {"max_pages_per_rpc": pages})
        advance(backend)
        backend.apply(name, {"max_rpcs_in_flight": original["max_rpcs_in_flight"]})
        # its own writes, as the client shows them later, are never taken for someone else's
        assert backend.left_alone() == frozenset(), f"after its own writes, left alone: {backend.left_alone()}"
    after = _configs(backend)
    assert after[name] == original, f"after close {name} is {after[name]}, not the original {original}"
    backend.close()  # a second close must be harmless
    assert _configs(backend)[name] == original


def check_refusals(factory: Callable[[], Backend]) -> None:
    """Out-of-bounds and not-allow-listed writes raise ActuatorError and change nothing."""
    with factory() as backend:
        before = _configs(backend)
        name = sorted(before)[0]
        bounds = backend.bounds(name)
        for param in TUNED_PARAMS:
            low, high = bounds[param]
            for bad in (low - 1, high + 1):
                try:
                    backend.apply(name, {param: bad})
                except ActuatorError:
                    pass
                else:
                    raise AssertionError(f"{param}={bad} outside {low}..{high} was accepted")
        try:
            backend.apply(name, {"checksum_dump": 1})
        except ActuatorError:
            pass
        else:
            raise AssertionError("a parameter outside the allow-list was accepted")
        assert _configs(backend) == before, "a refused write changed something"


def check_apply_all(factory: Callable[[], Backend], advance: Callable[[Backend], None]) -> None:
    """``apply_all`` writes each OSC's configuration as ``apply`` would, returns a refusal as that
    OSC's result without stopping the others, and close() restores them all."""
    backend = factory()
    with backend:
        originals = _configs(backend)
        names = sorted(originals)
        requests: dict[str, Config] = {}
        for name in names:
            low, high = backend.bounds(name)["max_rpcs_in_flight"]
            requests[name] = {"max_rpcs_in_flight": low if originals[name]["max_rpcs_in_flight"] != low else high}
        bad = names[0]  # with one OSC only the refusal is checked
        requests[bad] = {"max_rpcs_in_flight": backend.bounds(bad)["max_rpcs_in_flight"][1] + 1}
        results = backend.apply_all(requests)
        assert set(results) == set(requests), f"apply_all answered for {sorted(results)}, not {sorted(requests)}"
        assert isinstance(results[bad], ActuatorError), f"an out-of-bounds value gave {results[bad]!r}"
        advance(backend)
        now = _configs(backend)
        assert now[bad] == originals[bad], "a refused apply_all request changed its OSC"
        for name in names[1:]:
            result = results[name]
            assert not isinstance(result, ActuatorError), f"{name}: {result}"
            target = requests[name]["max_rpcs_in_flight"]
            assert result["max_rpcs_in_flight"] == target, f"{name}: apply_all returned {result}, wanted {target}"
            assert now[name]["max_rpcs_in_flight"] == target, f"{name}: the write is not in force at the next probe"
    assert _configs(backend) == originals, "close() after apply_all did not restore every original"
