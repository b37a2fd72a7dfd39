"""The agent loop: probe -> features -> tuner -> apply, once per interval, on an injected clock.

One :class:`Agent` manages every selected client OSC of a node (or of every client of a
simulation): each tick it probes the backend (:meth:`~pfstune.backends._base.Backend.probe_table`:
the parsed statistics as arrays), turns the last two probes of each OSC into a feature row
(:func:`pfstune.features.osc_feature_columns`, the one feature path), lets the tuner observe
that interval and suggest the next configuration (all OSCs in one batch), and applies the
changes.  A refused or failed write, or a tuner that raises, is logged and counted; it never
stops the loop.

Ticks are scheduled on a fixed grid (``start + k * interval``), so a slow tick delays the next
one but does not shift all later ones; a tick that overruns a whole interval skips the missed
grid points rather than probing back to back.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pfstune.backends._base import Backend
from pfstune.features import PREV_INTERVAL_COLUMNS, FeatureTable, osc_feature_columns
from pfstune.lustre.limits import ActuatorError
from pfstune.lustre.table import ProbeTable
from pfstune.tuners._base import TUNED_PARAMS, Config, Context, Tuner

log = logging.getLogger("pfstune.agent")

#: The tuners' interval warnings already logged by this process (:class:`Agent`).
_SAID: set[str] = set()


@dataclass
class TickReport:
    """What one tick saw and did."""

    time: float
    oscs: int = 0
    changes: dict[str, Config] = field(default_factory=dict)  # osc -> the values written
    errors: int = 0
    mbps: dict[str, float] = field(default_factory=dict)  # osc -> RPC throughput of the interval
    read_mbps: dict[str, float] = field(default_factory=dict)  # osc -> its read RPCs' share of it
    write_mbps: dict[str, float] = field(default_factory=dict)  # osc -> its write RPCs' share
    configs: dict[str, Config] = field(default_factory=dict)  # osc -> configuration now in force
    dirty_mb: dict[str, int] = field(default_factory=dict)  # osc -> max_dirty_mb as probed (Lustre couples it)
    left_alone: frozenset[str] = frozenset()  # OSCs not tuned: someone else changed their values
    seconds: float = 0.0  # wall time the tick took, and its phases:
    probe_seconds: float = 0.0  # reading and parsing the client's files
    features_seconds: float = 0.0  # feature rows, and the tuner observing them
    decide_seconds: float = 0.0  # the tuner's suggestions (model inference for learned tuners)
    apply_seconds: float = 0.0  # writing and verifying the changes


#: Called after every tick (the Prometheus exporter, progress output, tests).
TickListener = Callable[[TickReport], None]


@dataclass
class AgentSummary:
    """Totals of a run, for ``--json`` and the logs."""

    ticks: int = 0
    decisions: int = 0
    errors: int = 0
    max_tick_seconds: float = 0.0
    total_tick_seconds: float = 0.0
    left_alone: frozenset[str] = frozenset()  # OSCs someone else retuned, as of the last tick

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        mean = self.total_tick_seconds / self.ticks if self.ticks else 0.0
        return {
            "ticks": self.ticks,
            "decisions": self.decisions,
            "errors": self.errors,
            "mean_tick_ms": mean * 1e3,
            "max_tick_ms": self.max_tick_seconds * 1e3,
            "left_alone": sorted(self.left_alone),
        }


def _config_of(tunables: Mapping[str, int | str]) -> Config | None:
    config: Config = {}
    for param in TUNED_PARAMS:
        value = tunables.get(param)
        if not isinstance(value, int):
            return None
        config[param] = int(value)
    return config


def _assignments(changes: Mapping[str, int]) -> str:
    return " ".join(f"{p}={v}" for p, v in sorted(changes.items()))


class Agent:
    """Tunes the OSCs of one backend with one tuner.  See the module docstring."""

    def __init__(
        self,
        backend: Backend,
        tuner: Tuner,
        interval: float = 0.5,
        osc_glob: str = "*",
        listeners: list[TickListener] | None = None,
    ) -> None:
        """An agent probing ``backend`` every ``interval`` seconds of its clock."""
        if not interval > 0:
            raise ValueError(f"interval must be positive, got {interval}")
        self.backend = backend
        self.tuner = tuner
        self.interval = interval
        if (warning := tuner.interval_warning(interval)) is not None and warning not in _SAID:
            # once per process: a benchmark's worker builds one agent per run, with the same words
            _SAID.add(warning)
            log.warning(warning)
        self.osc_glob = osc_glob
        self.listeners = list(listeners or [])
        self.summary = AgentSummary()
        self._previous: ProbeTable | None = None
        self._unreadable: set[str] = set()  # OSCs whose tunables could not be read (warned once)
        self._intervals: dict[str, dict[str, float]] = {}  # what features need of each OSC's last row
        self._tuner_failures = 0  # ticks in a row whose tuner call raised
        self._left_alone: frozenset[str] = frozenset()  # the backend's, as of the last tick
        self._tuning: int | None = None  # how many OSCs the last tick found to tune (logged when it changes)
        self._suspect_baseline: set[str] = set()  # OSCs whose counters went back at the last probe
        self._warned_backwards: set[str] = set()  # ... warned about, until they read cleanly again

    def tick(self) -> TickReport:
        """Probe, decide and apply once."""
        started = time.perf_counter()
        probe = self.backend.probe_table()
        probed = time.perf_counter()
        report = TickReport(time=probe.time)
        previous = self._previous
        names: list[str] = []
        configs: list[Config] = []
        observed: list[int] = []  # the OSCs seen in both probes: features for all of them at once
        rows_now: list[int] = []  # their rows in this probe's table
        rows_before: list[int] = []  # and in the previous one's
        everything = self.osc_glob == "*"
        matched = 0  # OSCs the glob selects, readable or not
        for at, (name, tunables) in enumerate(zip(probe.oscs, probe.tunables, strict=True)):
            if not everything and not fnmatch.fnmatchcase(name, self.osc_glob):
                continue
            matched += 1
            config = _config_of(tunables)
            if config is None:
                if name not in self._unreadable:
                    log.warning("cannot read the tunables of %s; leaving it alone", name)
                    self._unreadable.add(name)
                continue
            self._unreadable.discard(name)
            names.append(name)
            configs.append(config)
            report.configs[name] = config
            dirty_mb = tunables.get("max_dirty_mb")
            if isinstance(dirty_mb, int):
                report.dirty_mb[name] = dirty_mb
            before = previous.row(name) if previous is not None else None
            if before is not None:
                observed.append(len(names) - 1)
                rows_now.append(at)
                rows_before.append(before)
        report.oscs = len(names)
        self._log_what_is_tuned(report.oscs, matched)
        rows: list[Mapping[str, float]] = [{} for _ in names]
        untrusted: set[str] = set()  # OSCs whose interval is left out (see _untrusted_intervals)
        if previous is not None and observed:
            columns = osc_feature_columns(
                previous.table.take(rows_before),
                probe.table.take(rows_now),
                probe.time - previous.time,
                [self._intervals.get(names[i]) for i in observed],
            )
            untrusted = self._untrusted_intervals([names[i] for i in observed], columns["x_stats_cleared"].tolist())
            # Row views of one matrix, not a dict per OSC (see FeatureTable).
            for i, features in zip(observed, FeatureTable(columns).rows(), strict=True):
                if names[i] not in untrusted:
                    rows[i] = features
            # What the next interval's features need of this one (its write RPCs), per OSC.
            kept = zip(*(columns[name].tolist() for name in PREV_INTERVAL_COLUMNS), strict=True)
            for i, values in zip(observed, kept, strict=True):
                if names[i] in untrusted:
                    self._intervals.pop(names[i], None)
                else:
                    self._intervals[names[i]] = dict(zip(PREV_INTERVAL_COLUMNS, values, strict=True))
            # x_mbps is osc_throughput_mbps of each row (the same expression), taken as a column.
            split = ("x_mbps", "x_read_mbps", "x_write_mbps")
            throughput = zip(*(columns[name].tolist() for name in split), strict=True)
            for i, (mbps, read, write) in zip(observed, throughput, strict=True):
                if math.isfinite(mbps) and names[i] not in untrusted:
                    report.mbps[names[i]] = mbps
                    report.read_mbps[names[i]] = read
                    report.write_mbps[names[i]] = write
        left_alone = self.backend.left_alone()
        contexts = [
            Context(name, probe.time, config, self.backend.bounds(name), row)
            for name, config, row in zip(names, configs, rows, strict=True)
            if name not in left_alone
        ]
        gone = sorted(set(previous.oscs) - set(probe.oscs)) if previous is not None else []
        for osc in gone:
            log.info("%s went away; forgetting it", osc)
            self._intervals.pop(osc, None)
        forget = gone + sorted(left_alone - self._left_alone)  # the tuner lets go of both
        self._left_alone = left_alone
        featured = time.perf_counter()
        in_force = {context.osc: dict(context.config) for context in contexts}  # a tuner may not alter them
        suggestions = self._ask_tuner(contexts, forget, report)
        decided = time.perf_counter()
        requests: dict[str, Config] = {}
        for context, suggestion in zip(contexts, suggestions, strict=True):
            if context.osc in untrusted:
                continue  # no decision on an interval the tuner could not see: the OSC keeps its values
            # only the tuned parameters: a tuner does not get to set anything else
            current = in_force[context.osc]
            changes = {p: int(v) for p, v in suggestion.items() if p in TUNED_PARAMS and current.get(p) != v}
            if changes:
                requests[context.osc] = changes
        # One call for the tick, so that the backend can save every original at once.
        results = self.backend.apply_all(requests) if requests else {}
        for context in contexts:
            if context.osc not in results:
                continue
            result = results[context.osc]
            if isinstance(result, ActuatorError):
                report.errors += 1
                log.error("%s: %s", context.osc, result)
                written = getattr(result, "in_force", None)  # what did get written, if anything
                if written:
                    report.configs[context.osc] = {**context.config, **written}
                continue
            # What changed, not what was asked: the kernel may round a value, and the actuator leaves
            # alone an OSC whose values someone else has changed.
            changes = {p: v for p, v in result.items() if context.config.get(p) != v}
            if self.backend.dry_run:
                # nothing was written: the client keeps its values, and no decision took effect (the
                # tuner proposes again from what is in force; the backend prints each change once)
                report.configs[context.osc] = dict(context.config)
                if changes:
                    log.debug("%s: dry run: would set %s", context.osc, _assignments(changes))
                continue
            report.configs[context.osc] = {**context.config, **result}
            if not changes:
                continue
            report.changes[context.osc] = changes
            log.info("%s: set %s", context.osc, _assignments(changes))
        self._previous = probe
        # with any this tick's applies found; not an OSC that went away (it is forgotten)
        report.left_alone = self.backend.left_alone() & set(names)
        finished = time.perf_counter()
        report.seconds = finished - started
        report.probe_seconds = probed - started
        report.features_seconds = featured - probed
        report.decide_seconds = decided - featured
        report.apply_seconds = finished - decided
        self._account(report)
        for listener in self.listeners:
            listener(report)
        return report

    def _untrusted_intervals(self, names: list[str], cleared: list[float]) -> set[str]:
        """The OSCs (of ``names``, observed this tick) whose interval the tuner must not see.

        ``cleared`` is each one's ``x_stats_cleared``: a statistics file whose counters went back
        since the last probe. That is a clear by someone else or a remount, and then the interval
        holds only what came after it; or a file read half-written (cut at a line boundary, so
        its last counters are missing), and then the next interval, which starts from that read,
        would count the missing counters' whole history as new. The two cannot be told apart when
        they happen, so both intervals are left out: the tuner sees neither (no row, as on an
        OSC's first tick), the OSC keeps its values through them whatever the tuner suggests (a
        tuner may take a row-less interval for an idle one), and no throughput is reported for
        them. A warning names the OSC once, until it reads cleanly again.
        """
        seen = set(names)
        flagged = {name for name, flag in zip(names, cleared, strict=True) if flag == 1.0}
        untrusted = flagged | (self._suspect_baseline & seen)
        for name in sorted(flagged):
            if name in self._warned_backwards:
                log.debug("%s: statistics went back again since the last probe", name)
                continue
            log.warning(
                "%s: statistics went back since the last probe (cleared by someone else, a remount, or a "
                "file read half-written); this interval and the next are not used",
                name,
            )
            self._warned_backwards.add(name)
        self._warned_backwards -= seen - untrusted
        self._suspect_baseline = flagged
        return untrusted

    def _ask_tuner(self, contexts: list[Context], forget: list[str], report: TickReport) -> list[Config]:
        """The tuner observes the interval that ended, forgets the OSCs in ``forget`` (gone, or left
        alone) and suggests the next configurations.

        A tuner is a plug-in: if it raises, every OSC keeps its values this tick, the failure is
        counted as an error, and the loop goes on (a crash would restore the originals and let
        systemd restart into the same failure).  The first failure in a row is logged with its
        traceback, then one line every 100 ticks, and one when the tuner works again.
        """
        try:
            for context in contexts:
                if context.metrics:
                    self.tuner.observe(context.osc, dict(context.config), context.metrics)
            for osc in forget:
                self.tuner.forget(osc)
            suggestions = self.tuner.suggest_batch(contexts)
        except Exception:
            self._tuner_failures += 1
            report.errors += 1
            if self._tuner_failures == 1:
                log.exception("tuner %s failed; every OSC keeps its values this tick", self.tuner.name)
            elif self._tuner_failures % 100 == 0:
                log.error("tuner %s has failed %d ticks in a row", self.tuner.name, self._tuner_failures)
            return [dict(context.config) for context in contexts]
        if self._tuner_failures:
            log.info("tuner %s works again after %d failed tick(s)", self.tuner.name, self._tuner_failures)
            self._tuner_failures = 0
        return suggestions

    def _log_what_is_tuned(self, tuned: int, matched: int) -> None:
        """Say when the number of OSCs to tune changes, and warn when there are none: an agent started
        before the mount, or with an ``--osc`` that matches nothing, would otherwise idle in silence."""
        if tuned == self._tuning:
            return
        self._tuning = tuned
        if tuned:
            log.info("tuning %d OSC(s)", tuned)
        elif matched:
            pass  # each unreadable OSC has had its own warning
        elif self.osc_glob == "*":
            log.warning("no client OSC device found (is a Lustre file system mounted?); waiting for one")
        else:
            log.warning("no client OSC device matches --osc %r; waiting for one", self.osc_glob)

    def _account(self, report: TickReport) -> None:
        summary = self.summary
        summary.ticks += 1
        summary.decisions += len(report.changes)
        summary.errors += report.errors
        summary.total_tick_seconds += report.seconds
        summary.max_tick_seconds = max(summary.max_tick_seconds, report.seconds)
        summary.left_alone = report.left_alone

    def run(self, duration: float | None = None) -> AgentSummary:
        """Tick every interval until ``duration`` seconds of the clock pass or the clock stops."""
        clock = self.backend.clock
        start = clock.now()
        end = math.inf if duration is None else start + duration
        ticks = 0
        if clock.stopped():  # a signal during start-up (the lock, crash recovery): change nothing
            return self.summary
        while True:
            self.tick()
            ticks += 1
            due = start + ticks * self.interval
            now = clock.now()
            if now > due:  # overran: skip to the next grid point still ahead
                missed = math.floor((now - due) / self.interval) + 1
                log.warning("tick took longer than the interval; skipping %d probe(s)", missed)
                ticks += missed
                due = start + ticks * self.interval
            if due > end:
                if clock.now() < end:
                    clock.sleep_until(end)  # the time after the last tick passes too (a 1.2 s run is not 1.0 s)
                break
            if not clock.sleep_until(due):
                break
        return self.summary
