"""A question's vector moved towards its best hits (Rocchio's relevance feedback) (pure).

A question that asks for a list ("What books has John read?", "What shelters does
Maria volunteer at?") is answered by several passages that share the topic with each
other more than with the question's words: the best hits say "Dune", "non-fiction",
"reading", and a turn about rereading "The Alchemist" is nearer to them than to
"books". Pseudo-relevance feedback (Rocchio 1971; Lavrenko & Croft's RM3 is its
lexical form) searches again with the query moved towards the centroid of the first
search's best hits, which nobody judged: it assumes they are about the topic.

`toward` is that move in a model's space; what uses it (a context pack's reading,
`retrieval.domain.context.LIKE_HITS`) decides how much the second search counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# How far the question moves: the normalised centroid of the best hits weighs this
# much against the normalised question (1.0 half way). Measured on LoCoMo dev (the
# multi-hop share of evidence in a 1,000-token pack, docs/benchmarks.md): 1.0 and 2.0
# were within 0.005 of each other; 2.0 was kept.
CENTROID_WEIGHT = 2.0


def unit(vector: Sequence[float]) -> list[float]:
    """The vector scaled to length 1 (the zero vector as it is)."""
    length = math.sqrt(math.fsum(x * x for x in vector))
    return [x / length for x in vector] if length else [float(x) for x in vector]


def toward(
    query: Sequence[float], centroid: Sequence[float], *, weight: float = CENTROID_WEIGHT
) -> list[float]:
    """The query's vector moved towards `centroid` (the mean of the best hits' vectors,
    in the same model's space): unit(unit(query) + weight * unit(centroid)), of unit
    length as every query vector is. ValueError when the dimensions differ."""
    if len(query) != len(centroid):
        raise ValueError(
            f"a {len(query)}-dimension query cannot move towards a {len(centroid)}-dimension "
            "centroid"
        )
    q, c = unit(query), unit(centroid)
    return unit([a + weight * b for a, b in zip(q, c, strict=True)])
