"""The latency bench's nearest-rank percentile (pure: no database)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.search_latency import nearest_rank

SAMPLES = [15.0, 20.0, 35.0, 40.0, 50.0]


@pytest.mark.parametrize(
    ("percent", "expected"), [(5, 15.0), (30, 20.0), (40, 20.0), (50, 35.0), (100, 50.0)]
)
def test_nearest_rank_is_the_smallest_sample_covering_the_percent(
    percent: float, expected: float
) -> None:
    assert nearest_rank(SAMPLES, percent) == expected


def test_nearest_rank_ignores_the_order_of_the_samples() -> None:
    assert nearest_rank(list(reversed(SAMPLES)), 50) == 35.0


def test_nearest_rank_of_one_sample_is_that_sample_when_any_percent_is_asked() -> None:
    assert nearest_rank([7.5], 1) == nearest_rank([7.5], 99) == 7.5


def test_nearest_rank_refuses_when_there_are_no_samples() -> None:
    with pytest.raises(ValueError, match="no samples"):
        nearest_rank([], 50)


@pytest.mark.parametrize("percent", [0, -1, 100.1])
def test_nearest_rank_refuses_when_the_percent_is_out_of_range(percent: float) -> None:
    with pytest.raises(ValueError, match="percent"):
        nearest_rank(SAMPLES, percent)


SAMPLE_LISTS = st.lists(st.floats(0, 1e6), min_size=1, max_size=200)
PERCENTS = st.floats(0.1, 100)


@given(SAMPLE_LISTS, PERCENTS)
def test_nearest_rank_is_a_sample_covering_the_percent_when_sampled(
    samples: list[float], percent: float
) -> None:
    value = nearest_rank(samples, percent)
    covered = sum(1 for sample in samples if sample <= value)
    assert value in samples
    assert covered * 100 >= percent * len(samples) - 1e-9


@given(SAMPLE_LISTS, PERCENTS, PERCENTS)
def test_nearest_rank_never_falls_when_the_percent_grows(
    samples: list[float], one: float, other: float
) -> None:
    low, high = sorted((one, other))
    assert nearest_rank(samples, low) <= nearest_rank(samples, high)
