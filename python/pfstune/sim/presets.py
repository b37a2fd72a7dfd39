"""Cluster presets: the physical parameters of a simulated Lustre cluster, as plain data.

A scenario names a preset (``cluster: {preset: cloudlab-c6525}``) and may override any of its
fields (``clients: 2``, ``ost_read_bw: 450m``).  :data:`PRESETS` holds the values and
:data:`FIELDS` declares, once, the kind of every field and the key it becomes in the engine
configuration, so that validation, conversion and ``pfstune sim presets`` all read one table.

Units: sizes (``client_ram``, ``ost_capacity``, ``brw_size``) are binary (``128g`` = 128 GiB);
**bandwidths are decimal bytes per second** (``500m`` = 500 MB/s = 5e8 B/s, the way drive and
NIC data sheets state them); latencies and costs are durations (``25us``).  See
:mod:`pfstune.units`.

>>> resolve_field("net_bandwidth", "2800m")
('net_bandwidth_bps', 2800000000.0)
>>> resolve_field("net_latency", "25us")
('net_latency_ns', 25000)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pfstune._pfsim import MAX_UNDIRTY
from pfstune.errors import UserError
from pfstune.sim._values import bounded, choice, integer, positive, text
from pfstune.units import parse_duration, parse_rate, parse_size

# The simulator author's numbers; tune them here and nowhere else.
# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # DIAL testbed, seed 000 Table I: 5 clients, 4 OSS x 2 SATA-SSD OSTs, 25 GbE, 128 GiB RAM,
    # Lustre 2.15.5.
    "cloudlab-c6525": dict(
        description=(
            "CloudLab c6525-25g (DIAL, seed 000 Table I): 16-core AMD 7302P, 128 GB RAM, "
            "2x480 GB SATA SSD, 25 GbE"
        ),
        lustre_version="2.15.5", fsname="hasanfs", clients=5, client_ram="128g", client_cpus=16,
        # what DIAL's clients kept of the files they read (docs/calibration.md, "The real
        # clients' page cache")
        client_page_cache="850m",
        # what DIAL's sequential readers kept in flight: about 40 MiB of RPCs whatever their size
        # (docs/calibration.md, "The real clients' read-ahead window")
        client_read_ahead_per_file="40m",
        client_grant="connect",  # fresh from the connect: 2 x (brw_size + 24 KiB) per OSC
        oss=4, osts_per_oss=2, oss_threads=256,
        net_bandwidth="2800m", net_stream_bandwidth="700m", net_latency="25us",
        ost_kind="ssd", ost_read_bw="500m", ost_write_bw="300m", ost_read_latency="20us",
        ost_write_latency="20us", ost_random_penalty="400us", ost_channels=8, ost_stripe="128k",
        ost_capacity="440g", ost_rpm=0, ost_scheduler="none",
        # 3 us a page read: the thread sets up all of a read's pages before its RPCs leave
        # (docs/calibration.md, "A read's RPCs leave together")
        oss_service_time="20us", client_rpc_cost="12us", client_page_cost="3us", client_extent_cost="5us",
        client_syscall_cost="10us", client_write_page_cost="2.2us",
        brw_size="4m",
    ),
    # IOPathTune testbed (seed 001): 1 MDS, 4 OSS, 5 clients; 2x Xeon Silver 4114, 192 GB RAM,
    # 1 TB 7200 rpm HDD OSTs, 10 GbE, Lustre 2.12.5.
    "cloudlab-c220g5": dict(
        description=(
            "CloudLab c220g5 (IOPathTune, seed 001): 20-core Xeon Silver 4114, 192 GB RAM, "
            "1 TB 7200 rpm HDD, 10 GbE"
        ),
        lustre_version="2.15.5", fsname="lustre", clients=5, client_ram="192g", client_cpus=20,
        client_page_cache="none",  # no data on IOPathTune's clients: Lustre's max_cached_mb alone
        client_read_ahead_per_file="default",  # nor on their read-ahead: Lustre's default
        client_grant="connect",
        oss=4, osts_per_oss=1, oss_threads=128,
        net_bandwidth="1150m", net_stream_bandwidth="350m", net_latency="30us",
        ost_kind="hdd", ost_read_bw="180m", ost_write_bw="170m", ost_read_latency="200us",
        ost_write_latency="200us", ost_random_penalty="8ms", ost_channels=1, ost_stripe="1m",
        ost_capacity="931g", ost_rpm=7200, ost_scheduler="mq-deadline",
        oss_service_time="25us", client_rpc_cost="15us", client_page_cost="3us", client_extent_cost="5us",
        client_syscall_cost="10us", client_write_page_cost="2.2us",
        brw_size="4m",
    ),
}
# fmt: on

DEFAULT_PRESET = "cloudlab-c6525"


def _fsname(value: object) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,8}", value):
        raise UserError(f"{value!r} is not a Lustre fsname (1 to 8 letters, digits, '_' or '-')")
    return value


def _brw_size(value: object) -> int:
    size = parse_size(value)
    if size & (size - 1) or not 4096 <= size <= 64 << 20:
        raise UserError(f"{value!r}: brw_size must be a power of two from 4k to 64m")
    return size


#: The Lustre versions whose statistics text pfsim prints (2.15.0-1, 2.15.2-6 and 2.15.7+ differ).
LUSTRE_VERSIONS = tuple(f"2.15.{minor}" for minor in range(9))


def _lustre_version(value: object) -> str:
    if value not in LUSTRE_VERSIONS:
        known = f"{LUSTRE_VERSIONS[0]} to {LUSTRE_VERSIONS[-1]}"
        raise UserError(f"{value!r} is not a Lustre version pfsim prints ({known})")
    return str(value)


# Bandwidths of at least 1 kB/s and latencies and costs of at most 10 s: beyond them no device or
# network is described, and pfsim's times (64-bit nanoseconds) would overflow as they add up.
_rate = bounded(positive(parse_rate), "1k (bytes/s)", low=1000.0)
_delay = bounded(parse_duration, "10s", high=10 * 10**9)


def _size_or(word: str) -> Callable[[object], int | None]:
    """A positive size, or ``word`` for None (the engine then keeps Lustre's own limit)."""

    def convert(value: object) -> int | None:
        if isinstance(value, str) and value.lower() == word:
            return None
        return positive(parse_size)(value)

    return convert


# clean file data the node's page cache keeps (``none``: Lustre's ``max_cached_mb`` alone)
_page_cache = _size_or("none")
# ``max_read_ahead_per_file_mb`` at mount (``default``: Lustre's, up to 256 MiB)
_read_ahead_per_file = _size_or("default")

#: The most grant an OSC asks for (``o_undirty``: 1,792 MiB - 1), pfsim's own ``MAX_UNDIRTY``.
MAX_GRANT: int = MAX_UNDIRTY


_grant_size = _size_or("connect")


def _grant(value: object) -> int | None:
    """Grant every OSC holds at the start: a size, or ``connect`` for what an OST grants at connect."""
    size = _grant_size(value)
    if size is not None and size > MAX_GRANT:
        raise UserError(f"{value!r} is above the most grant an OSC asks for ({MAX_GRANT} bytes, 1792 MiB - 1)")
    return size


@dataclass(frozen=True)
class Field:
    """One preset field: how to check and convert its value, and its engine config key."""

    convert: Callable[[object], object]
    engine_key: str | None  # None: descriptive only, not passed to the engine


FIELDS: dict[str, Field] = {
    "description": Field(text, None),
    "lustre_version": Field(_lustre_version, "lustre_version"),
    "fsname": Field(_fsname, "fsname"),
    "clients": Field(integer(1), "clients"),
    "client_ram": Field(positive(parse_size), "client_ram_bytes"),
    "client_page_cache": Field(_page_cache, "client_page_cache_bytes"),
    "client_read_ahead_per_file": Field(_read_ahead_per_file, "client_read_ahead_per_file_bytes"),
    "client_grant": Field(_grant, "client_grant_bytes"),
    "client_cpus": Field(integer(1, 4096), "client_cpus"),
    "oss": Field(integer(1), "oss"),
    "osts_per_oss": Field(integer(1), "osts_per_oss"),
    "oss_threads": Field(integer(1, 65536), "oss_threads"),
    "net_bandwidth": Field(_rate, "net_bandwidth_bps"),
    "net_stream_bandwidth": Field(_rate, "net_stream_bps"),
    "net_latency": Field(_delay, "net_latency_ns"),
    "ost_kind": Field(choice("OST kind", "ssd", "hdd"), "ost_kind"),
    "ost_read_bw": Field(_rate, "ost_read_bw_bps"),
    "ost_write_bw": Field(_rate, "ost_write_bw_bps"),
    "ost_read_latency": Field(_delay, "ost_read_latency_ns"),
    "ost_write_latency": Field(_delay, "ost_write_latency_ns"),
    "ost_random_penalty": Field(_delay, "ost_random_penalty_ns"),
    "ost_scheduler": Field(choice("I/O scheduler", "none", "mq-deadline"), "ost_scheduler"),
    "ost_channels": Field(integer(1, 1024), "ost_channels"),
    "ost_stripe": Field(bounded(parse_size, "4k", low=4096), "ost_stripe_bytes"),
    "ost_capacity": Field(positive(parse_size), "ost_capacity_bytes"),
    "ost_rpm": Field(integer(0, 100_000), "ost_rpm"),
    "oss_service_time": Field(_delay, "oss_service_ns"),
    "client_rpc_cost": Field(_delay, "client_rpc_ns"),
    "client_page_cost": Field(_delay, "client_page_ns"),
    "client_write_page_cost": Field(_delay, "client_write_page_ns"),
    "client_extent_cost": Field(_delay, "client_extent_ns"),
    "client_syscall_cost": Field(_delay, "client_syscall_ns"),
    "brw_size": Field(_brw_size, "brw_size_bytes"),
}


def resolve_field(field: str, value: object) -> tuple[str | None, object]:
    """Check one preset field's value and return ``(engine key, converted value)``.

    Raises :class:`~pfstune.errors.UserError` (without location; the caller adds it) when the
    value is invalid, and :class:`KeyError` when ``field`` is not a preset field.
    """
    spec = FIELDS[field]
    return spec.engine_key, spec.convert(value)
