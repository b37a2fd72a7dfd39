"""The conformance suite every :class:`~pfstune.tuners._base.Tuner` must pass.

Run it from a test with the tuner's factory::

    from pfstune.testing.tuners import check_tuner
    def test_mine() -> None:
        check_tuner(lambda: MyTuner())

Each check drives the tuner with a synthetic OSC (:class:`SyntheticOsc`: throughput is a smooth
function of the configuration, with a clear optimum away from the default) and raises
AssertionError naming the rule that broke.  The rules are the interface's contract, not a
quality bar: staying in the bounds each context gives, integer values of the tuned parameters
and nothing else, contexts left as they were, tolerance of a first probe (no observe before it),
idle and NaN metrics, per-OSC independence, ``forget`` starting an OSC afresh, a JSON round trip
of the state (no NaN) that changes nothing, and ``suggest_batch`` agreeing with ``suggest``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping

from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner

#: Bounds of a 2.15 client talking to ldiskfs OSTs (4 MiB brw_size).
BOUNDS: dict[str, tuple[int, int]] = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}
#: Tighter bounds (a ZFS OST's 1 MiB brw_size, an administrator's floor and ceiling of RPCs in flight).
NARROW: dict[str, tuple[int, int]] = {"max_pages_per_rpc": (1, 256), "max_rpcs_in_flight": (2, 64)}
DEFAULT: Config = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 8}


class SyntheticOsc:
    """A stand-in OSC whose throughput peaks at ``best`` (log2 distance, smooth), with no noise.

    ``metrics(config, seconds)`` returns a feature row with the columns the tuners read
    (DIAL's raw column names), as if the OSC had run ``seconds`` under ``config``.
    """

    def __init__(self, best: Config | None = None, peak_mbps: float = 2000.0, write: bool = False) -> None:
        """An OSC whose best configuration is ``best`` (default 256 pages, 32 in flight)."""
        self.best = best or {"max_pages_per_rpc": 256, "max_rpcs_in_flight": 32}
        self.peak_mbps = peak_mbps
        self.write = write

    def mbps(self, config: Mapping[str, int]) -> float:
        """Throughput under ``config``: peak over a log2-distance penalty."""
        distance = sum((math.log2(config[p]) - math.log2(self.best[p])) ** 2 for p in TUNED_PARAMS)
        return self.peak_mbps / (1.0 + 0.15 * distance)

    def metrics(self, config: Mapping[str, int], seconds: float = 0.5) -> dict[str, float]:
        """A feature row for ``seconds`` under ``config``."""
        moved = self.mbps(config) * 1e6 * seconds
        op, idle = ("write", "read") if self.write else ("read", "write")
        pages = min(config["max_pages_per_rpc"], 256)
        rpcs = max(1.0, moved / (pages * 4096))
        row: dict[str, float] = {
            "actual_record_duration": seconds,
            "osc_rpc_configuration_current.mppr_value": config["max_pages_per_rpc"],
            "osc_rpc_configuration_current.mrif_value": config["max_rpcs_in_flight"],
            f"ost_{op}_rpc_bytes_data.samples_sum": moved,
            f"ost_{op}_rpc_bytes_data.no_of_samples": rpcs,
            f"ost_{idle}_rpc_bytes_data.samples_sum": 0.0,
            f"ost_{idle}_rpc_bytes_data.no_of_samples": 0.0,
            f"llite_stats_{op}_bytes.samples_sum": moved,
            f"llite_stats_{op}_bytes.no_of_samples": moved / 1048576,
            f"llite_stats_{idle}_bytes.samples_sum": 0.0,
            f"llite_stats_{idle}_bytes.no_of_samples": 0.0,
        }
        return row


def drive(
    tuner: Tuner,
    osc: SyntheticOsc,
    ticks: int,
    name: str = "fs-OST0000-osc-ffff000000000001",
    seconds: float = 0.5,
    bounds: Mapping[str, tuple[int, int]] = BOUNDS,
) -> Iterator[Config]:
    """Run ``tuner`` against ``osc`` for ``ticks`` probe intervals, as the agent would; yield each config."""
    config = _clamped(DEFAULT, bounds)
    for tick in range(ticks):
        tuner.observe(name, dict(config), osc.metrics(config, seconds))
        context = _context(name, tick * seconds, config, osc.metrics(config, seconds), bounds)
        config = _checked(_suggest(tuner, context), context)
        yield config


def _clamped(config: Mapping[str, int], bounds: Mapping[str, tuple[int, int]]) -> Config:
    return {p: min(max(config[p], bounds[p][0]), bounds[p][1]) for p in TUNED_PARAMS}


def _context(
    name: str,
    time: float,
    config: Config,
    metrics: Mapping[str, float],
    bounds: Mapping[str, tuple[int, int]] = BOUNDS,
) -> Context:
    return Context(osc=name, time=time, config=dict(config), bounds=dict(bounds), metrics=dict(metrics))


def _suggest(tuner: Tuner, context: Context) -> Config:
    """``tuner.suggest(context)``, checking that the context is left as it was."""
    before = (dict(context.config), dict(context.bounds), dict(context.metrics))
    suggestion = tuner.suggest(context)
    _unchanged(context, before)
    return suggestion


_Snapshot = tuple[Config, dict[str, tuple[int, int]], dict[str, float]]


def _unchanged(context: Context, before: _Snapshot) -> None:
    after: _Snapshot = (dict(context.config), dict(context.bounds), dict(context.metrics))
    for what, was, now in (
        ("config", before[0], after[0]),
        ("bounds", before[1], after[1]),
        ("metrics", before[2], after[2]),
    ):
        assert _same(was, now), f"the tuner changed context.{what} of {context.osc}: {was} -> {now}"


def _same(was: Mapping[str, object], now: Mapping[str, object]) -> bool:
    """Equal mappings, NaN equal to NaN (metrics hold NaN for what could not be measured)."""
    if was.keys() != now.keys():
        return False
    for key, value in was.items():
        other = now[key]
        nan = isinstance(value, float) and isinstance(other, float) and math.isnan(value) and math.isnan(other)
        if value != other and not nan:
            return False
    return True


def _checked(suggestion: object, context: Context) -> Config:
    assert isinstance(suggestion, dict), f"suggest returned {type(suggestion).__name__}, not a dict"
    extra = set(suggestion) - set(TUNED_PARAMS)
    assert not extra, f"suggest returned parameters it does not tune: {sorted(extra)}"
    for param in TUNED_PARAMS:
        assert param in suggestion, f"suggest left out {param}: {suggestion}"
        value = suggestion[param]
        assert isinstance(value, int), f"{param}={value!r} is not an int"
        assert not isinstance(value, bool), f"{param}={value!r} is a bool, not an int"
        low, high = context.bounds[param]
        assert low <= value <= high, f"{param}={value} is outside the context's bounds {low}..{high}"
    return {param: int(suggestion[param]) for param in TUNED_PARAMS}


def _json_state(tuner: Tuner) -> dict[str, object]:
    """``tuner.state_dict()`` through strict JSON (NaN and infinities are not JSON)."""
    try:
        text = json.dumps(tuner.state_dict(), allow_nan=False)
    except ValueError as err:
        raise AssertionError(f"state_dict is not strict JSON: {err}") from None
    state: dict[str, object] = json.loads(text)
    return state


def check_tuner(factory: Callable[[], Tuner]) -> None:
    """Run every conformance check on tuners made by ``factory``."""
    for check in (
        check_bounds_and_types,
        check_first_probe_and_bad_metrics,
        check_state_round_trip,
        check_independent_oscs,
        check_forget_starts_afresh,
        check_batch_agrees,
        check_interval_warning,
    ):
        check(factory)


def check_interval_warning(factory: Callable[[], Tuner]) -> None:
    """What it says of a probe interval is None or one line, and nothing at the agent's default 0.5 s."""
    tuner = factory()
    assert tuner.interval_warning(0.5) is None, "the agent's default interval must suit every tuner"
    for seconds in (0.01, 2.0, 60.0):
        said = tuner.interval_warning(seconds)
        assert said is None or (isinstance(said, str) and said and "\n" not in said), f"{said!r} at {seconds} s"


def check_bounds_and_types(factory: Callable[[], Tuner]) -> None:
    """Every suggestion is a dict of int values of the tuned parameters, within bounds, for a long run."""
    tuner = factory()
    assert isinstance(tuner.name, str), "a tuner's name must be a string"
    assert tuner.name, "a tuner needs a non-empty name"
    for best in (
        {"max_pages_per_rpc": 1, "max_rpcs_in_flight": 1},
        {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 256},
    ):
        for bounds in (BOUNDS, NARROW):  # the optima lie outside the narrow bounds: pushed against them
            for _ in drive(factory(), SyntheticOsc(best), ticks=400, bounds=bounds):
                pass


def check_first_probe_and_bad_metrics(factory: Callable[[], Tuner]) -> None:
    """A first probe (suggest before any observe, empty metrics), an idle interval, NaN values and a
    zero duration do not break it."""
    tuner = factory()
    name = "fs-OST0001-osc-ffff000000000001"
    config = dict(DEFAULT)
    # the agent's first tick: no interval has ended, so nothing is observed before this
    config = _checked(_suggest(tuner, _context(name, 0.0, config, {})), _context(name, 0.0, config, {}))
    rows: list[dict[str, float]] = [
        {},
        {"actual_record_duration": 0.5},
        {"actual_record_duration": 0.0, "ost_read_rpc_bytes_data.samples_sum": 1e9},
        {"actual_record_duration": 0.5, "ost_read_rpc_bytes_data.samples_sum": math.nan},
        dict.fromkeys(SyntheticOsc().metrics(config), math.nan),
        {**dict.fromkeys(SyntheticOsc().metrics(config), math.nan), "actual_record_duration": 0.5},
        SyntheticOsc().metrics(config),
    ]
    for tick, row in enumerate(rows * 40):
        tuner.observe(name, dict(config), row)
        context = _context(name, tick * 0.5, config, row)
        config = _checked(_suggest(tuner, context), context)
    tuner.forget(name)
    tuner.forget("never-seen")


def check_state_round_trip(factory: Callable[[], Tuner]) -> None:
    """state_dict is JSON data; a fresh tuner loaded with it decides exactly as the original."""
    original = factory()
    osc = SyntheticOsc()
    for _ in drive(original, osc, ticks=57):
        pass
    state = _json_state(original)
    copy = factory()
    copy.load_state_dict(state)
    assert _json_state(copy) == state, "state_dict after load_state_dict differs from the state loaded"
    config = {"max_pages_per_rpc": 64, "max_rpcs_in_flight": 16}
    name = "fs-OST0000-osc-ffff000000000001"
    for tick in range(80):
        metrics = osc.metrics(config)
        original.observe(name, dict(config), metrics)
        copy.observe(name, dict(config), metrics)
        context = _context(name, 100 + tick * 0.5, config, metrics)
        a, b = _suggest(original, context), _suggest(copy, context)
        assert a == b, f"after load_state_dict the copy suggested {b}, the original {a} (tick {tick})"
        config = _checked(a, context)


def check_independent_oscs(factory: Callable[[], Tuner]) -> None:
    """What one OSC sees does not change what the tuner suggests for another with another workload.

    (A tuner may pool what OSCs with the *same* access pattern teach, as the bandit does; the
    two OSCs here differ in operation, optimum and load.)
    """
    alone, shared = factory(), factory()
    quiet = SyntheticOsc({"max_pages_per_rpc": 16, "max_rpcs_in_flight": 2}, peak_mbps=50.0, write=True)
    busy = SyntheticOsc()
    a_cfg, s_cfg, other_cfg = dict(DEFAULT), dict(DEFAULT), dict(DEFAULT)
    name, other = "fs-OST0000-osc-ffff000000000001", "fs-OST0001-osc-ffff000000000001"
    for tick in range(200):
        shared.observe(other, dict(other_cfg), quiet.metrics(other_cfg))
        context = _context(other, tick * 0.5, other_cfg, quiet.metrics(other_cfg))
        other_cfg = _checked(_suggest(shared, context), context)
        for tuner, cfg in ((alone, a_cfg), (shared, s_cfg)):
            tuner.observe(name, dict(cfg), busy.metrics(cfg))
        a_context = _context(name, tick * 0.5, a_cfg, busy.metrics(a_cfg))
        a_cfg = _checked(_suggest(alone, a_context), a_context)
        s_context = _context(name, tick * 0.5, s_cfg, busy.metrics(s_cfg))
        s_cfg = _checked(_suggest(shared, s_context), s_context)
        assert a_cfg == s_cfg, f"another OSC's traffic changed this OSC's suggestion at tick {tick}: {a_cfg} != {s_cfg}"


def check_forget_starts_afresh(factory: Callable[[], Tuner]) -> None:
    """After ``forget(osc)`` the tuner decides for that OSC as a tuner that never saw it would."""
    used, fresh = factory(), factory()
    name = "fs-OST0000-osc-ffff000000000001"
    for _ in drive(used, SyntheticOsc({"max_pages_per_rpc": 4, "max_rpcs_in_flight": 2}, write=True), ticks=90):
        pass
    used.forget(name)
    osc = SyntheticOsc()
    a_cfg, f_cfg = dict(DEFAULT), dict(DEFAULT)
    for tick in range(90):
        used.observe(name, dict(a_cfg), osc.metrics(a_cfg))
        fresh.observe(name, dict(f_cfg), osc.metrics(f_cfg))
        a_context = _context(name, 50 + tick * 0.5, a_cfg, osc.metrics(a_cfg))
        f_context = _context(name, 50 + tick * 0.5, f_cfg, osc.metrics(f_cfg))
        a_cfg, f_cfg = _checked(_suggest(used, a_context), a_context), _checked(_suggest(fresh, f_context), f_context)
        assert a_cfg == f_cfg, f"after forget the OSC is not decided afresh at tick {tick}: {a_cfg} != {f_cfg}"


def check_batch_agrees(factory: Callable[[], Tuner]) -> None:
    """suggest_batch over several OSCs gives what suggest gives one at a time, in the contexts' order."""
    one, batch = factory(), factory()
    optima = [(16, 4), (256, 32), (1024, 2), (2, 128)]  # a batch in the wrong order cannot pass
    oscs = {
        f"fs-OST{i:04x}-osc-ffff000000000001": SyntheticOsc(
            {"max_pages_per_rpc": pages, "max_rpcs_in_flight": flight}, peak_mbps=100.0 * (i + 1)
        )
        for i, (pages, flight) in enumerate(optima)
    }
    configs = {name: dict(DEFAULT) for name in oscs}
    for tick in range(120):
        contexts = []
        for name, osc in oscs.items():
            metrics = osc.metrics(configs[name])
            one.observe(name, dict(configs[name]), metrics)
            batch.observe(name, dict(configs[name]), metrics)
            contexts.append(_context(name, tick * 0.5, configs[name], metrics))
        singles = [_suggest(one, context) for context in contexts]
        before = [(dict(c.config), dict(c.bounds), dict(c.metrics)) for c in contexts]
        batched = batch.suggest_batch(contexts)
        for context, was in zip(contexts, before, strict=True):
            _unchanged(context, was)
        assert singles == batched, f"suggest_batch disagrees with suggest at tick {tick}: {batched} != {singles}"
        for context, suggestion in zip(contexts, singles, strict=True):
            configs[context.osc] = _checked(suggestion, context)
