from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pfstune.errors import UnitError, UserError
from pfstune.units import parse_duration, parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8k", 8192),
        ("1m", 1 << 20),
        ("16m", 16 << 20),
        ("5g", 5 << 30),
        ("1t", 1 << 40),
        ("4KiB", 4096),
        ("1MiB", 1 << 20),
        ("1GiB", 1 << 30),
        ("512", 512),
        ("512b", 512),
        ("1.5g", 1610612736),
        ("16M", 16 << 20),
        (" 4 k ", 4096),
        (4096, 4096),
        (0, 0),
    ],
)
def test_sizes_are_binary(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["5x", "1MB", "1kb", "-1k", "k", "", "0.3k", "1.5", "1e3", True, None, [1], 1.5, -4])
def test_bad_sizes_name_the_value(text: object) -> None:
    with pytest.raises(UnitError) as err:
        parse_size(text)
    assert repr(text) in str(err.value)


def test_sizes_and_durations_stop_where_pfsim_s_64_bit_arithmetic_would_wrap() -> None:
    assert parse_size("1024p") == 1 << 60
    assert parse_duration("1000h") == 1000 * 3600 * 10**9
    with pytest.raises(UnitError, match=r"'1025p' is larger than any size pfstune handles \(1 EiB\)"):
        parse_size("1025p")
    with pytest.raises(UnitError, match=r"'1001h' is longer than any duration pfstune handles \(1000h\)"):
        parse_duration("1001h")


def test_unit_errors_are_user_errors() -> None:
    assert issubclass(UnitError, UserError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("320s", 320 * 10**9),
        ("500ms", 500 * 10**6),
        ("2min", 120 * 10**9),
        ("1h", 3600 * 10**9),
        ("0.5s", 5 * 10**8),
        ("25us", 25_000),
        ("25µs", 25_000),
        ("100ns", 100),
    ],
)
def test_durations_in_nanoseconds(text: str, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["320", 320, "5m", "1d", "s", "1.5ns", "-1s", "fast"])
def test_bad_durations_name_the_value(text: object) -> None:
    with pytest.raises(UnitError) as err:
        parse_duration(text)
    assert repr(text) in str(err.value)


def test_duration_without_unit_suggests_one() -> None:
    with pytest.raises(UnitError, match="'320s'"):
        parse_duration("320")
    with pytest.raises(UnitError, match="'500ms'"):  # not '0s', which no positive duration takes
        parse_duration("0")
    with pytest.raises(UnitError, match="must not be negative"):
        parse_duration("-1s")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", 500e6),
        ("2800m", 2.8e9),
        ("2.8g", 2.8e9),
        ("500MB/s", 500e6),
        ("500M", 500e6),
        ("1GB", 1e9),
        ("10k/s", 1e4),
        ("1MiB/s", 1048576.0),
        ("100", 100.0),
        (2.5e9, 2.5e9),
    ],
)
def test_rates_are_decimal(text: object, expected: float) -> None:
    assert parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["25Gb/s", "1mb", "5x", "fast", "-1m", "1MiB/h"])
def test_bad_rates_name_the_value(text: str) -> None:
    with pytest.raises(UnitError) as err:
        parse_rate(text)
    assert repr(text) in str(err.value)


def test_rate_in_bits_is_refused_with_a_hint() -> None:
    with pytest.raises(UnitError, match="bits"):
        parse_rate("25Gb/s")


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["k", "m", "g", "t"]))
def test_size_prefixes_are_powers_of_1024(n: int, prefix: str) -> None:
    power = "kmgt".index(prefix) + 1
    assert parse_size(f"{n}{prefix}") == n * 1024**power
    assert parse_size(f"{n}{prefix.upper()}iB") == n * 1024**power


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["k", "m", "g", "t"]))
def test_rate_prefixes_are_powers_of_1000(n: int, prefix: str) -> None:
    assert parse_rate(f"{n}{prefix}") == n * 1000 ** ("kmgt".index(prefix) + 1)


@given(st.integers(min_value=0, max_value=10**9))
def test_milliseconds_round_trip(n: int) -> None:
    assert parse_duration(f"{n}ms") == n * 10**6
