"""Ranking math: RRF fusion, the six-signal weighted blend, recency and feedback (pure).

The numbers are the spec's ("Retrieval and Ranking"): RRF with k = 1, blend weights
relevance 0.40, authority 0.18, verification 0.12, recency 0.12, feedback 0.08,
confidence 0.10, a 30-day recency half-life, Laplace-smoothed votes, and the optional
cross-encoder mixed in as (1 - w) * blend + w * ce.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Protocol

HALF_LIFE_S = 30 * 24 * 60 * 60.0  # the spec's 30-day recency half-life
RRF_K = 1
# The ranking code's version, pinned by every knowledge snapshot: a sealed snapshot is
# searched only by the ranker that sealed it (one that ranks differently could not
# reproduce its answers). Raise it with any change to stage 1's SQL or fusion, the blend,
# recency, feedback smoothing or stage 3's mixing.
RANKER_VERSION = "2026.12.2"  # .2: the understood list, function words out of coverage


class _Orderable(Hashable, Protocol):
    """A candidate key that can break ties in a sort (str, int, UUID ...)."""

    def __lt__(self, other: Any, /) -> bool: ...


def _check_unit(name: str, value: float) -> None:
    """Raise unless `value` lies in [0, 1] (NaN does not)."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


# --- stage 1: fusion and normalisation --------------------------------------------------


def rrf[K: Hashable](
    rankings: Sequence[Sequence[K]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> dict[K, float]:
    """Reciprocal rank fusion: each list adds weight / (k + rank) for its items, rank from 1.

    `weights` (one per list, >= 0; default all 1.0, the spec's plain RRF) lets a list
    that is known to be weaker count for less: weighted RRF keeps RRF's shape and only
    scales each list's votes.

    An item repeated within one list counts once, at its best rank, so one list cannot
    vote twice. Contributions are summed with `math.fsum` (correctly rounded), which makes
    the fused score exactly independent of the order of the lists, as the spec requires
    when per-group searches are merged.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} lists")
    if not all(math.isfinite(w) and w >= 0 for w in weights):
        raise ValueError(f"list weights must be finite and >= 0, got {list(weights)!r}")
    contributions: dict[K, list[float]] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[K] = set()
        for position, key in enumerate(ranking, start=1):
            if key not in seen:
                seen.add(key)
                contributions.setdefault(key, []).append(weight / (k + position))
    return {key: math.fsum(parts) for key, parts in contributions.items()}


def min_max[K](scores: Mapping[K, float]) -> dict[K, float]:
    """Scale scores to [0, 1] over the batch: the lowest -> 0.0, the highest -> 1.0.

    When every score is equal (including a lone candidate) each gets 1.0: nothing in the
    batch is less relevant than anything else, and stage 1 already judged them relevant
    enough to return, so relevance must not drag them down. Empty in, empty out.
    """
    if not scores:
        return {}
    values = scores.values()
    if not all(math.isfinite(value) for value in values):
        raise ValueError("scores must be finite")
    low, high = min(values), max(values)
    if low == high:
        return dict.fromkeys(scores, 1.0)
    if math.isinf(high - low):  # the span overflowed; halving both ends keeps every ratio
        return {key: (v / 2 - low / 2) / (high / 2 - low / 2) for key, v in scores.items()}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


# --- stage 2: the signals -----------------------------------------------------------------


def recency(age_s: float, *, half_life_s: float = HALF_LIFE_S, invalidated: bool = False) -> float:
    """exp(-ln2 * age / half_life) in (0, 1]; an invalidated fact scores 0.

    Written as 0.5 ** (age / half_life), the same function, so one half-life is exactly
    0.5. A future timestamp (negative age, e.g. clock skew) counts as brand new: 1.0.
    """
    if not half_life_s > 0:
        raise ValueError(f"half_life_s must be > 0, got {half_life_s!r}")
    if math.isnan(age_s):
        raise ValueError("age_s must be a number")
    if invalidated:
        return 0.0
    decay: float = 0.5 ** (max(age_s, 0.0) / half_life_s)  # typeshed: float ** float is Any
    return decay


def laplace(up: int, down: int) -> float:
    """Laplace-smoothed vote share (up + 1) / (up + down + 2): 0.5 with no votes."""
    if up < 0 or down < 0:
        raise ValueError(f"votes must be >= 0, got up={up}, down={down}")
    return (up + 1) / (up + down + 2)


@dataclass(frozen=True)
class Signals:
    """The six ranking signals of one candidate, each in [0, 1]; logged with feedback."""

    relevance: float
    authority: float
    verification: float
    recency: float
    feedback: float
    confidence: float

    def __post_init__(self) -> None:
        for name, value in self.as_dict().items():
            _check_unit(name, value)

    def as_dict(self) -> dict[str, float]:
        """The signals by name, in blend order."""
        # Not dataclasses.asdict: it deep-copies, and the ranker calls this per candidate.
        return {name: getattr(self, name) for name in SIGNALS}


SIGNALS: tuple[str, ...] = tuple(field.name for field in fields(Signals))


@dataclass(frozen=True)
class Weights:
    """Blend weights per signal: non-negative, summing to 1 (the spec's defaults)."""

    relevance: float = 0.40
    authority: float = 0.18
    verification: float = 0.12
    recency: float = 0.12
    feedback: float = 0.08
    confidence: float = 0.10

    def __post_init__(self) -> None:
        values = self.as_dict()
        for name, value in values.items():
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"weight {name} must be finite and >= 0, got {value!r}")
        if not math.isclose(math.fsum(values.values()), 1.0, abs_tol=1e-9):
            raise ValueError("weights must sum to 1; use Weights.from_mapping to normalise")

    @classmethod
    def from_mapping(cls, weights: Mapping[str, float]) -> Weights:
        """Weights from all six names -> non-negative numbers, normalised to sum 1."""
        unknown, missing = set(weights) - set(SIGNALS), set(SIGNALS) - set(weights)
        if unknown or missing:
            raise ValueError(f"unknown weights {sorted(unknown)}, missing {sorted(missing)}")
        for name, value in weights.items():
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"weight {name} must be finite and >= 0, got {value!r}")
        total = math.fsum(weights.values())
        if total == 0:
            raise ValueError("at least one weight must be positive")
        return cls(**{name: weights[name] / total for name in SIGNALS})

    def as_dict(self) -> dict[str, float]:
        """The weights by signal name, in blend order."""
        return {name: getattr(self, name) for name in SIGNALS}


DEFAULT_WEIGHTS = Weights()


# The understood list's weight in the fusion (the others' is 1.0): a claim about the entity
# the question names, of the relation it asks for, comes first unless both other lists put
# another at their top. Calibration moves it within [0, MAX_UNDERSTOOD].
DEFAULT_UNDERSTOOD = 2.0
MAX_UNDERSTOOD = 4.0


@dataclass(frozen=True)
class WeightChoice:
    """The weights one workspace ranks with, and which persisted set they are.

    `understood` is the understood list's weight in stage 1's fusion (the other lists
    weigh 1.0): learnt beside the six blend weights from the same votes.

    Version 0 (no set id) is the built-in default above; a workspace's calibrated or
    restored sets count 1, 2, ... Every logged hit and search response names it.
    """

    weights: Weights = DEFAULT_WEIGHTS
    version: int = 0
    set_id: int | None = None
    understood: float = DEFAULT_UNDERSTOOD


DEFAULT_CHOICE = WeightChoice()


def blend(signals: Signals, weights: Weights) -> float:
    """The weighted sum of the signals, in [0, 1]."""
    total = math.fsum(getattr(weights, name) * getattr(signals, name) for name in SIGNALS)
    return min(total, 1.0)  # weights sum to 1 only up to rounding


# --- stage 3: the optional cross-encoder ------------------------------------------------


def rerank_blend(normalised_blend: float, ce: float, *, w: float) -> float:
    """The final score with a cross-encoder: (1 - w) * blend + w * ce."""
    _check_unit("normalised_blend", normalised_blend)
    _check_unit("ce", ce)
    _check_unit("w", w)
    return min((1.0 - w) * normalised_blend + w * ce, 1.0)


def rerank[K: Hashable](
    blended: Sequence[tuple[K, float]], ce: Mapping[K, float], *, w: float
) -> list[tuple[K, float]]:
    """Stage 3 over stage 2's ranked (key, blend) list: (key, final), best first.

    final = (1 - w) * normalised_blend + w * ce, the blend min-max normalised over the
    whole batch. Candidates the cross-encoder did not read (beyond its top N) count as
    ce = 0: they score below every re-scored candidate whose blend was higher, so the
    re-scored head always stays above the tail. Ties keep stage 2's order, so the tail
    keeps it too (even at w = 1, where every unread candidate scores 0).
    """
    normalised = min_max(dict(blended))
    final = [
        (position, key, rerank_blend(normalised[key], ce.get(key, 0.0), w=w))
        for position, (key, _) in enumerate(blended)
    ]
    final.sort(key=lambda row: (-row[2], row[0]))
    return [(key, score) for _, key, score in final]


# --- the ranker ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CandidateFacts:
    """What the ranker knows about one stage-1 candidate."""

    stage1: float  # the fused RRF score; only its place in the batch matters
    authority: float  # from the source's trust tier, 0.4 .. 1.0
    verification: float  # human_verified 1.0 / auto 0.8 / pending 0.5
    confidence: float  # the extractor's confidence in the claim
    valid_from: datetime  # timezone-aware; recency is measured from here
    invalidated: bool = False
    up: int = 0
    down: int = 0


def rank[K: _Orderable](
    candidates: Mapping[K, CandidateFacts],
    *,
    now: datetime,
    weights: Weights | Callable[[K], Weights] = DEFAULT_WEIGHTS,
    half_life_s: float = HALF_LIFE_S,
) -> list[tuple[K, float, Signals]]:
    """Candidates as (key, blended score, signals), best first; ties go to the lower key.

    `weights` is one set for every candidate, or a function giving each candidate's own
    (a search over several workspaces blends each hit with its workspace's set).
    """
    weights_of = weights if callable(weights) else (lambda _key: weights)
    relevance = min_max({key: facts.stage1 for key, facts in candidates.items()})
    ranked: list[tuple[K, float, Signals]] = []
    for key, facts in candidates.items():
        age_s = (now - facts.valid_from).total_seconds()
        signals = Signals(
            relevance=relevance[key],
            authority=facts.authority,
            verification=facts.verification,
            recency=recency(age_s, half_life_s=half_life_s, invalidated=facts.invalidated),
            feedback=laplace(facts.up, facts.down),
            confidence=facts.confidence,
        )
        ranked.append((key, blend(signals, weights_of(key)), signals))
    ranked.sort(key=lambda row: (-row[1], row[0]))
    return ranked
