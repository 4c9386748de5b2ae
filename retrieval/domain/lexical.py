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


# --- A query word's other forms ---------------------------------------------------------
#
# Documents are indexed as written (nothing stemmed: a stemmer is one language's, and the
# index serves every language). A question's English word also finds the other
# inflections of its stem that the index holds ("research" finds "researching", "hikes"
# "hiking", "studies" "study"), each scored with its own idf and weighing
# VARIANT_WEIGHT, a document counting only its best form of each query word. The forms
# are generated from the query (regular English inflection: -s, -es, -ies, -ed, -ing, a
# final e dropped, a final consonant doubled) and looked up in the index, which drops
# every generated form no document has: nothing is re-indexed, and a word in another
# script, with a digit, or shorter than VARIANT_MIN_LENGTH letters is read as written.
# Chosen offline, with an exact BM25 (k1 0.9, b 0.4) over whole texts outside VERA
# (recorded in docs/benchmarks.md, "Lexical forms"): SciFact nDCG@10 0.6676 as written,
# 0.6809 with forms weighing 1.0, 0.6845 at 0.8, 0.6849 at 0.6; LoCoMo turns (the five
# dev conversations) recall@40 0.677 as written, 0.728 at 1.0, 0.724 at 0.8, 0.710 at
# 0.6 (multi-hop 0.397, 0.505, 0.507, 0.478); XQuAD vi 0.9583 at every weight.
VARIANT_WEIGHT = 0.8
VARIANT_MIN_LENGTH = 4
_VOWELS = frozenset("aeiou")


def _doubled(stem: str) -> bool:
    """A stem ending in a doubled consonant a suffix doubled ("stopp", "runn"; not "fall")."""
    return len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in _VOWELS | set("lsz")


def _roots(word: str) -> set[str]:
    """The word and every plain form it may be an inflection of."""
    roots, n = {word}, len(word)
    if word.endswith(("ies", "ied")) and n > 4:
        roots.add(word[:-3] + "y")
    if word.endswith("es") and n > 4:
        roots |= {word[:-2], word[:-1]}
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        roots.add(word[:-1])
    for suffix in ("ed", "ing"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3:
            roots |= {stem, stem + "e"}
            if _doubled(stem):
                roots.add(stem[:-1])
    return {root for root in roots if len(root) >= 3}


def _inflected(root: str) -> set[str]:
    """The regular inflections of a plain form, itself included."""
    forms = {root, root + "s", root + "ed", root + "ing"}
    if root.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(root + "es")
    if root.endswith("e"):
        forms |= {root + "d", root[:-1] + "ing"}
    if root.endswith("y") and root[-2] not in _VOWELS:
        forms |= {root[:-1] + "ies", root[:-1] + "ied"}
    if root[-1] not in _VOWELS | set("wxy") and root[-2] in _VOWELS and root[-3] not in _VOWELS:
        forms |= {root + root[-1] + "ed", root + root[-1] + "ing"}  # "stop": stopped
    return forms


def inflections(word: str) -> frozenset[str]:
    """The forms a query word is looked up as: itself, and when it is an English-looking
    word (ASCII letters, at least VARIANT_MIN_LENGTH of them) the regular inflections of
    every plain form it may be one of. Over-generated forms cost a lookup that finds
    nothing."""
    if len(word) < VARIANT_MIN_LENGTH or not (word.isascii() and word.isalpha()):
        return frozenset({word})
    return frozenset(form for root in _roots(word) for form in _inflected(root))


def query_terms_weighted(
    words: Iterable[str], *, variant_weight: float | None = VARIANT_WEIGHT
) -> list[tuple[str, str, float]]:
    """(term, the query word it stands for, its weight) for each distinct query word and
    each of its forms: the word as written weighs 1.0, another form `variant_weight`;
    the words alone when `variant_weight` is None. A form of two query words ("runs" of
    "run" and "running") stands for the first; one that is itself a query word is that
    word's."""
    distinct = list(dict.fromkeys(words))
    rows = [(word, word, 1.0) for word in distinct]
    if variant_weight is None:
        return rows
    taken = set(distinct)
    for word in distinct:
        for form in sorted(inflections(word) - taken):
            rows.append((form, word, variant_weight))
            taken.add(form)
    return rows


def bm25(
    query_terms: Iterable[str],
    term_counts: Mapping[str, int],
    *,
    document_frequency: Mapping[str, int],
    documents: int,
    avg_len: float,
    variant_weight: float | None = VARIANT_WEIGHT,
) -> float:
    """One document's BM25 score for a query: over its distinct terms, the best of each
    term's forms (`query_terms_weighted`) in the document, idf * tf_part * the form's
    weight; each term as written only when `variant_weight` is None."""
    doc_len = sum(term_counts.values())
    best: dict[str, float] = {}
    for term, origin, weight in query_terms_weighted(query_terms, variant_weight=variant_weight):
        score = (
            weight
            * idf(documents=documents, df=document_frequency.get(term, 0))
            * tf_part(tf=term_counts.get(term, 0), doc_len=doc_len, avg_len=avg_len)
        )
        best[origin] = max(best.get(origin, 0.0), score)
    return math.fsum(best.values())
