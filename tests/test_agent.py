"""The agent loop on the sim backend and on a scripted backend: decisions, errors, timing, restore."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pfstune.agent import Agent, TickReport
from pfstune.backends._base import Backend
from pfstune.backends.lustre import LustreBackend
from pfstune.backends.sim import SimBackend
from pfstune.cli.agent import _ignored_options
from pfstune.cli.main import main
from pfstune.clock import Clock
from pfstune.config import AgentOptions
from pfstune.exporter import Exporter
from pfstune.features import osc_features
from pfstune.lustre.limits import ActuatorError
from pfstune.lustre.snapshot import MINIMAL_FILES, Prober
from pfstune.lustre.types import Snapshot
from pfstune.sim.engine import Engine
from pfstune.sim.scenario import load_scenario
from pfstune.sim.tree import VirtualTree
from pfstune.tuners._base import Config, Context, Tuner
from pfstune.tuners.default import DefaultTuner
from pfstune.tuners.iopathtune import IOPathTuneTuner
from tests.conftest import SHARED
from tests.lustre._fake_client import OSC, OSC2, build_tree

SEQRW = """\
name: seqrw
seed: 1
duration: 20s
cluster: {preset: cloudlab-c6525, clients: 1}
jobs:
  - {name: seqrw, client: 0, workload: filebench.seqrw, iosize: 16m, filesize: 8g, stripe_count: 1}
"""


@pytest.fixture
def seqrw(write_scenario: Callable[[str, str], Path]) -> Path:
    return write_scenario(SEQRW, "seqrw.yaml")


def _tunables(backend: SimBackend) -> dict[str, Config]:
    return {
        name: {p: int(osc["tunables"][p]) for p in ("max_pages_per_rpc", "max_rpcs_in_flight")}
        for name, osc in backend.probe()["osc"].items()
    }


def test_iopathtune_changes_the_busy_osc_and_everything_is_restored(seqrw: Path) -> None:
    reports: list[TickReport] = []
    backend = SimBackend.from_file(seqrw)
    with backend:
        originals = _tunables(backend)
        agent = Agent(backend, IOPathTuneTuner(period=2.0), interval=0.5, listeners=[reports.append])
        summary = agent.run(duration=20.0)
    assert summary.ticks == 41  # t = 0, 0.5, ..., 20 s
    assert summary.errors == 0
    changed = {osc for report in reports for osc in report.changes}
    assert changed, "IOPathTune changed nothing in 20 s with a 2 s period"
    # the values in force moved away from the originals while it ran (IOPathTune may have come
    # back to them by the end: it reverses when throughput drops)
    assert any(report.configs[osc] != originals[osc] for report in reports for osc in changed if osc in report.configs)
    busy = max(reports[-1].mbps, key=reports[-1].mbps.get)  # type: ignore[arg-type]
    assert busy in changed
    idle = set(originals) - changed
    assert idle, "the OSCs without traffic should have been left alone"
    assert _tunables(backend) == originals  # restored on close


def test_default_tuner_never_writes(seqrw: Path) -> None:
    with SimBackend.from_file(seqrw) as backend:
        summary = Agent(backend, DefaultTuner(), interval=0.5).run(duration=3.0)
    assert summary.decisions == 0
    assert summary.ticks == 7


class _OutOfRange(Tuner):
    name = "out-of-range"

    def suggest(self, context: Context) -> Config:
        return {**context.config, "max_rpcs_in_flight": 1000}


def test_refused_writes_are_counted_and_the_loop_goes_on(seqrw: Path, caplog: pytest.LogCaptureFixture) -> None:
    with SimBackend.from_file(seqrw) as backend:
        summary = Agent(backend, _OutOfRange(), interval=0.5).run(duration=1.0)
    assert summary.ticks == 3
    assert summary.errors == 3 * 8  # every OSC, every tick
    assert summary.decisions == 0
    assert "max_rpcs_in_flight=1000" in caplog.text


class _ScriptedClock(Clock):
    def __init__(self) -> None:
        self.time = 100.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    def sleep_until(self, when: float) -> bool:
        self.sleeps.append(when)
        self.time = max(self.time, when)
        return True


class _SlowBackend(Backend):
    """One OSC; every probe takes `cost` seconds of the clock."""

    def __init__(self, cost: float) -> None:
        self.clock = _ScriptedClock()
        self.cost = cost
        self.closed = 0

    def probe(self) -> Snapshot:
        self.clock.time += self.cost
        tunables: dict[str, int | str] = {"max_pages_per_rpc": 1024, "max_rpcs_in_flight": 8}
        return {
            "time": self.clock.time,
            "osc": {"fs-OST0000-osc-ffff000000000001": {"tunables": tunables}},
            "llite": {},
        }

    def bounds(self, osc: str) -> dict[str, tuple[int, int]]:
        return {"max_pages_per_rpc": (1, 1024), "max_rpcs_in_flight": (1, 256)}

    def apply(self, osc: str, config: Config) -> Config:
        raise ActuatorError("not expected")

    def close(self) -> None:
        self.closed += 1


def test_ticks_stay_on_the_grid_and_skip_what_an_overrun_missed() -> None:
    backend = _SlowBackend(cost=0.1)
    Agent(backend, DefaultTuner(), interval=0.5).run(duration=2.0)
    assert backend.clock.sleeps == pytest.approx([100.5, 101.0, 101.5, 102.0])
    slow = _SlowBackend(cost=1.2)
    Agent(slow, DefaultTuner(), interval=0.5).run(duration=5.0)
    # each tick overruns two grid points and the next tick waits for the third
    assert slow.clock.sleeps == pytest.approx([101.5, 103.0, 104.5])


def test_a_stop_requested_before_the_first_tick_ticks_nothing() -> None:
    # SIGTERM while the agent takes its lock or restores a crashed agent's values: no live change.
    class _StoppedClock(_ScriptedClock):
        def stopped(self) -> bool:
            return True

    backend = _SlowBackend(cost=0.0)
    backend.clock = _StoppedClock()
    summary = Agent(backend, DefaultTuner(), interval=0.5).run(duration=2.0)
    assert summary.ticks == 0
    assert backend.clock.sleeps == []


def test_metrics_missing_from_a_probe_do_not_break_the_tuner() -> None:
    backend = _SlowBackend(cost=0.0)
    summary = Agent(backend, IOPathTuneTuner(period=0.5), interval=0.5).run(duration=5.0)
    assert summary.errors == 0


def test_agent_cli_on_the_sim_backend_prints_a_json_summary(seqrw: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        [
            "agent",
            "--backend",
            "sim",
            "--scenario",
            str(seqrw),
            "--tuner",
            "iopathtune",
            "--tuner-option",
            "period=2",
            "--json",
            "--log-level",
            "warning",
        ]
    )
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tuner"] == "iopathtune"
    assert result["ticks"] == 41
    assert result["decisions"] > 0
    assert result["sim_seconds"] == pytest.approx(20.0)
    # as `sim run --tuner` reports them: the whole run, and the simulation alone apart
    assert result["wall_seconds"] > result["sim_wall_seconds"] > 0
    assert result["speedup"] == pytest.approx(result["sim_seconds"] / result["wall_seconds"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["agent", "--backend", "sim"], "--scenario"),
        (["agent", "--backend", "sim", "--scenario", "x.yaml", "--tuner", "nope"], "unknown tuner"),
        (["agent", "--backend", "sim", "--scenario", "x.yaml", "--tuner-option", "zzz=1"], "unknown option"),
    ],
)
def test_agent_cli_user_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--config", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_sim_run_with_a_tuner(seqrw: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "run", str(seqrw), "--tuner", "iopathtune", "--tuner-option", "period=2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tuner"] == "iopathtune"
    assert result["decisions"] > 0


class _Recorder(Tuner):
    """Keeps what the agent hands it: every observed row, as a dict."""

    name = "recorder"

    def __init__(self) -> None:
        self.rows: list[dict[str, dict[str, float]]] = []

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        if not self.rows or osc in self.rows[-1]:
            self.rows.append({})
        self.rows[-1][osc] = dict(metrics)

    def suggest(self, context: Context) -> Config:
        return dict(context.config)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_the_agent_rows_are_osc_features_of_the_probes(small_scenario: Path, tmp_path: Path) -> None:
    """One feature path: the rows the agent builds from the Lustre backend's tables are, value for
    value and name for name, :func:`osc_features` of the same files read as snapshots."""
    engine = Engine(load_scenario(small_scenario))
    tree = VirtualTree(engine, 0, tmp_path / "root", log=lambda line: None)
    tree.refresh()
    prober = Prober(tmp_path / "root", files=MINIMAL_FILES)
    recorder = _Recorder()
    snapshots: list[Snapshot] = []
    with LustreBackend(tmp_path / "root", state_dir=tmp_path / "state") as backend:
        agent = Agent(backend, recorder, interval=0.1)
        for _ in range(4):
            agent.tick()
            snapshots.append(prober.probe(0.0))  # the same files, through the Python parsers
            engine.run(until_ns=engine.now_ns + 100_000_000)
            tree.refresh()
    assert len(recorder.rows) == 3
    previous: dict[str, dict[str, float]] = {}
    for (before, after), rows in zip(itertools.pairwise(snapshots), recorder.rows, strict=True):
        mounts = {osc: llite for llite in after["llite"].values() for osc in llite.get("osc", [])}
        mounts_before = {osc: llite for llite in before["llite"].values() for osc in llite.get("osc", [])}
        assert set(rows) == set(after["osc"])
        for osc, row in rows.items():
            seconds = row["actual_record_duration"]  # the agent's clock; the files are the same
            expected = osc_features(
                before["osc"][osc],
                after["osc"][osc],
                mounts_before.get(osc),
                mounts.get(osc),
                seconds,
                prev_interval=previous.get(osc),
            )
            assert list(row) == list(expected)
            assert all(_same(row[name], expected[name]) for name in expected), osc
            previous[osc] = expected
    assert any(row["ost_read_rpc_bytes_data.samples_sum"] > 0 for rows in recorder.rows for row in rows.values())


def test_an_agent_with_nothing_to_tune_says_so_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Started before the mount (or with an --osc that matches nothing), the agent waits, and says why."""
    (tmp_path / "root").mkdir()
    with (
        caplog.at_level("INFO", logger="pfstune.agent"),
        LustreBackend(tmp_path / "root", state_dir=tmp_path / "state") as backend,
    ):
        agent = Agent(backend, DefaultTuner(), interval=0.1)
        for _ in range(3):
            agent.tick()
    assert caplog.text.count("no client OSC device found") == 1

    caplog.clear()
    backend = _SlowBackend(cost=0.0)
    with caplog.at_level("INFO", logger="pfstune.agent"):
        Agent(backend, DefaultTuner(), interval=0.5, osc_glob="*OST0007*").run(duration=1.0)
        Agent(backend, DefaultTuner(), interval=0.5).run(duration=1.0)
    assert caplog.text.count("no client OSC device matches --osc '*OST0007*'") == 1
    assert caplog.text.count("tuning 1 OSC(s)") == 1


class _Flaky(Tuner):
    """Raises on the ticks listed, asks for 16 RPCs in flight otherwise."""

    name = "flaky"

    def __init__(self, failing: set[int]) -> None:
        self.failing = failing
        self.tick = 0

    def suggest_batch(self, contexts: list[Context]) -> list[Config]:
        self.tick += 1
        if self.tick in self.failing:
            raise ZeroDivisionError("a bug in the tuner")
        return [{**context.config, "max_rpcs_in_flight": 8 + 8 * (self.tick % 2)} for context in contexts]

    def suggest(self, context: Context) -> Config:
        raise AssertionError("suggest_batch is overridden")


def test_a_tuner_that_raises_changes_nothing_and_the_loop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    backend = _SlowBackend(cost=0.0)
    written: list[Config] = []
    backend.apply = lambda osc, config: written.append(dict(config)) or dict(config)  # type: ignore[method-assign]
    reports: list[TickReport] = []
    with caplog.at_level("INFO", logger="pfstune.agent"):
        summary = Agent(backend, _Flaky({2, 3, 4}), interval=0.5, listeners=[reports.append]).run(duration=3.0)
    assert summary.ticks == 7
    assert [report.errors for report in reports] == [0, 1, 1, 1, 0, 0, 0]
    # the probe always reads 8: odd ticks ask for 16, even ones for 8 (no change)
    assert [bool(report.changes) for report in reports] == [True, False, False, False, True, False, True]
    assert written == [{"max_rpcs_in_flight": 16}] * 3
    assert caplog.text.count("tuner flaky failed; every OSC keeps its values this tick") == 1
    assert "ZeroDivisionError: a bug in the tuner" in caplog.text  # the traceback, once
    assert "tuner flaky works again after 3 failed tick(s)" in caplog.text


def test_an_osc_left_alone_that_went_away_is_no_longer_reported() -> None:
    backend = _SlowBackend(cost=0.0)
    backend.left_alone = lambda: frozenset({"fs-OST0000-osc-ffff000000000001", "fs-OST0009-osc-ffff000000000001"})  # type: ignore[method-assign]
    reports: list[TickReport] = []
    Agent(backend, DefaultTuner(), interval=0.5, listeners=[reports.append]).run(duration=0.5)
    # OST0009 is in the actuator's memory but no longer on the client: the exporter would keep its gauge
    assert reports[-1].left_alone == {"fs-OST0000-osc-ffff000000000001"}


class _Overreaching(Tuner):
    """Writes its choice into the context it was given and adds a parameter it does not tune."""

    name = "overreaching"

    def suggest(self, context: Context) -> Config:
        context.config.update({"max_rpcs_in_flight": 16})
        return {**context.config, "max_dirty_mb": 0}


def test_the_agent_applies_only_tuned_parameters_against_the_values_it_probed() -> None:
    backend = _SlowBackend(cost=0.0)
    written: list[Config] = []
    backend.apply = lambda osc, config: written.append(dict(config)) or dict(config)  # type: ignore[method-assign]
    Agent(backend, _Overreaching(), interval=0.5).run(duration=1.0)
    # the change is seen although the context now says 16, and max_dirty_mb is never written
    assert written == [{"max_rpcs_in_flight": 16}] * 3


class _Sixteen(Tuner):
    """Always asks for 16 RPCs in flight; remembers which OSCs it was told to forget."""

    name = "sixteen"

    def __init__(self) -> None:
        self.forgotten: list[str] = []
        self.asked: list[set[str]] = []

    def suggest_batch(self, contexts: list[Context]) -> list[Config]:
        self.asked.append({context.osc for context in contexts})
        return [self.suggest(context) for context in contexts]

    def suggest(self, context: Context) -> Config:
        return {**context.config, "max_rpcs_in_flight": 16}

    def forget(self, osc: str) -> None:
        self.forgotten.append(osc)


def test_an_osc_someone_else_retunes_is_left_alone_and_shown(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "root", "2.15")
    tuner, exporter = _Sixteen(), Exporter()
    reports: list[TickReport] = []
    with LustreBackend(root, state_dir=tmp_path / "state") as backend:
        agent = Agent(backend, tuner, interval=0.5, listeners=[reports.append, exporter])
        agent.tick()  # 16 on both OSCs
        (root / "sys/fs/lustre/osc" / OSC / "max_rpcs_in_flight").write_text("32")  # an administrator
        agent.tick()  # the actuator sees it
        agent.tick()
    assert agent.summary.as_dict()["left_alone"] == [OSC]
    assert [set(report.changes) for report in reports] == [{OSC, OSC2}, set(), set()]
    assert [report.left_alone for report in reports] == [frozenset(), {OSC}, {OSC}]
    assert tuner.asked == [{OSC, OSC2}, {OSC, OSC2}, {OSC2}]
    assert tuner.forgotten == [OSC]
    assert exporter.registry.get_sample_value("pfstune_osc_left_alone", {"osc": OSC}) == 1
    assert exporter.registry.get_sample_value("pfstune_osc_left_alone", {"osc": OSC2}) is None
    assert (root / "sys/fs/lustre/osc" / OSC / "max_rpcs_in_flight").read_text() == "32"  # kept at exit
    assert (root / "sys/fs/lustre/osc" / OSC2 / "max_rpcs_in_flight").read_text().strip() == "8"  # restored


def test_the_time_after_the_last_tick_is_simulated_too(write_scenario: Callable[[str, str], Path]) -> None:
    """A 1.2 s scenario probed every 0.5 s runs 1.2 s, not 1.0: the same run as without an agent."""
    from pfstune.runs import simulate

    scenario = load_scenario(write_scenario(SEQRW.replace("duration: 20s", "duration: 1.2s"), "short.yaml"))
    direct = simulate(scenario, "default")
    ticked = simulate(scenario, "default", listeners=[lambda report: None])  # through the agent loop
    assert direct["sim_seconds"] == ticked["sim_seconds"] == pytest.approx(1.2)
    assert ticked["events"] == direct["events"]
    assert ticked["mbps"] == direct["mbps"]


def test_an_option_the_backend_does_not_use_is_named() -> None:
    assert _ignored_options(AgentOptions()) == []
    assert _ignored_options(AgentOptions(backend="sim", scenario=Path("s.yaml"))) == []
    on_a_client = _ignored_options(AgentOptions(backend="lustre", scenario=Path("s.yaml")))
    assert on_a_client == ["--scenario s.yaml is ignored: only --backend sim runs a scenario"]
    simulated = _ignored_options(AgentOptions(backend="sim", scenario=Path("s.yaml"), root=Path("/tmp/tree")))
    assert simulated == ["--root /tmp/tree is ignored: --backend sim tunes the scenario's simulated clients"]


class _Recording(Tuner):
    """Records which OSCs it observed, tick by tick, and asks every OSC for a change every tick
    (max_rpcs_in_flight between 8 and 16)."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def observe(self, osc: str, config: Config, metrics: Mapping[str, float]) -> None:
        self.seen.add(osc)

    def suggest(self, context: Context) -> Config:
        return {**context.config, "max_rpcs_in_flight": 24 - context.config["max_rpcs_in_flight"]}


_BUSY = "lustrefs-OST0000-osc-ffff88105db50000"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda text: "".join(text.splitlines(keepends=True)[:4]), id="file read cut at a line boundary"),
        pytest.param(lambda text: text.replace("18215581 samples", "3 samples"), id="counter went back (a clear)"),
    ],
)
def test_counters_that_went_back_reach_the_tuner_in_no_interval(
    damage: Callable[[str], str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A half-written read looks like a clear; either way the interval it ends and the one it starts
    are left out (the second would count the cut counters' whole history as one interval's), with
    one warning, and the OSC is observed again from the interval after."""
    root = tmp_path / "client"
    shutil.copytree(SHARED / "fixtures" / "lustre-2.10-client", root)
    stats = root / "proc/fs/lustre/osc" / _BUSY / "stats"
    intact = stats.read_text()
    tuner = _Recording()
    observed: list[set[str]] = []
    reported: list[set[str]] = []
    changed: list[set[str]] = []
    with (
        caplog.at_level("WARNING", logger="pfstune.agent"),
        LustreBackend(root, tmp_path / "state") as backend,
    ):
        agent = Agent(backend, tuner, interval=0.5)
        for text in (intact, intact, damage(intact), intact, intact, damage(intact), intact):
            stats.write_text(text)
            tuner.seen = set()
            report = agent.tick()
            observed.append(set(tuner.seen))
            reported.append(set(report.mbps))
            changed.append(set(report.changes))
            assert report.dirty_mb[_BUSY] == 32  # the fixture's max_dirty_mb, for the exporter
    everyone = observed[1]
    assert _BUSY in everyone
    assert len(everyone) == 7  # the 2.10 client's seven OSCs
    others = everyone - {_BUSY}
    assert observed == [set(), everyone, others, others, everyone, others, others]
    assert reported == observed  # no throughput for the left-out intervals either
    # and no decision: the OSC keeps its values through them (every tick asks every OSC for a change)
    assert changed == [everyone, everyone, others, others, everyone, others, others]
    warnings = [r.getMessage() for r in caplog.records if "went back" in r.getMessage()]
    assert len(warnings) == 2  # once per event: the OSC read cleanly in between
    assert all(w.startswith(f"{_BUSY}: statistics went back since the last probe") for w in warnings)


class _PickyTuner(DefaultTuner):
    """A tuner that knows only 1 s probes."""

    def interval_warning(self, seconds: float) -> str | None:
        return None if seconds == 1.0 else f"picky: not every {seconds:g} s"


def test_the_agent_passes_on_once_what_its_tuner_says_of_the_interval(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pfstune.agent._SAID", set())
    with caplog.at_level("WARNING", logger="pfstune.agent"):
        agent = Agent(_SlowBackend(cost=0.0), _PickyTuner(), interval=2.0)
        for _ in range(3):
            agent.tick()
        Agent(_SlowBackend(cost=0.0), _PickyTuner(), interval=1.0)
        # a benchmark's worker runs one agent per scenario: the same words are not said again
        Agent(_SlowBackend(cost=0.0), _PickyTuner(), interval=2.0)
        Agent(_SlowBackend(cost=0.0), _PickyTuner(), interval=4.0)
    assert caplog.text.count("picky: not every 2 s") == 1
    assert caplog.text.count("picky: not every 4 s") == 1
    assert "not every 1 s" not in caplog.text
