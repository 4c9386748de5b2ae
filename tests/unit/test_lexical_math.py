"""BM25's pure math: idf, the saturated term frequency and the per-document sum (no database)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.domain.lexical import K1, bm25, idf, tf_part

_counts = st.integers(min_value=0, max_value=10**6)
_lengths = st.integers(min_value=1, max_value=10**5)
_averages = st.floats(min_value=0.5, max_value=1e5)


@given(documents=_counts, df=_counts)
def test_idf_is_positive_and_finite_when_counts_are_any(documents: int, df: int) -> None:
    value = idf(documents=documents, df=df)
    assert value > 0
    assert math.isfinite(value)


@given(documents=st.integers(2, 10**6), data=st.data())
def test_idf_falls_when_a_term_is_in_more_documents(documents: int, data: st.DataObject) -> None:
    rarer = data.draw(st.integers(0, documents - 1))
    commoner = data.draw(st.integers(rarer + 1, documents))
    assert idf(documents=documents, df=rarer) > idf(documents=documents, df=commoner)


def test_idf_is_lucenes_smoothed_formula_when_checked_by_hand() -> None:
    assert idf(documents=10, df=1) == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert idf(documents=10, df=10) == pytest.approx(math.log(1 + 0.5 / 10.5))


@given(tf=st.integers(0, 10**4), doc_len=_lengths, avg_len=_averages)
def test_tf_part_is_bounded_by_k1_plus_one_when_tf_grows(
    tf: int, doc_len: int, avg_len: float
) -> None:
    assert 0.0 <= tf_part(tf=tf, doc_len=doc_len, avg_len=avg_len) < K1 + 1


@given(tf=st.integers(1, 10**3), doc_len=_lengths, avg_len=_averages)
def test_tf_part_rises_with_tf_and_falls_with_length_when_others_are_fixed(
    tf: int, doc_len: int, avg_len: float
) -> None:
    base = tf_part(tf=tf, doc_len=doc_len, avg_len=avg_len)
    assert tf_part(tf=tf + 1, doc_len=doc_len, avg_len=avg_len) > base
    assert tf_part(tf=tf, doc_len=doc_len * 2, avg_len=avg_len) < base


def test_tf_part_is_zero_when_the_term_is_absent() -> None:
    assert tf_part(tf=0, doc_len=10, avg_len=5.0) == 0.0


@pytest.mark.parametrize(("tf", "doc_len"), [(-1, 3), (1, -3)])
def test_negative_counts_are_refused_when_given(tf: int, doc_len: int) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        tf_part(tf=tf, doc_len=doc_len, avg_len=1.0)


def test_a_rare_word_outweighs_a_common_one_when_both_appear_once() -> None:
    df = {"the": 99, "kafka": 2}
    rare = bm25(
        ["the", "kafka"], {"kafka": 1, "x": 1}, document_frequency=df, documents=100, avg_len=2
    )
    common = bm25(
        ["the", "kafka"], {"the": 1, "x": 1}, document_frequency=df, documents=100, avg_len=2
    )
    assert rare > 5 * common


def test_repeated_query_words_count_once_when_scored() -> None:
    df, counts = {"redis": 3}, {"redis": 2, "cache": 1}
    once = bm25(["redis"], counts, document_frequency=df, documents=10, avg_len=3)
    twice = bm25(["redis", "redis"], counts, document_frequency=df, documents=10, avg_len=3)
    assert once == twice
