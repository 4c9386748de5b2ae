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

# Term-frequency saturation and document-length normalisation: Anserini's and bm25s'
# BEIR setting, not Lucene's 1.2/0.75. The index holds passages (a claim each, its
# document's title repeated in each), shorter and more even than whole documents,
# which a weaker length normalisation suits. Measured with bench/lexical.py (nDCG@10
# of the lexical list as served): SciFact train 0.6624 at 0.9/0.4 against 0.6589 at
# 1.2/0.75, 0.6608 at 1.2/0.5, 0.6604 at 0.9/0.6; XQuAD vi 0.9588 against 0.9578,
# 0.9589, 0.9585. An off-the-shelf BM25 (bm25s, 0.9/0.4, whole documents) scores
# 0.6676 and 0.9583; the same BM25 over VERA's passages 0.6629 and 0.9588, so the
# rest of SciFact's gap is passages against documents, not the lexical half.
# A change re-orders the postings (their impact): rebuild them (`search_reindex`).
K1 = 0.9
B = 0.4

# Lexemes are the `simple` configuration's (lower-cased, accents kept, nothing stemmed)
# of the text with every ASCII punctuation character made a space, in documents
# (`SearchDocument.tsv`) and queries alike. Left to itself the parser reads punctuation
# as structure: "IL-6" becomes "il" and the signed integer "-6" (which the query "IL 6"
# misses), "anti-inflammatory" is indexed whole and as both parts (a query with it
# counts the word twice and the document is longer), "1.2", "word/word" and "x.org/p"
# are single float, path and URL tokens. Without punctuation the parser sees runs of
# letters and digits: the `\w+` tokens of an off-the-shelf BM25 (bm25s, Lucene's
# standard analyser less its stemming). The class is ASCII so that it does not depend
# on the database's locale. SciFact train, k1 0.9, b 0.4, 500 postings a term:
# nDCG@10 0.6498 with the parser's own tokens, 0.6569 without punctuation (0.6536 and
# 0.6625 reading every posting); XQuAD vi is unchanged (0.9588).
PUNCTUATION = r"[!-/:-@\[-`{-~]+"


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
