"""The parameters pfstune may write on a Lustre client, and Lustre's rules for each.

This is the allow-list of design rule 4: a :class:`ParamRule` per writable parameter, with the
range, default, unit and parsing that the 2.15.5 kernel applies on a write (lustre-client.md
§3).  Anything not listed here is refused (:func:`rule` raises :class:`LimitError`), so a tuner
bug can never write ``active=0`` or ``max_cached_mb=1``.

================================  =====  =======  ===========================================================
parameter                         unit   default  valid values (2.15.5)
================================  =====  =======  ===========================================================
osc.max_pages_per_rpc             pages  1024     1 .. brw_size/4096 (the server's ``max_brw_size``),
                                                  rounded up to the OST chunk
osc.max_rpcs_in_flight            RPCs   8        1 .. 256
osc.max_dirty_mb                  MiB    2000     0 .. 2047, and at most RAM/4 (0 makes all writes sync)
osc.short_io_bytes                bytes  16384    0 (off) or 64 .. 1 MiB; the kernel may clamp it lower
osc.checksums                     bool   1        0 or 1
llite.max_read_ahead_mb           MiB    1024     0 .. RAM/2
llite.max_read_ahead_per_file_mb  MiB    256      0 .. max_read_ahead_mb
llite.max_read_ahead_whole_mb     MiB    4        0 .. max_read_ahead_per_file_mb
================================  =====  =======  ===========================================================

Defaults are those of a client with at least 32 GiB of RAM on an ldiskfs OST with 4 MiB
brw_size; the kernel derives the read-ahead defaults from RAM and brw_size.  ``max_dirty_mb``
was 32 on older (2.10) clients.

Some bounds belong to the device, not to the parameter: the server's ``brw_size``, the OST's
chunk (``grant_block_size``), the node's RAM, and the value of the parameter above in the
read-ahead chain.  They travel in a :class:`DeviceContext`.

Coupling: writing ``max_rpcs_in_flight`` or ``max_pages_per_rpc`` makes the kernel run
``client_adjust_max_dirty()``, which may *raise* ``max_dirty_mb`` to one full window of RPCs
(:func:`dirty_mb_after`).  The actuator therefore saves ``max_dirty_mb`` (:attr:`ParamRule.couples`)
before it writes either, and restores tunables before ``max_dirty_mb`` (:attr:`ParamRule.rank`).

Example:

>>> r = rule("osc", "max_rpcs_in_flight")
>>> r.bounds(DeviceContext())
(1, 256)
>>> r.validate(16, DeviceContext())
16
>>> r.validate(300, DeviceContext(), device="fs-OST0001-osc-ff")
Traceback (most recent call last):
...
pfstune.lustre.limits.LimitError: osc.fs-OST0001-osc-ff.max_rpcs_in_flight=300 is out of range 1..256 (OSC_MAX_RIF_MAX)
>>> rule("osc", "max_pages_per_rpc").validate("4M", DeviceContext(brw_pages=4096))
1024
>>> dirty_mb_after(max_rpcs_in_flight=64, max_pages_per_rpc=1024, max_dirty_mb=32, ram_bytes=None)
256
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pfstune.errors import PfstuneError, UserError

PAGE_SIZE = 4096
PAGES_PER_MIB = (1 << 20) // PAGE_SIZE
#: ``max_pages_per_rpc`` bound when the server's brw_size is unknown (4 MiB, ldiskfs default).
DEFAULT_BRW_PAGES = 1024
OSC_MAX_RIF_MAX = 256
#: ``max_dirty_mb`` must stay *below* this many MiB (``pages >= MiB_TO_PAGES(2048)`` is ERANGE).
OSC_MAX_DIRTY_MB_MAX = 2048
OSC_MAX_DIRTY_DEFAULT = 2000
#: ``short_io_bytes``: 0 disables; otherwise 64 .. LNET_MTU.
SHORT_IO_MIN = 64
LNET_MTU = 1 << 20
OBD_DEF_SHORT_IO_BYTES = 16384
#: Upper bound reported for a value that nothing but an unknown RAM size bounds.
UNBOUNDED = (1 << 63) - 1


class ActuatorError(PfstuneError, ValueError):
    """A write the actuator refused, or one the kernel refused or that did not stick.

    The agent catches it, logs it, and goes on with the next OSC: a bad suggestion must never
    stop the agent.  (A missing permission is *not* an ActuatorError: see
    :class:`pfstune.lustre.actuator.ActuatorPermissionError`.)
    """


class LimitError(ActuatorError, UserError):
    """A parameter that is not allow-listed, a device that is not a client's, or a value out of range.

    Also a :class:`~pfstune.errors.UserError`: when the value came from the command line, the
    one-line message (``osc.DEV.max_rpcs_in_flight=300 is out of range 1..256 ...``) is the
    whole report.
    """


@dataclass(frozen=True)
class DeviceContext:
    """What a device's bounds depend on besides the parameter itself.

    ``brw_pages``: the server's brw_size in pages (``import`` → ``connect_data.max_brw_size /
    4096``; :data:`DEFAULT_BRW_PAGES` when unknown).  ``chunk_pages``: the OST chunk in pages
    (``connect_data.grant_block_size / 4096``, 1 when unknown); the kernel rounds
    ``max_pages_per_rpc`` up to it.  ``ram_bytes``: the node's RAM, None when unknown (then the
    RAM-based bounds are not checked here and the kernel has the last word).  ``values``: the
    values the device's other parameters will have, for bounds set by another parameter
    (``max_read_ahead_per_file_mb <= max_read_ahead_mb``).
    """

    brw_pages: int = DEFAULT_BRW_PAGES
    chunk_pages: int = 1
    ram_bytes: int | None = None
    values: Mapping[str, int] = field(default_factory=dict)

    @property
    def ram_pages(self) -> int | None:
        """RAM in 4 KiB pages (the kernel's ``totalram_pages()``), or None."""
        return None if self.ram_bytes is None else self.ram_bytes // PAGE_SIZE


# ---- kernel-style parsers of a written string (lustre-client.md §3) -------------------------------

_MEMPARSE = re.compile(r"^\s*(\d+)\s*(?:([kKmMgGtTpPeE])(?:i?[bB])?|([bB]))?\s*$")
_SHIFT = {"k": 10, "m": 20, "g": 30, "t": 40, "p": 50, "e": 60}


def _memparse(text: str, default_shift: int) -> int:
    """``sysfs_memparse()``: a decimal number with an optional K/M/G/T/P/E[iB] or B suffix."""
    match = _MEMPARSE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (a number with an optional K, M, G suffix)")
    number, suffix, byte = match.groups()
    shift = 0 if byte else _SHIFT[suffix.lower()] if suffix else default_shift
    return int(number) << shift


def _kstrtouint(text: str, base: int) -> int:
    """``kstrtouint()``: base 0 takes ``0x`` hex and leading-0 octal; a trailing newline is allowed."""
    value = text.strip().removeprefix("+")
    if base == 0:
        if value[:2].lower() == "0x":
            value, base = value[2:], 16
        elif len(value) > 1 and value.startswith("0"):
            value, base = value[1:], 8
        else:
            base = 10
    if not value or any(c not in "0123456789abcdef"[:base] for c in value.lower()):
        raise ValueError(f"{text!r} is not an unsigned integer")
    return int(value, base)


def _kstrtobool(text: str) -> int:
    """``kstrtobool()``: y/Y/1, n/N/0, on/off (only the first characters count)."""
    value = text.strip()
    if value[:1] in ("y", "Y", "1"):
        return 1
    if value[:1] in ("n", "N", "0"):
        return 0
    if value[:1] in ("o", "O") and value[1:2] in ("n", "N"):
        return 1
    if value[:1] in ("o", "O") and value[1:2] in ("f", "F"):
        return 0
    raise ValueError(f"{text!r} is not a boolean (0/1, y/n, on/off)")


def _parse_mppr(text: str) -> int:
    # A bare number is pages; anything of at least 1 MiB is bytes (so "4M" = 1024 pages, but
    # "512K" = 524288 pages, which is out of range) -- the kernel's own rule.
    if len(text) > 21:
        raise ValueError(f"{text!r} is longer than the kernel's 21-character buffer")
    value = _memparse(text, 0)
    return value >> 12 if value >= 1 << 20 else value


def _parse_short_io(text: str) -> int:
    return OBD_DEF_SHORT_IO_BYTES if text.strip() == "-1" else _memparse(text, 0)


def _parse_mib(text: str) -> int:
    # sysfs_memparse(.., "MiB") then rounded up to whole MiB.
    return -(-_memparse(text, 20) // (1 << 20))


# ---- the rules ------------------------------------------------------------------------------------


def _static_bounds(rule: ParamRule, ctx: DeviceContext) -> tuple[int, int, str]:
    return rule.lo, rule.hi, rule.hi_reason


def _mppr_bounds(rule: ParamRule, ctx: DeviceContext) -> tuple[int, int, str]:
    return 1, ctx.brw_pages, f"server brw_size {ctx.brw_pages * PAGE_SIZE >> 10} KiB"


def _dirty_bounds(rule: ParamRule, ctx: DeviceContext) -> tuple[int, int, str]:
    ram_pages = ctx.ram_pages
    if ram_pages is not None and ram_pages // 4 // PAGES_PER_MIB < rule.hi:
        return 0, ram_pages // 4 // PAGES_PER_MIB, f"RAM/4 of {ctx.ram_bytes} bytes"
    return 0, rule.hi, rule.hi_reason


def _ra_bounds(rule: ParamRule, ctx: DeviceContext) -> tuple[int, int, str]:
    ram_pages = ctx.ram_pages
    if ram_pages is None:
        return 0, UNBOUNDED, "RAM unknown"
    return 0, ram_pages // 2 // PAGES_PER_MIB, f"RAM/2 of {ctx.ram_bytes} bytes"


def _chained_bounds(rule: ParamRule, ctx: DeviceContext) -> tuple[int, int, str]:
    assert rule.bound_by is not None
    above = ctx.values.get(rule.bound_by)
    if above is None:
        return 0, UNBOUNDED, f"{rule.bound_by} unknown"
    return 0, above, f"{rule.bound_by}={above}"


def _exact_readback(target: int, got: int, old: int) -> bool:
    return got == target


def _short_io_readback(target: int, got: int, old: int) -> bool:
    # The kernel silently clamps to OST_MAX_SHORT_IO_BYTES (what fits in an OST_IO request
    # buffer, a little under 64 KiB).  Accept a lower non-zero value -- but not the old one,
    # which is what a write that did not happen leaves behind.
    return got == target or (SHORT_IO_MIN <= got < target and got != old)


@dataclass(frozen=True)
class ParamRule:
    """One allow-listed parameter: where it is, what it may hold, and how the kernel treats a write.

    ``lo``/``hi`` are the kernel's constant limits; :meth:`bounds` narrows them with what the
    device says (:class:`DeviceContext`).  ``couples`` lists the parameters the kernel may
    change as a side effect of a write (they are saved before it and restored after it);
    ``bound_by`` names the parameter whose value is this one's upper bound; ``rank`` orders the
    writes of one device (lower first: tunables before the ``max_dirty_mb`` they may raise,
    read-ahead limits from the outermost in).
    """

    kind: str
    name: str
    default: int
    lo: int
    hi: int
    unit: str
    summary: str
    hi_reason: str = ""
    couples: tuple[str, ...] = ()
    bound_by: str | None = None
    rank: int = 0
    gap: tuple[int, int] | None = None  # values in [gap[0], gap[1]] are refused although inside lo..hi
    parse_text: Callable[[str], int] = field(default=lambda text: _kstrtouint(text, 10), repr=False, compare=False)
    range_of: Callable[[ParamRule, DeviceContext], tuple[int, int, str]] = field(
        default=_static_bounds, repr=False, compare=False
    )
    readback_ok: Callable[[int, int, int], bool] = field(default=_exact_readback, repr=False, compare=False)

    @property
    def lctl_pattern(self) -> str:
        """The lctl name with a wildcard device: ``osc.*.max_rpcs_in_flight``."""
        return f"{self.kind}.*.{self.name}"

    def bounds(self, ctx: DeviceContext) -> tuple[int, int]:
        """The inclusive range on a device described by ``ctx`` (see also :attr:`gap`)."""
        lo, hi, _ = self.range_of(self, ctx)
        return lo, hi

    def normalise(self, value: int | str, ctx: DeviceContext, device: str = "*") -> int:
        """The integer the kernel would store for ``value`` (before the range check).

        An int is taken as it is, in the parameter's unit (pages, MiB, bytes): that is what the
        agent writes.  A string is parsed the way the kernel parses it (suffixes, ``0x``, y/n),
        so a value typed by a person means what ``lctl set_param`` would make of it.
        ``max_pages_per_rpc`` is rounded up to the OST chunk, as the kernel does.
        """
        if isinstance(value, bool):
            number = int(value)
        elif isinstance(value, int):
            number = value
        elif isinstance(value, str):
            try:
                number = self.parse_text(value)
            except ValueError as err:
                raise LimitError(f"{self.kind}.{device}.{self.name}={value}: {err}") from None
        else:
            raise LimitError(f"{self.kind}.{device}.{self.name}={value!r}: expected an integer")
        if self.name == "max_pages_per_rpc" and ctx.chunk_pages > 1 and number > 0:
            chunk = ctx.chunk_pages
            number = -(-number // chunk) * chunk
        return number

    def validate(self, value: int | str, ctx: DeviceContext, device: str = "*") -> int:
        """``value`` normalised (:meth:`normalise`) if the kernel would accept it; else :class:`LimitError`."""
        number = self.normalise(value, ctx, device)
        lo, hi, why = self.range_of(self, ctx)
        in_gap = self.gap is not None and self.gap[0] <= number <= self.gap[1]
        if lo <= number <= hi and not in_gap:
            return number
        shown = f"{value}" if str(value) == str(number) else f"{value} ({number} {self.unit})"
        if self.gap is not None:
            allowed = f"{lo} or {self.gap[1] + 1}..{hi}"
        else:
            allowed = f"{lo}.." if hi == UNBOUNDED else f"{lo}..{hi}"
        reason = f" ({why})" if why else ""
        raise LimitError(f"{self.kind}.{device}.{self.name}={shown} is out of range {allowed}{reason}")


_RULES: tuple[ParamRule, ...] = (
    ParamRule(
        "osc", "max_pages_per_rpc", 1024, 1, 16384, "pages",
        "largest RPC, in 4 KiB pages; bounded by the server's brw_size",
        couples=("max_dirty_mb",), parse_text=_parse_mppr, range_of=_mppr_bounds,
    ),
    ParamRule(
        "osc", "max_rpcs_in_flight", 8, 1, OSC_MAX_RIF_MAX, "RPCs",
        "RPCs in flight per OSC (reads and writes together)",
        hi_reason="OSC_MAX_RIF_MAX", couples=("max_dirty_mb",), parse_text=lambda text: _kstrtouint(text, 0),
    ),
    ParamRule(
        "osc", "max_dirty_mb", OSC_MAX_DIRTY_DEFAULT, 0, OSC_MAX_DIRTY_MB_MAX - 1, "MiB",
        "dirty page cache per OSC; 0 makes every write synchronous",
        hi_reason="OSC_MAX_DIRTY_MB_MAX", rank=1, parse_text=lambda text: _kstrtouint(text, 10),
        range_of=_dirty_bounds,
    ),
    ParamRule(
        "osc", "short_io_bytes", OBD_DEF_SHORT_IO_BYTES, 0, LNET_MTU, "bytes",
        "I/O up to this size is inlined in the request (no bulk); 0 disables",
        hi_reason="LNET_MTU", gap=(1, SHORT_IO_MIN - 1), parse_text=_parse_short_io, readback_ok=_short_io_readback,
    ),
    ParamRule(
        "osc", "checksums", 1, 0, 1, "bool", "checksum bulk data", hi_reason="boolean", parse_text=_kstrtobool,
    ),
    ParamRule(
        "llite", "max_read_ahead_mb", 1024, 0, UNBOUNDED, "MiB",
        "read-ahead budget of the whole mount", parse_text=_parse_mib, range_of=_ra_bounds,
    ),
    ParamRule(
        "llite", "max_read_ahead_per_file_mb", 256, 0, UNBOUNDED, "MiB",
        "read-ahead window of one file", bound_by="max_read_ahead_mb", rank=1, parse_text=_parse_mib,
        range_of=_chained_bounds,
    ),
    ParamRule(
        "llite", "max_read_ahead_whole_mb", 4, 0, UNBOUNDED, "MiB",
        "files up to this size are read ahead whole", bound_by="max_read_ahead_per_file_mb", rank=2,
        parse_text=_parse_mib, range_of=_chained_bounds,
    ),
)  # fmt: skip

#: Every writable parameter, by (kind, name).
ALLOWED: Mapping[tuple[str, str], ParamRule] = {(r.kind, r.name): r for r in _RULES}

#: The device kinds the actuator writes.
KINDS: tuple[str, ...] = ("osc", "llite")


def rules(kind: str | None = None) -> list[ParamRule]:
    """The allow-listed rules, of one kind or all, in table order."""
    return [r for r in _RULES if kind is None or r.kind == kind]


def rule(kind: str, name: str) -> ParamRule:
    """The rule of ``kind.*.name``; :class:`LimitError` naming the allowed ones if it is not allow-listed."""
    found = ALLOWED.get((kind, name))
    if found is not None:
        return found
    if kind not in KINDS:
        raise LimitError(f"{kind}.*.{name}: pfstune writes only {' and '.join(KINDS)} parameters")
    allowed = ", ".join(r.name for r in rules(kind))
    raise LimitError(f"{kind}.*.{name} is not a parameter pfstune may write; allowed {kind} parameters: {allowed}")


def write_order(kind: str, names: Iterable[str]) -> list[str]:
    """The order in which to write (or restore) ``names`` of one device.

    Tunables come before ``max_dirty_mb``, so an explicit ``max_dirty_mb`` (or its original) is
    written after the kernel's coupling has raised it.  Read-ahead limits go outermost first:
    the kernel checks ``per_file <= max_read_ahead_mb`` against the value in force, so the outer
    one must already hold its final value when the inner one is written.
    """
    return sorted(names, key=lambda name: (ALLOWED[(kind, name)].rank if (kind, name) in ALLOWED else 99, name))


def dirty_mb_after(max_rpcs_in_flight: int, max_pages_per_rpc: int, max_dirty_mb: int, ram_bytes: int | None) -> int:
    """``max_dirty_mb`` after the kernel's ``client_adjust_max_dirty()`` (run on every rif/mppr write).

    It raises the dirty limit to one full window of RPCs (``rif * mppr`` pages) when that is
    larger, treats 0 as unset (back to 2000 MiB), caps the result at RAM/8 and rounds it up to
    whole MiB.  Only the RAM/8 cap can lower it (a value the admin set between RAM/8 and RAM/4).

    >>> dirty_mb_after(8, 1024, 2000, ram_bytes=128 << 30)
    2000
    >>> dirty_mb_after(8, 1024, 2000, ram_bytes=8 << 30)  # capped at RAM/8
    1024
    """
    window = max_rpcs_in_flight * max_pages_per_rpc
    pages = max(max_dirty_mb * PAGES_PER_MIB, window) if max_dirty_mb > 0 else OSC_MAX_DIRTY_DEFAULT * PAGES_PER_MIB
    if ram_bytes is not None:
        pages = min(pages, ram_bytes // PAGE_SIZE // 8)
    return -(-pages // PAGES_PER_MIB)
