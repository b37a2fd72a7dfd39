"""The conformance suite every :class:`~pfstune.tuners._base.Tuner` must pass.

Run it from a test with the tuner's factory::

    from pfstune.testing.tuners import check_tuner
    def test_mine() -> None:
        check_tuner(lambda: MyTuner())

Each check drives the tuner with a synthetic OSC (:class:`SyntheticOsc`: throughput is a smooth
function of the configuration, with a clear optimum away from the default) and raises
AssertionError naming the rule that broke.  The rules are the interface's contract, not a
quality bar: staying in bounds, integer configurations of the tuned parameters, tolerance of
first-probe, idle and NaN metrics, per-OSC independence, a JSON round trip of the state that
changes nothing, and ``suggest_batch`` agreeing with ``suggest``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping

from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner

#: Bounds of a 2.15 client talking to ldiskfs OSTs (4 MiB brw_size).
BOUNDS: dict[str, tuple[int, int]] = {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}
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
    tuner: Tuner, osc: SyntheticOsc, ticks: int, name: str = "fs-OST0000-osc-ffff000000000001", seconds: float = 0.5
) -> Iterator[Config]:
    """Run ``tuner`` against ``osc`` for ``ticks`` probe intervals, as the agent would; yield each config."""
    config = dict(DEFAULT)
    for tick in range(ticks):
        tuner.observe(name, dict(config), osc.metrics(config, seconds))
        config = _checked(tuner.suggest(_context(name, tick * seconds, config, osc.metrics(config, seconds))), config)
        yield config


def _context(name: str, time: float, config: Config, metrics: Mapping[str, float]) -> Context:
    return Context(osc=name, time=time, config=dict(config), bounds=dict(BOUNDS), metrics=dict(metrics))


def _checked(suggestion: object, current: Config) -> Config:
    assert isinstance(suggestion, dict), f"suggest returned {type(suggestion).__name__}, not a dict"
    for param in TUNED_PARAMS:
        assert param in suggestion, f"suggest left out {param}: {suggestion}"
        value = suggestion[param]
        assert isinstance(value, int), f"{param}={value!r} is not an int"
        assert not isinstance(value, bool), f"{param}={value!r} is a bool, not an int"
        low, high = BOUNDS[param]
        assert low <= value <= high, f"{param}={value} is outside the bounds {low}..{high}"
    return {param: int(suggestion[param]) for param in TUNED_PARAMS}


def check_tuner(factory: Callable[[], Tuner]) -> None:
    """Run every conformance check on tuners made by ``factory``."""
    for check in (
        check_bounds_and_types,
        check_first_probe_and_bad_metrics,
        check_state_round_trip,
        check_independent_oscs,
        check_batch_agrees,
    ):
        check(factory)


def check_bounds_and_types(factory: Callable[[], Tuner]) -> None:
    """Every suggestion is a dict of int values of the tuned parameters, within bounds, for a long run."""
    tuner = factory()
    assert isinstance(tuner.name, str), "a tuner's name must be a string"
    assert tuner.name, "a tuner needs a non-empty name"
    for best in (
        {"max_pages_per_rpc": 1, "max_rpcs_in_flight": 1},
        {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 256},
    ):
        for _ in drive(factory(), SyntheticOsc(best), ticks=400):
            pass


def check_first_probe_and_bad_metrics(factory: Callable[[], Tuner]) -> None:
    """Empty metrics (first probe), an idle interval, NaN values and a zero duration do not break it."""
    tuner = factory()
    name = "fs-OST0001-osc-ffff000000000001"
    config = dict(DEFAULT)
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
        config = _checked(tuner.suggest(_context(name, tick * 0.5, config, row)), config)
    tuner.forget(name)
    tuner.forget("never-seen")


def check_state_round_trip(factory: Callable[[], Tuner]) -> None:
    """state_dict is JSON data; a fresh tuner loaded with it decides exactly as the original."""
    original = factory()
    osc = SyntheticOsc()
    for _ in drive(original, osc, ticks=57):
        pass
    state = json.loads(json.dumps(original.state_dict()))
    copy = factory()
    copy.load_state_dict(state)
    config = {"max_pages_per_rpc": 64, "max_rpcs_in_flight": 16}
    name = "fs-OST0000-osc-ffff000000000001"
    for tick in range(80):
        metrics = osc.metrics(config)
        original.observe(name, dict(config), metrics)
        copy.observe(name, dict(config), metrics)
        context = _context(name, 100 + tick * 0.5, config, metrics)
        a, b = original.suggest(context), copy.suggest(context)
        assert a == b, f"after load_state_dict the copy suggested {b}, the original {a} (tick {tick})"
        config = _checked(a, config)


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
        other_cfg = _checked(
            shared.suggest(_context(other, tick * 0.5, other_cfg, quiet.metrics(other_cfg))), other_cfg
        )
        for tuner, cfg in ((alone, a_cfg), (shared, s_cfg)):
            tuner.observe(name, dict(cfg), busy.metrics(cfg))
        a_cfg = _checked(alone.suggest(_context(name, tick * 0.5, a_cfg, busy.metrics(a_cfg))), a_cfg)
        s_cfg = _checked(shared.suggest(_context(name, tick * 0.5, s_cfg, busy.metrics(s_cfg))), s_cfg)
        assert a_cfg == s_cfg, f"another OSC's traffic changed this OSC's suggestion at tick {tick}: {a_cfg} != {s_cfg}"


def check_batch_agrees(factory: Callable[[], Tuner]) -> None:
    """suggest_batch over several OSCs gives what suggest gives one at a time."""
    one, batch = factory(), factory()
    oscs = {f"fs-OST{i:04x}-osc-ffff000000000001": SyntheticOsc(peak_mbps=100.0 * (i + 1)) for i in range(4)}
    configs = {name: dict(DEFAULT) for name in oscs}
    for tick in range(120):
        contexts = []
        for name, osc in oscs.items():
            metrics = osc.metrics(configs[name])
            one.observe(name, dict(configs[name]), metrics)
            batch.observe(name, dict(configs[name]), metrics)
            contexts.append(_context(name, tick * 0.5, configs[name], metrics))
        singles = [one.suggest(context) for context in contexts]
        batched = batch.suggest_batch(contexts)
        assert singles == batched, f"suggest_batch disagrees with suggest at tick {tick}: {batched} != {singles}"
        for name, suggestion in zip(oscs, singles, strict=True):
            configs[name] = _checked(suggestion, configs[name])
