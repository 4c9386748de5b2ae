"""Feedback calibration: the spec's mean-difference rule (pure, no database)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.domain.calibration import (
    MIN_SAMPLES_PER_CLASS,
    Calibration,
    FeedbackSample,
    calibrate,
)
from retrieval.domain.ranking import DEFAULT_WEIGHTS, SIGNALS, Signals


def _sample(*, helpful: bool, **signals: float) -> FeedbackSample:
    """A sample whose signals are all 0.5 except those given."""
    return FeedbackSample(Signals(**{**dict.fromkeys(SIGNALS, 0.5), **signals}), helpful)


def _feedback(
    helpful: dict[str, float], unhelpful: dict[str, float], *, n: int = MIN_SAMPLES_PER_CLASS
) -> list[FeedbackSample]:
    return [_sample(helpful=True, **helpful)] * n + [_sample(helpful=False, **unhelpful)] * n


def _calibrated(samples: list[FeedbackSample], **options: object) -> Calibration:
    result = calibrate(samples, **options)  # type: ignore[arg-type]
    assert result is not None
    return result


def test_all_weight_on_authority_when_only_authority_separates() -> None:
    result = _calibrated(_feedback({"authority": 0.9}, {"authority": 0.5}))
    assert result.weights.as_dict() == {name: float(name == "authority") for name in SIGNALS}
    assert result.separations["authority"] == pytest.approx(0.4)
    assert all(result.separations[name] == 0.0 for name in SIGNALS if name != "authority")


def test_weights_proportional_to_separation_when_two_signals_separate() -> None:
    result = _calibrated(
        _feedback({"authority": 0.7, "confidence": 0.6}, {"authority": 0.5, "confidence": 0.5})
    )
    assert result.weights.authority == pytest.approx(2 / 3)
    assert result.weights.confidence == pytest.approx(1 / 3)


def test_negative_separation_earns_nothing_when_signal_favours_unhelpful() -> None:
    result = _calibrated(
        _feedback({"authority": 0.7, "recency": 0.2}, {"authority": 0.5, "recency": 0.5})
    )
    assert result.weights.recency == 0.0
    assert result.weights.authority == 1.0
    assert result.separations["recency"] == pytest.approx(-0.3)


def test_means_compared_when_samples_vary_within_a_class() -> None:
    samples = [
        _sample(helpful=True, relevance=0.9),
        _sample(helpful=True, relevance=0.7),
        _sample(helpful=False, relevance=0.6),
        _sample(helpful=False, relevance=0.2),
    ]
    result = _calibrated(samples, min_samples_per_class=2)
    assert result.separations["relevance"] == pytest.approx(0.8 - 0.4)
    assert result.weights.relevance == 1.0


def test_none_when_helpful_class_below_minimum() -> None:
    samples = _feedback({"authority": 0.9}, {"authority": 0.5})
    assert calibrate(samples[1:]) is None


def test_none_when_unhelpful_class_below_minimum() -> None:
    samples = _feedback({"authority": 0.9}, {"authority": 0.5}, n=5)
    assert calibrate(samples[:-1], min_samples_per_class=5) is None


def test_none_when_no_signal_separates() -> None:
    assert calibrate(_feedback({"authority": 0.4}, {"authority": 0.6})) is None


def test_none_when_only_rounding_separates_classes_of_different_sizes() -> None:
    # mean of three 0.1s is 0.10000000000000002, of five is 0.1: rounding, not evidence
    samples = [FeedbackSample(Signals(*[0.1] * 6), helpful=True)] * 3
    samples += [FeedbackSample(Signals(*[0.1] * 6), helpful=False)] * 5
    assert calibrate(samples, min_samples_per_class=3) is None


def test_counts_reported_when_calibrated() -> None:
    samples = _feedback({"authority": 0.9}, {"authority": 0.5})
    samples += [_sample(helpful=False, authority=0.5)] * 4
    result = _calibrated(samples)
    assert (result.helpful, result.unhelpful) == (MIN_SAMPLES_PER_CLASS, MIN_SAMPLES_PER_CLASS + 4)


def test_moves_part_way_from_previous_when_learning_rate_below_one() -> None:
    samples = _feedback({"authority": 0.9}, {"authority": 0.5})
    result = _calibrated(samples, previous=DEFAULT_WEIGHTS, learning_rate=0.5)
    assert result.weights.authority == pytest.approx(0.5 * 0.18 + 0.5 * 1.0)
    assert result.weights.relevance == pytest.approx(0.5 * 0.40)
    assert math.fsum(result.weights.as_dict().values()) == pytest.approx(1.0)


def test_previous_ignored_when_learning_rate_is_one() -> None:
    samples = _feedback({"authority": 0.9}, {"authority": 0.5})
    result = _calibrated(samples, previous=DEFAULT_WEIGHTS, learning_rate=1.0)
    assert result.weights.authority == 1.0


@pytest.mark.parametrize("rate", [0.0, -0.5, 1.5, math.nan])
def test_rejects_learning_rate_when_outside_zero_to_one(rate: float) -> None:
    with pytest.raises(ValueError, match="learning_rate"):
        calibrate([], learning_rate=rate)


def test_rejects_minimum_when_below_one() -> None:
    with pytest.raises(ValueError, match="min_samples_per_class"):
        calibrate([], min_samples_per_class=0)


_unit = st.floats(min_value=0.0, max_value=1.0)
_samples = st.lists(
    st.builds(
        FeedbackSample,
        signals=st.builds(Signals, **dict.fromkeys(SIGNALS, _unit)),
        helpful=st.booleans(),
    ),
    max_size=20,
)


@given(_samples)
def test_weights_follow_positive_separations_when_given_any_feedback(
    samples: list[FeedbackSample],
) -> None:
    result = calibrate(samples, min_samples_per_class=1)
    if result is None:
        return
    weights = result.weights.as_dict()
    assert math.fsum(weights.values()) == pytest.approx(1.0)
    assert all(weights[name] == 0.0 for name, sep in result.separations.items() if sep <= 0)
    positive = {name: sep for name, sep in result.separations.items() if weights[name] > 0}
    total = math.fsum(positive.values())
    assert all(weights[name] == pytest.approx(sep / total) for name, sep in positive.items())
