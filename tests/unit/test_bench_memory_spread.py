"""The memory bench's interval and its table per conversation (pure: no database)."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest

from bench.memory import SPREAD_COLUMN, Scores, interval, spread


def _scores(rows: list[tuple[int, float]]) -> Scores:
    scores = Scores(defaultdict(list), defaultdict(list))
    scores.recall[SPREAD_COLUMN] += rows
    return scores


def test_the_interval_is_1_96_standard_errors_of_the_mean() -> None:
    mean, half = interval([0.0, 1.0, 1.0, 0.0])
    # sample standard deviation sqrt(1/3), over sqrt(4)
    assert mean == 0.5
    assert half == pytest.approx(1.96 * math.sqrt(1 / 3) / 2)


def test_one_value_or_equal_values_have_no_width() -> None:
    assert interval([0.7]) == (0.7, 0.0)
    assert interval([0.4, 0.4, 0.4]) == pytest.approx((0.4, 0.0))


def test_the_table_shows_each_conversation_then_all_of_them_with_the_interval() -> None:
    parts = [("conv-a", _scores([(1, 1.0), (2, 0.5)])), ("conv-b", _scores([(1, 0.0)]))]
    lines = spread(parts).splitlines()
    multi = next(line for line in lines if line.startswith("multi-hop"))
    temporal = next(line for line in lines if line.startswith("temporal"))
    overall = next(line for line in lines if line.startswith("overall"))
    mean, half = interval([1.0, 0.0])
    assert multi.split() == ["multi-hop", "1.000", "0.000", f"{mean:.3f}", "±", f"{half:.3f}"]
    # a conversation without questions of a category shows none
    assert temporal.split() == ["temporal", "0.500", "-", "0.500", "±", "0.000"]
    assert overall.split()[1:3] == ["0.750", "0.000"]
    assert "conv-a" in lines[1]
    assert "conv-b" in lines[1]
