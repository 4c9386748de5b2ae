"""How much each stage-1 list counts for one query: weighted RRF that survives a weak list (pure).

RRF with the spec's k = 1 gives rank 1 of any list 1/2 of a vote: a list that knows
nothing about the query still puts its noise at the top of the fused ranking. The case
recognised before fusing is a query outside the embedder's languages: an English-only
model (MiniLM) reads Vietnamese as broken subwords. A query whose words mostly carry
letters outside ASCII is outside an English model (`foreign_share`), and then the
vector list is left out, so the fusion is the lexical list's ranking.

Measured with bench/embedders on XQuAD vi dev (Vietnamese over Vietnamese, MiniLM):
full text 0.958 nDCG@10, plain RRF 0.884, with this rule 0.958 (620 of 623 queries
recognised). The threshold separates languages, it is not tuned to a score: English
queries (SciFact train, XQuAD en) reach a share of 0.09 at their 99th percentile,
Vietnamese questions 0.625 at their 10th.

The mirror case is a query in another language than the knowledge: an English question
over Vietnamese paragraphs shares only names and numbers with them, and the lexical
list ranks on those. When the index knows under `MIN_COVERAGE` of the query's words,
the full-text list is left out and the (multilingual) vector list decides. Measured on
the same set with e5: English over Vietnamese dense 0.895, plain RRF 0.795. Query word
coverage: English over Vietnamese median 0.35, 95th percentile 0.625; queries in the
corpus's language (SciFact train, XQuAD vi) 0.75 or more at their 1st percentile.
A list is never left out when the other one is, or is missing: fusion then is plain.

A third sign, dense scores too flat to mean anything, was considered and not built:
no measurement here showed a gap that separates useful lists from noise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# A query whose words carry non-ASCII letters beyond this share is outside an English
# model. Measured: English queries (SciFact train, XQuAD en) reach 0.09 at their 99th
# percentile; Vietnamese XQuAD questions have 0.625 at their 10th.
FOREIGN_SHARE_LIMIT = 0.3
# Under this share of the query's words known to the index, the full-text list is noise.
MIN_COVERAGE = 0.6
# What an uninformative list still counts: nothing (it is left out).
WEAK_WEIGHT = 0.0


@dataclass(frozen=True)
class ListWeights:
    """Per-list weights for one query, and why a list was weakened (None when it was not)."""

    weights: dict[str, float]
    reason: str | None = None


def foreign_share(text: str) -> float:
    """The share of the text's words that contain a letter outside ASCII (0 for no words)."""
    words = [word for word in re.findall(r"\w+", text) if any(char.isalpha() for char in word)]
    if not words:
        return 0.0
    foreign = sum(1 for word in words if any(char.isalpha() and ord(char) > 127 for char in word))
    return foreign / len(words)


def list_weights(
    *,
    query_text: str,
    languages: frozenset[str] | None,
    base: Mapping[str, float],
    coverage: float = 1.0,
    has_vector: bool = True,
) -> ListWeights:
    """Each list's weight for this query: `base` (default 1.0), then

    - the vector list weakened when the query is outside the embedder's `languages`
      (None: any language);
    - otherwise, with a vector list present, the full-text list weakened when the index
      knows under `MIN_COVERAGE` of the query's words (`coverage`).
    """
    weights = {"fulltext": base.get("fulltext", 1.0), "vector": base.get("vector", 1.0)}
    if languages is not None and languages <= {"en"}:
        share = foreign_share(query_text)
        if share > FOREIGN_SHARE_LIMIT:
            weights["vector"] *= WEAK_WEIGHT
            return ListWeights(
                weights=weights,
                reason=f"query outside the embedder's languages ({share:.0%} non-ASCII words)",
            )
    if has_vector and weights["vector"] > 0 and coverage < MIN_COVERAGE:
        weights["fulltext"] *= WEAK_WEIGHT
        return ListWeights(
            weights=weights, reason=f"the index knows {coverage:.0%} of the query's words"
        )
    return ListWeights(weights=weights)
