"""Golden-set evaluation: which hits answer a golden query, and the scores (pure).

A golden query names what a correct hit is, in up to three ways (any one suffices):
- claim ids: the hit is one of these claims;
- episodes: one of the hit's citations is one of these episodes (exact external id;
  what a BEIR import maps its judged documents to);
- texts: the hit's fact, or one of its citations' snippets or episode ids, contains one
  of these substrings (case-insensitive), the spec's "substrings a correct answer must
  contain". The texts are ways to recognise one answer, so together they count as one.

Scores use binary relevance over the *distinct answers* a ranking reaches, so two hits
citing the same judged document count once (as in BEIR, where documents are judged):
hit@k (some correct hit in the top k), reciprocal rank, and nDCG@10.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

CUTOFFS = (1, 3, 10)
NDCG_DEPTH = 10
METRICS = ("hit_at_1", "hit_at_3", "hit_at_10", "mrr", "ndcg_at_10")


@dataclass(frozen=True)
class Expectation:
    """What a correct hit for one golden query is."""

    claim_ids: frozenset[int] = frozenset()
    episodes: frozenset[str] = frozenset()
    texts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (self.claim_ids or self.episodes or self.texts):
            raise ValueError("a golden query needs claim ids, episodes or texts to expect")
        if any(not text.strip() for text in self.texts):
            raise ValueError("an expected text must not be blank")

    @property
    def size(self) -> int:
        """How many distinct answers exist (the ideal DCG's length): each claim, each
        episode, and the texts together as one."""
        return len(self.claim_ids) + len(self.episodes) + (1 if self.texts else 0)


@dataclass(frozen=True)
class ScoredHit:
    """What the judge reads of one returned hit."""

    claim_id: int
    fact: str
    episodes: tuple[str, ...] = ()  # external ids of the episodes its citations name
    snippets: tuple[str, ...] = ()


def answers(hit: ScoredHit, expected: Expectation) -> frozenset[str]:
    """The expected answers this hit reaches (empty when it is not a correct hit)."""
    found: set[str] = set()
    if hit.claim_id in expected.claim_ids:
        found.add(f"claim:{hit.claim_id}")
    found.update(f"episode:{episode}" for episode in expected.episodes & set(hit.episodes))
    if expected.texts:
        lowered = [text.casefold() for text in (hit.fact, *hit.snippets, *hit.episodes)]
        if any(text.casefold() in hay for text in expected.texts for hay in lowered):
            found.add("text")
    return frozenset(found)


@dataclass(frozen=True)
class QueryScore:
    """One golden query's scores and where its first correct hit ranked (None: missed)."""

    first_rank: int | None
    hit_at: Mapping[int, float]
    reciprocal_rank: float
    ndcg_at_10: float
    correct: tuple[int, ...] = ()  # 1-based ranks of correct hits

    @property
    def values(self) -> dict[str, float]:
        return {
            "hit_at_1": self.hit_at[1],
            "hit_at_3": self.hit_at[3],
            "hit_at_10": self.hit_at[10],
            "mrr": self.reciprocal_rank,
            "ndcg_at_10": self.ndcg_at_10,
        }


def score(hits: Sequence[ScoredHit], expected: Expectation) -> QueryScore:
    """Score one ranking against one golden query's expectation."""
    seen: set[str] = set()
    gains: list[float] = []
    correct: list[int] = []
    for rank, hit in enumerate(hits, start=1):
        reached = answers(hit, expected)
        if reached:
            correct.append(rank)
        new = reached - seen
        seen |= new
        gains.append(1.0 if new else 0.0)
    first = correct[0] if correct else None
    dcg = math.fsum(gain / math.log2(i + 2) for i, gain in enumerate(gains[:NDCG_DEPTH]))
    ideal = math.fsum(1 / math.log2(i + 2) for i in range(min(NDCG_DEPTH, expected.size)))
    return QueryScore(
        first_rank=first,
        hit_at={k: float(first is not None and first <= k) for k in CUTOFFS},
        reciprocal_rank=1.0 / first if first else 0.0,
        ndcg_at_10=dcg / ideal if ideal else 0.0,
        correct=tuple(correct),
    )


def mean_scores(scores: Iterable[QueryScore]) -> dict[str, float]:
    """Each metric's mean over the queries (all 0.0 for none)."""
    rows = [s.values for s in scores]
    if not rows:
        return dict.fromkeys(METRICS, 0.0)
    return {name: math.fsum(row[name] for row in rows) / len(rows) for name in METRICS}


@dataclass(frozen=True)
class Floors:
    """Minimum mean scores a run must reach; a metric without a floor is not gated."""

    minimums: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, value in self.minimums.items():
            if name not in METRICS:
                raise ValueError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}")
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"the floor for {name} must be in [0, 1], got {value!r}")

    @classmethod
    def parse(cls, text: str) -> Floors:
        """`ndcg_at_10=0.5,hit_at_10=0.8` -> Floors (an empty text gates nothing)."""
        minimums: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"floor {part!r} is not metric=value")
            try:
                minimums[name.strip()] = float(value)
            except ValueError:
                raise ValueError(f"floor {part!r}: {value!r} is not a number") from None
        return cls(minimums)

    def failures(self, means: Mapping[str, float]) -> list[str]:
        """One sentence per metric below its floor (empty: the run passes)."""
        return [
            f"{name} {_shown(means[name], floor)} is below the floor {floor:.4f}"
            for name, floor in sorted(self.minimums.items())
            if means[name] < floor
        ]


def _shown(value: float, floor: float) -> str:
    """The value with enough digits that it never reads as equal to its floor."""
    for digits in (4, 6, 9):
        text = f"{value:.{digits}f}"
        if float(text) < floor:
            return text
    return repr(value)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (0 < q <= 100) of the values; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, math.ceil(q / 100 * len(ordered)) - 1)
    return ordered[index]
