"""Access-pattern detection from interval statistics (the bandit's and bayesopt's context)."""

from __future__ import annotations

import math

import pytest

from pfstune.tuners._pattern import access_pattern, size_class


def row(op: str, rpc_bytes: float, rpcs: float, request: float | None, mppr: int = 1024) -> dict[str, float]:
    other = "read" if op == "write" else "write"
    out = {
        f"ost_{op}_rpc_bytes_data.samples_sum": rpc_bytes * rpcs,
        f"ost_{op}_rpc_bytes_data.no_of_samples": rpcs,
        f"ost_{other}_rpc_bytes_data.samples_sum": 0.0,
        f"ost_{other}_rpc_bytes_data.no_of_samples": 0.0,
        "osc_rpc_configuration_current.mppr_value": float(mppr),
    }
    if request is not None:
        out[f"llite_stats_{op}_bytes.samples_sum"] = rpc_bytes * rpcs
        out[f"llite_stats_{op}_bytes.no_of_samples"] = rpc_bytes * rpcs / request
    return out


def test_merged_small_writes_are_sequential_and_unmerged_ones_random() -> None:
    assert access_pattern(row("write", 4 << 20, 10, 8192)) == "write/seq/small"
    assert access_pattern(row("write", 8192, 500, 8192)) == "write/rand/small"


def test_read_ahead_merging_and_request_size_classes() -> None:
    assert access_pattern(row("read", 1 << 20, 50, 128 * 1024)) == "read/seq/medium"
    assert access_pattern(row("read", 128 * 1024, 50, 128 * 1024)) == "read/rand/medium"
    assert access_pattern(row("read", 4 << 20, 50, 16 << 20)).endswith("/large")  # type: ignore[union-attr]


def test_requests_as_large_as_an_rpc_keep_the_last_detected_spatiality() -> None:
    # 1 MiB requests with 1 MiB RPCs (256 pages): full RPCs either way, nothing to tell.
    undecided = row("write", 1 << 20, 100, 1 << 20, mppr=256)
    assert access_pattern(undecided) == "write/seq/large"
    assert access_pattern(undecided, last_spatiality="rand") == "write/rand/large"


def test_idle_intervals_have_no_pattern_and_missing_llite_gives_the_operation_alone() -> None:
    assert access_pattern({}) is None
    assert access_pattern(row("read", 0, 0, None)) is None
    # without llite's request sizes only the operation is known: the RPC size would stand in,
    # but the configuration under test decides it, so the context would move with the arm
    assert access_pattern(row("read", 8192, 100, None)) == "read/unknown/unknown"
    assert access_pattern(row("read", 1 << 20, 100, None)) == "read/unknown/unknown"
    # and "unknown" is not kept as a spatiality to fall back on
    assert access_pattern(row("read", 1 << 20, 10, 1 << 20, mppr=256), last_spatiality="unknown") == "read/seq/large"


@pytest.mark.parametrize(
    ("size", "label"),
    [(8192, "small"), (64 * 1024 - 1, "small"), (64 * 1024, "medium"), ((1 << 20) - 1, "medium"), (1 << 20, "large")],
)
def test_size_classes(size: float, label: str) -> None:
    assert size_class(size) == label


def test_unknown_size() -> None:
    assert size_class(math.nan) == "unknown"
