"""Feedback calibration: blend weights from logged hits by the spec's mean-difference rule.

A signal earns weight in proportion to how well it separates helpful hits from
unhelpful ones: max(0, mean over helpful - mean over unhelpful), normalised to sum 1.
The rule is deliberately transparent: every weight can be traced to two averages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from retrieval.domain.ranking import (
    DEFAULT_UNDERSTOOD,
    MAX_UNDERSTOOD,
    SIGNALS,
    Signals,
    Weights,
)

# The spec asks for "a minimum sample count" without a number; 30 per class is VERA's
# choice, enough that one odd vote moves a mean by at most ~3 %.
MIN_SAMPLES_PER_CLASS = 30
# Means of equal values over different counts can differ by an ulp (0.3 / 3 != 0.1);
# a separation this small is rounding, not evidence, and earns nothing.
MIN_SEPARATION = 1e-9


@dataclass(frozen=True)
class FeedbackSample:
    """One returned hit's logged signal vector and the caller's thumbs up (True) or down."""

    signals: Signals
    helpful: bool
    understood: float = 0.0  # 1.0 when the hit came from the understood list


@dataclass(frozen=True)
class Calibration:
    """Calibrated weights with the evidence behind them."""

    weights: Weights
    # signed mean(helpful) - mean(unhelpful), per signal, and "understood"'s
    separations: Mapping[str, float]
    helpful: int
    unhelpful: int
    understood: float = DEFAULT_UNDERSTOOD  # the understood list's fusion weight


def calibrate(
    samples: Iterable[FeedbackSample],
    *,
    min_samples_per_class: int = MIN_SAMPLES_PER_CLASS,
    previous: Weights | None = None,
    learning_rate: float = 1.0,
    previous_understood: float = DEFAULT_UNDERSTOOD,
) -> Calibration | None:
    """Weights derived from feedback, or None to keep the current ones.

    None when either class has fewer than `min_samples_per_class` samples or no signal is
    higher on helpful hits than on unhelpful ones. With `previous` weights, the result
    moves only `learning_rate` of the way from them towards the derived weights:
    (1 - rate) * previous + rate * derived, so one night's feedback cannot swing the
    ranker wholesale; the default rate 1.0 (or no `previous`) takes the derived weights.

    The understood list's fusion weight moves by the same evidence: its separation s (the
    share of helpful hits that came from the list, less the share of unhelpful ones)
    scales it, previous * (1 + s), within [0, MAX_UNDERSTOOD], at the same rate.
    """
    if not 0.0 < learning_rate <= 1.0:
        raise ValueError(f"learning_rate must be in (0, 1], got {learning_rate!r}")
    if min_samples_per_class < 1:
        raise ValueError(f"min_samples_per_class must be >= 1, got {min_samples_per_class}")
    helpful: list[Signals] = []
    unhelpful: list[Signals] = []
    flags: tuple[list[float], list[float]] = ([], [])
    for sample in samples:
        (helpful if sample.helpful else unhelpful).append(sample.signals)
        flags[0 if sample.helpful else 1].append(sample.understood)
    if min(len(helpful), len(unhelpful)) < min_samples_per_class:
        return None
    separations = {name: _mean(helpful, name) - _mean(unhelpful, name) for name in SIGNALS}
    understood = understood_weight(flags, previous_understood, learning_rate)
    separations["understood"] = understood[1]
    earned = {name: max(separations[name], 0.0) for name in SIGNALS}
    earned = {name: sep if sep > MIN_SEPARATION else 0.0 for name, sep in earned.items()}
    if not any(earned.values()):
        return None
    weights = Weights.from_mapping(earned)
    if previous is not None and learning_rate < 1.0:
        old, new = previous.as_dict(), weights.as_dict()
        mixed = {
            name: (1 - learning_rate) * old[name] + learning_rate * new[name] for name in SIGNALS
        }
        weights = Weights.from_mapping(mixed)
    return Calibration(
        weights, MappingProxyType(separations), len(helpful), len(unhelpful), understood[0]
    )


def understood_weight(
    classes: tuple[Sequence[float], Sequence[float]], previous: float, learning_rate: float
) -> tuple[float, float]:
    """The understood list's next weight and its separation, from the helpful and the
    unhelpful hits' understood flags (1.0: the hit came from the list)."""
    helpful, unhelpful = classes
    separation = math.fsum(helpful) / len(helpful) - math.fsum(unhelpful) / len(unhelpful)
    derived = min(MAX_UNDERSTOOD, max(0.0, previous * (1.0 + separation)))
    return (1 - learning_rate) * previous + learning_rate * derived, separation


def _mean(vectors: Sequence[Signals], name: str) -> float:
    """The mean of one signal over the vectors."""
    return math.fsum(getattr(vector, name) for vector in vectors) / len(vectors)
