"""Parse the sizes, rates and durations written in scenario files and on the command line.

Three separate parsers, because the conventions differ and mixing them is a classic source of
silent 5 % (or 8x) errors:

* :func:`parse_size` — **binary** sizes, as filebench and IOR read them: ``k``/``m``/``g``/``t``/``p``
  (any case) are powers of 1024, so ``8k`` = 8192 and ``1.5g`` = 1610612736 bytes.  The explicit
  IEC spellings ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB`` mean the same; ``b`` or no unit means
  bytes.  ``KB``/``MB``/... are refused as ambiguous.  The result must be a whole number of bytes.
* :func:`parse_rate` — **decimal** bandwidths in bytes per second, as vendors and the presets
  write them: ``k``/``m``/``g``/``t`` are powers of 1000, optionally followed by ``B`` and/or
  ``/s`` (``500m``, ``2.8g``, ``500MB/s``).  ``KiB/s``, ``MiB/s``... are binary.  A lowercase
  ``b`` after a prefix (``25Gb/s``) means bits and is refused: write bytes.
* :func:`parse_duration` — ``ns``, ``us`` (or ``µs``), ``ms``, ``s``, ``min``, ``h``; returns
  integer nanoseconds.  A unit is required (``320`` alone is refused) and ``m`` is refused as
  ambiguous between minutes and milliseconds.

>>> parse_size("8k"), parse_size("1MiB"), parse_size(512), parse_size("1.5g")
(8192, 1048576, 512, 1610612736)
>>> parse_rate("2800m"), parse_rate("500MB/s"), parse_rate("1MiB/s")
(2800000000.0, 500000000.0, 1048576.0)
>>> parse_duration("320s"), parse_duration("25us"), parse_duration("2min")
(320000000000, 25000, 120000000000)
"""

from __future__ import annotations

import re
from decimal import Decimal

from pfstune.errors import UnitError

# The shortest interval between two probes of a client's statistics, in the agent and in a
# scenario: Lustre prints its times in microseconds, one probe of a client takes milliseconds,
# and a shorter interval only makes a run take millions of steps (a typo such as `1ns`).
MIN_PROBE_INTERVAL_NS = 1_000_000

# The largest size and duration any value may have (1 EiB; 1000 hours). pfsim keeps bytes and
# nanoseconds in 64-bit integers; these leave room for the sums and products it forms from them
# (a time plus a latency, a size times a count), where a larger value would wrap around.
MAX_SIZE = 1 << 60
MAX_DURATION_NS = 1000 * 3600 * 10**9

_NUMBER = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([^\s\d.]*)\s*$")

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    **{p: 1024 ** (i + 1) for i, p in enumerate("kmgtp")},
    **{f"{p}ib": 1024 ** (i + 1) for i, p in enumerate("kmgtp")},
}

_RATE_PREFIXES = {"": 1, **{p: 1000 ** (i + 1) for i, p in enumerate("kmgt")}}

_DURATION_UNITS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "min": 60 * 10**9,
    "h": 3600 * 10**9,
}


def _split(value: object, kind: str) -> tuple[Decimal, str]:
    """Split ``value`` into a non-negative number and its unit text, or raise :class:`UnitError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UnitError(f"{value!r} is not a {kind}")
    if isinstance(value, (int, float)):
        if value < 0 or value != value or value in (float("inf"), float("-inf")):
            raise UnitError(f"{value!r} is not a {kind}: it must be a finite number >= 0")
        return Decimal(str(value)), ""
    match = _NUMBER.match(value)
    if match is None:
        if value.strip().startswith("-"):
            raise UnitError(f"{value!r} is not a {kind}: it must not be negative")
        raise UnitError(f"{value!r} is not a {kind}")
    return Decimal(match.group(1)), match.group(2)


def parse_size(value: object) -> int:
    """Return the number of bytes in a binary size such as ``8k``, ``16m``, ``4KiB`` or ``512``."""
    number, unit = _split(value, "size")
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        problem = "is ambiguous" if unit.lower().endswith("b") else "is not a size unit"
        raise UnitError(
            f"{value!r} is not a size: {unit!r} {problem}; sizes are binary, "
            "use b, k, m, g, t, p or KiB, MiB, GiB, TiB, PiB (powers of 1024)"
        )
    total = number * factor
    if total != total.to_integral_value():
        raise UnitError(f"{value!r} is not a whole number of bytes")
    if total > MAX_SIZE:
        raise UnitError(f"{value!r} is larger than any size pfstune handles (1 EiB)")
    return int(total)


def parse_rate(value: object) -> float:
    """Return bytes per second for a decimal rate such as ``500m``, ``2.8g`` or ``500MB/s``."""
    number, unit = _split(value, "rate")
    text = unit.removesuffix("/s")
    if text.lower().endswith("ib"):
        factor = _SIZE_UNITS.get(text.lower()) if len(text) == 3 else None
    elif text.endswith("b"):
        raise UnitError(f"{value!r} is a rate in bits; write bytes per second (e.g. 25Gb/s = 3125MB/s)")
    else:
        factor = _RATE_PREFIXES.get(text.removesuffix("B").lower())
    if factor is None:
        raise UnitError(
            f"{value!r} is not a rate: unknown unit {unit!r}; "
            "use k, m, g, t (powers of 1000, optionally with B or B/s) or KiB/s, MiB/s, GiB/s"
        )
    return float(number * factor)


def parse_duration(value: object) -> int:
    """Return integer nanoseconds for a duration such as ``320s``, ``500ms``, ``2min`` or ``25us``."""
    number, unit = _split(value, "duration")
    if unit == "":
        example = f"'{value}s'" if number > 0 else "'500ms'"  # '0s' would be refused where zero is
        raise UnitError(f"{value!r} is not a duration: add a unit (ns, us, ms, s, min, h), e.g. {example}")
    factor = _DURATION_UNITS.get(unit)
    if factor is None:
        hint = " ('m' is ambiguous: write 'min' or 'ms')" if unit == "m" else ""
        raise UnitError(f"{value!r} is not a duration: unknown unit {unit!r}{hint}; use ns, us, ms, s, min, h")
    total = number * factor
    if total != total.to_integral_value():
        raise UnitError(f"{value!r} is not a whole number of nanoseconds")
    if total > MAX_DURATION_NS:
        raise UnitError(f"{value!r} is longer than any duration pfstune handles (1000h)")
    return int(total)
