"""Feedback calibration: the spec's mean-difference rule (pure, no database)."""

from __future__ import annotations

import dataclasses
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
from retrieval.domain.ranking import (
    DEFAULT_WEIGHTS,
    MAX_UNDERSTOOD,
    SIGNALS,
    Signals,
    Weights,
)


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
    separations = {name: result.separations[name] for name in SIGNALS}  # not "understood"
    assert all(weights[name] == 0.0 for name, sep in separations.items() if sep <= 0)
    positive = {name: sep for name, sep in separations.items() if weights[name] > 0}
    total = math.fsum(positive.values())
    assert all(weights[name] == pytest.approx(sep / total) for name, sep in positive.items())


# --- properties of the rule over generated signal vectors -----------------------------------

_vector = st.builds(Signals, **dict.fromkeys(SIGNALS, _unit))
_rate = st.floats(min_value=0.01, max_value=0.99)
_previous = (
    st.lists(_unit, min_size=len(SIGNALS), max_size=len(SIGNALS))
    .filter(any)
    .map(lambda values: Weights.from_mapping(dict(zip(SIGNALS, values, strict=True))))
)


def _class(
    vectors: list[Signals], name: str, values: list[float], *, helpful: bool
) -> list[FeedbackSample]:
    """One class of samples: each vector with signal `name` replaced by its value."""
    return [
        FeedbackSample(dataclasses.replace(vector, **{name: value}), helpful)
        for vector, value in zip(vectors, values, strict=True)
    ]


@st.composite
def _separating(draw: st.DrawFn, *, others_equal: bool = False) -> tuple[str, list[FeedbackSample]]:
    """A signal above 0.6 on every helpful hit and below 0.4 on every unhelpful one; the
    other signals arbitrary, or (`others_equal`) the same vectors in both classes."""
    name = draw(st.sampled_from(SIGNALS))
    helpful = draw(st.lists(_vector, min_size=1, max_size=12))
    unhelpful = helpful if others_equal else draw(st.lists(_vector, min_size=1, max_size=12))
    high = draw(st.lists(st.floats(0.6, 1.0), min_size=len(helpful), max_size=len(helpful)))
    low = draw(st.lists(st.floats(0.0, 0.4), min_size=len(unhelpful), max_size=len(unhelpful)))
    samples = _class(helpful, name, high, helpful=True)
    return name, samples + _class(unhelpful, name, low, helpful=False)


@given(_separating())
def test_separating_signal_gains_weight_when_helpful_hits_score_higher_on_it(
    case: tuple[str, list[FeedbackSample]],
) -> None:
    name, samples = case
    result = calibrate(samples, min_samples_per_class=1)
    assert result is not None
    assert result.separations[name] >= 0.2
    assert getattr(result.weights, name) > 0.0


@given(_separating(others_equal=True), _previous, _rate)
def test_separating_signal_gains_on_previous_weights_when_learning_rate_below_one(
    case: tuple[str, list[FeedbackSample]], previous: Weights, rate: float
) -> None:
    name, samples = case
    result = calibrate(samples, min_samples_per_class=1, previous=previous, learning_rate=rate)
    assert result is not None
    # Only `name` separates, so the derived weights are all on it and the blend moves
    # `rate` of the way there: it gains, every other signal gives up the same share.
    old, new = previous.as_dict(), result.weights.as_dict()
    assert new[name] == pytest.approx(old[name] + rate * (1 - old[name]))
    assert new[name] >= old[name]
    assert all(new[n] == pytest.approx((1 - rate) * old[n]) for n in SIGNALS if n != name)


@st.composite
def _flat_and_separating(
    draw: st.DrawFn, *, helpful_lower: bool
) -> tuple[str, str, list[FeedbackSample]]:
    """Signal `flat` does not separate: its helpful values are the unhelpful ones shuffled
    (identically distributed) or (`helpful_lower`) each lowered; `other` separates, so
    the rule has something to weigh and must still give `flat` nothing."""
    flat, other = draw(st.lists(st.sampled_from(SIGNALS), min_size=2, max_size=2, unique=True))
    unhelpful_flat = draw(st.lists(_unit, min_size=1, max_size=12))
    n = len(unhelpful_flat)
    if helpful_lower:
        cuts = draw(st.lists(_unit, min_size=n, max_size=n))
        helpful_flat = [
            max(0.0, value - cut) for value, cut in zip(unhelpful_flat, cuts, strict=True)
        ]
    else:
        helpful_flat = draw(st.permutations(unhelpful_flat))
    vectors = draw(st.lists(_vector, min_size=2 * n, max_size=2 * n))
    helpful = _class(vectors[:n], flat, helpful_flat, helpful=True)
    unhelpful = _class(vectors[n:], flat, unhelpful_flat, helpful=False)
    samples = [
        FeedbackSample(
            dataclasses.replace(s.signals, **{other: 0.9 if s.helpful else 0.1}), s.helpful
        )
        for s in helpful + unhelpful
    ]
    return flat, other, samples


@given(_flat_and_separating(helpful_lower=False))
def test_signal_gets_no_weight_when_identically_distributed_across_classes(
    case: tuple[str, str, list[FeedbackSample]],
) -> None:
    flat, other, samples = case
    result = calibrate(samples, min_samples_per_class=1)
    assert result is not None
    assert result.separations[flat] == 0.0
    assert getattr(result.weights, flat) == 0.0
    assert getattr(result.weights, other) > 0.0


@given(_flat_and_separating(helpful_lower=True))
def test_signal_gets_no_weight_when_never_higher_on_helpful_hits(
    case: tuple[str, str, list[FeedbackSample]],
) -> None:
    flat, other, samples = case
    result = calibrate(samples, min_samples_per_class=1)
    assert result is not None
    assert result.separations[flat] <= 0.0
    assert getattr(result.weights, flat) == 0.0
    assert getattr(result.weights, other) > 0.0


@given(_separating(), st.integers(1, 40), st.sampled_from([None, True, False]), _rate)
def test_nothing_changes_when_either_class_is_below_the_minimum(
    case: tuple[str, list[FeedbackSample]], shortfall: int, emptied: bool | None, rate: float
) -> None:
    _, samples = case
    if emptied is not None:  # the extreme case: no votes at all of one kind
        samples = [s for s in samples if s.helpful != emptied]
    smaller = min(sum(s.helpful for s in samples), sum(not s.helpful for s in samples))
    # Even a signal that separates perfectly moves nothing while the guard holds.
    result = calibrate(
        samples,
        min_samples_per_class=smaller + shortfall,
        previous=DEFAULT_WEIGHTS,
        learning_rate=rate,
    )
    assert result is None


def _understood(
    helpful: float, unhelpful: float, n: int = MIN_SAMPLES_PER_CLASS
) -> list[FeedbackSample]:
    """Samples where a share of each class came from the understood list."""
    base = dict.fromkeys(SIGNALS, 0.5) | {"authority": 0.9}
    worse = dict.fromkeys(SIGNALS, 0.5)
    out = []
    for i in range(n):
        out.append(FeedbackSample(Signals(**base), True, float(i < helpful * n)))
        out.append(FeedbackSample(Signals(**worse), False, float(i < unhelpful * n)))
    return out


def test_the_understood_weight_rises_when_helpful_hits_came_from_the_understood_list() -> None:
    result = _calibrated(_understood(0.8, 0.2), previous_understood=2.0)
    assert result.separations["understood"] == pytest.approx(0.6)
    assert result.understood == pytest.approx(3.2)


def test_the_understood_weight_falls_when_unhelpful_hits_came_from_the_understood_list() -> None:
    result = _calibrated(_understood(0.1, 0.6), previous_understood=2.0, learning_rate=0.5)
    # derived 2.0 * (1 - 0.5) = 1.0, half way from 2.0
    assert result.understood == pytest.approx(1.5)


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 4.0))
def test_the_understood_weight_stays_within_its_bounds_for_any_votes(
    helpful: float, unhelpful: float, previous: float
) -> None:
    result = _calibrated(_understood(helpful, unhelpful), previous_understood=previous)
    assert 0.0 <= result.understood <= MAX_UNDERSTOOD
