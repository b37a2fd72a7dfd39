"""The rpc_stats fast path declines a histogram row it cannot read whole, leaving it to the line reader."""

from __future__ import annotations

from typing import Any

import pytest

from pfstune.lustre import parse
from pfstune.lustre.parse import parse_rpc_stats
from tests.lustre.test_parse import OST0, read


def _line_reader(text: str) -> tuple[Any, list[str]]:
    saved = parse._rpc_stats_fast
    parse._rpc_stats_fast = lambda _text: None
    try:
        problems: list[str] = []
        return parse_rpc_stats(text, problems), problems
    finally:
        parse._rpc_stats_fast = saved


@pytest.mark.parametrize(
    ("row", "garbled"),
    [
        ("|       1489   0   0", "|  1489|1489   0   0"),  # a "|" inside a count once raised ValueError
        ("|       1489   0   0", "|       1489   0  :0"),  # a ":" inside a number once kept the row
        ("|       1489   0   0", "|       1489   0   0"),  # unchanged: the fast path reads it
    ],
)
def test_garbled_rows_get_the_line_readers_answer(row: str, garbled: str) -> None:
    text = read(OST0 / "rpc_stats")
    assert row in text
    damaged = text.replace(row, garbled, 1)
    problems: list[str] = []
    assert (parse_rpc_stats(damaged, problems), problems) == _line_reader(damaged)
    if row == garbled:
        assert parse._rpc_stats_fast(damaged) is not None
        assert problems == []
    else:
        assert parse._rpc_stats_fast(damaged) is None
        assert problems  # the line reader says what it skipped
