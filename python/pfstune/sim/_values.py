"""Converters that check one value of a scenario or preset field and return it converted.

Each raises :class:`~pfstune.errors.UserError` with a message about the value only; the caller
adds where it was (file and key path).

>>> from pfstune.units import parse_size
>>> integer(1)(5), positive(parse_size)("1m"), choice("OST kind", "ssd", "hdd")("SSD")
(5, 1048576, 'ssd')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pfstune.errors import UserError

__all__ = ["MAX_COUNT", "boolean", "bounded", "choice", "integer", "positive", "text"]

_Number = TypeVar("_Number", int, float)


# The largest count (threads, processes, clients, ...) a scenario may give: pfsim keeps counts
# in 32-bit integers, and no simulation this size would fit in memory anyway.
MAX_COUNT = 2**31 - 1


def integer(low: int, high: int = MAX_COUNT) -> Callable[[object], int]:
    """An integer (not a bool) from ``low`` to ``high``."""

    def convert(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"expected an integer, not {value!r}")
        if not low <= value <= high:
            raise UserError(f"{value} is out of range (expected from {low} to {high})")
        return value

    return convert


def bounded(
    parse: Callable[[object], _Number], shown: str, low: _Number | None = None, high: _Number | None = None
) -> Callable[[object], _Number]:
    """What ``parse`` returns, refused below ``low`` or above ``high`` (``shown``: that bound as the
    user writes it)."""

    def convert(value: object) -> _Number:
        result = parse(value)
        if low is not None and result < low:
            raise UserError(f"{value!r} is below the smallest this field takes, {shown}")
        if high is not None and result > high:
            raise UserError(f"{value!r} is above the largest this field takes, {shown}")
        return result

    return convert


def positive(parse: Callable[[object], _Number]) -> Callable[[object], _Number]:
    """What ``parse`` returns (a size, rate or duration), refused when zero."""

    def convert(value: object) -> _Number:
        result = parse(value)
        if result <= 0:
            raise UserError(f"{value!r} must be larger than zero")
        return result

    return convert


def choice(what: str, *options: str) -> Callable[[object], str]:
    """One of ``options``, in any letter case (IOR's ``-a POSIX``, h5bench's ``"READ_OPTION": "FULL"``);
    returned as spelled in ``options``.  ``what`` names the kind of value in the error."""
    canonical = {option.lower(): option for option in options}

    def convert(value: object) -> str:
        found = canonical.get(value.lower()) if isinstance(value, str) else None
        if found is None:
            raise UserError(f"{value!r} is not a valid {what} ({' or '.join(options)})")
        return found

    return convert


def boolean(value: object) -> bool:
    """``true`` or ``false`` (YAML booleans only; ``1`` or ``"yes please"`` are refused)."""
    if not isinstance(value, bool):
        raise UserError(f"expected true or false, not {value!r}")
    return value


def text(value: object) -> str:
    """A non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"expected a non-empty string, not {value!r}")
    return value
