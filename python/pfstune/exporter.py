"""The agent's Prometheus endpoint (``--metrics-port``), bound to 127.0.0.1 unless told otherwise.

Metrics, refreshed after every tick:

- ``pfstune_osc_tunable{osc,param}``: the value in force of each tuned parameter, and
  ``max_dirty_mb`` as the tick's probe read it (Lustre raises it with the RPC window, and the
  agent restores it at exit);
- ``pfstune_osc_throughput_bytes_per_second{osc}``: RPC throughput of the last interval (base
  units, as Prometheus names them);
- ``pfstune_decisions_total{osc}``: configurations applied;
- ``pfstune_errors_total``: writes refused or not verified, and ticks whose tuner raised;
- ``pfstune_osc_left_alone{osc}``: 1 for an OSC no longer tuned because someone else changed
  its values (the agent logged which);
- ``pfstune_tick_seconds``: wall time of a tick (summary: count and sum);
- ``pfstune_last_tick_timestamp_seconds``: Unix time of the last tick (staleness alarms).

An OSC's series go away with it: when a tick no longer reads an OSC (unmounted, or its files
unreadable), its series are removed rather than left at their last values.  A remount gives
each OSC a new instance name, so stale series would also pile up over a node's uptime.  An
interval without a throughput figure (the OSC's first probe) removes its throughput series.

A private registry keeps the default process collectors out unless asked for, and lets tests
run several exporters in one process.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Summary, start_http_server

if TYPE_CHECKING:  # the agent imports the exporter's users, not the other way round
    from pfstune.agent import TickReport


class Exporter:
    """Prometheus metrics of one agent; call it with every :class:`~pfstune.agent.TickReport`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        """Create the metrics in ``registry`` (default: a new private one)."""
        self.registry = registry or CollectorRegistry()
        self.tunable = Gauge(
            "pfstune_osc_tunable",
            "Value in force of a tuned OSC parameter, or of max_dirty_mb, which Lustre couples to them",
            ["osc", "param"],
            registry=self.registry,
        )
        self.throughput = Gauge(
            "pfstune_osc_throughput_bytes_per_second",
            "RPC throughput of the last interval, bytes per second",
            ["osc"],
            registry=self.registry,
        )
        self.decisions = Counter(
            "pfstune_decisions", "Configurations applied to an OSC", ["osc"], registry=self.registry
        )
        self.errors = Counter(
            "pfstune_errors", "Writes refused or not verified, and ticks whose tuner raised", registry=self.registry
        )
        self.left_alone = Gauge(
            "pfstune_osc_left_alone",
            "1 for an OSC no longer tuned because someone else changed its values",
            ["osc"],
            registry=self.registry,
        )
        self.tick_seconds = Summary("pfstune_tick_seconds", "Wall time of one agent tick", registry=self.registry)
        self.last_tick = Gauge(
            "pfstune_last_tick_timestamp_seconds", "Unix time of the last tick", registry=self.registry
        )
        self._params: dict[str, set[str]] = {}  # osc -> the params of its tunable series

    def serve(self, port: int, address: str = "127.0.0.1") -> None:
        """Serve ``/metrics`` on ``address:port`` from a background thread."""
        start_http_server(port, addr=address, registry=self.registry)

    def __call__(self, report: TickReport) -> None:
        """Record one tick."""
        for osc in set(self._params) - set(report.configs):
            self._forget(osc)
        for osc, tuned in report.configs.items():
            config = {**tuned, "max_dirty_mb": report.dirty_mb[osc]} if osc in report.dirty_mb else tuned
            for param, value in config.items():
                self.tunable.labels(osc=osc, param=param).set(value)
            for param in self._params.get(osc, set()) - set(config):  # max_dirty_mb no longer readable
                self.tunable.remove(osc, param)
            self._params[osc] = set(config)
            if osc not in report.mbps:
                with contextlib.suppress(KeyError):  # older prometheus_client: KeyError for a series never set
                    self.throughput.remove(osc)
        for osc, mbps in report.mbps.items():
            self.throughput.labels(osc=osc).set(mbps * 1e6)
        for osc in report.changes:
            self.decisions.labels(osc=osc).inc()
        for osc in report.left_alone:
            self.left_alone.labels(osc=osc).set(1)
        if report.errors:
            self.errors.inc(report.errors)
        self.tick_seconds.observe(report.seconds)
        self.last_tick.set(time.time())

    def _forget(self, osc: str) -> None:
        """Remove every series of an OSC the agent no longer reads.

        Removing a series that was never set is a no-op in recent prometheus_client and a
        KeyError in older ones (pyproject allows 0.17).
        """
        for param in self._params.pop(osc):
            self.tunable.remove(osc, param)
        for metric in (self.throughput, self.decisions, self.left_alone):
            with contextlib.suppress(KeyError):
                metric.remove(osc)
