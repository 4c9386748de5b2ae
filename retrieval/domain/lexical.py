"""BM25, the lexical half of stage 1 (pure).

Postgres' `ts_rank` has no inverse document frequency, so a query's common words
("the", "of", "in": the `simple` configuration keeps them) weigh as much as its rare
ones. The search index therefore keeps an inverted index (one row per claim and term,
with the term's frequency and the document's length) plus per-group document
frequencies, and scores with Okapi BM25 in SQL. These functions are the same formula in
Python: the reference the SQL is tested against, and the place its constants live.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

K1 = 1.2  # term-frequency saturation (the usual Lucene/Elasticsearch default)
B = 0.75  # document-length normalisation


def idf(*, documents: int, df: int) -> float:
    """Lucene's smoothed BM25 idf: ln(1 + (N - df + 0.5) / (df + 0.5)), always > 0."""
    if documents < 0 or df < 0:
        raise ValueError(f"counts must be >= 0, got documents={documents}, df={df}")
    df = min(df, documents)
    return math.log1p((documents - df + 0.5) / (df + 0.5))


def tf_part(*, tf: int, doc_len: int, avg_len: float, k1: float = K1, b: float = B) -> float:
    """Saturated, length-normalised term frequency: tf (k1+1) / (tf + k1 (1 - b + b dl/avgdl)).

    In [0, k1 + 1): zero for an absent term, growing with tf but never past k1 + 1, and
    smaller in longer documents. It also orders one term's postings for pruning.
    """
    if tf < 0 or doc_len < 0:
        raise ValueError(f"tf and doc_len must be >= 0, got tf={tf}, doc_len={doc_len}")
    if tf == 0:
        return 0.0
    norm = 1.0 - b + b * doc_len / avg_len if avg_len > 0 else 1.0
    return tf * (k1 + 1.0) / (tf + k1 * norm)


def bm25(
    query_terms: Iterable[str],
    term_counts: Mapping[str, int],
    *,
    document_frequency: Mapping[str, int],
    documents: int,
    avg_len: float,
) -> float:
    """One document's BM25 score for a query: sum over distinct query terms of idf * tf_part."""
    doc_len = sum(term_counts.values())
    return math.fsum(
        idf(documents=documents, df=document_frequency.get(term, 0))
        * tf_part(tf=term_counts.get(term, 0), doc_len=doc_len, avg_len=avg_len)
        for term in set(query_terms)
    )
