"""The weak-list rule of stage-1 fusion (retrieval.domain.fusion), pure."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from retrieval.domain.fusion import (
    FOREIGN_SHARE_LIMIT,
    MIN_COVERAGE,
    foreign_share,
    list_weights,
)

ENGLISH = frozenset({"en"})
weights = st.floats(min_value=0, max_value=10, allow_nan=False)


def test_vietnamese_questions_are_foreign_and_english_ones_are_not() -> None:
    assert foreign_share("Đội thủ Panthers đã thua bao nhiêu điểm?") > FOREIGN_SHARE_LIMIT
    assert foreign_share("How many points did the Panthers defense surrender?") == 0.0
    assert foreign_share("IL-6 levels in β-cell apoptosis") < FOREIGN_SHARE_LIMIT
    assert foreign_share("") == foreign_share("2024 / 42") == 0.0


def test_an_english_model_is_left_out_of_a_vietnamese_query_and_says_why() -> None:
    chosen = list_weights(query_text="Hà Nội là thủ đô của nước nào?", languages=ENGLISH, base={})

    assert chosen.weights == {"fulltext": 1.0, "vector": 0.0}
    assert chosen.reason is not None
    assert "languages" in chosen.reason


def test_a_multilingual_model_keeps_its_vote_in_any_language() -> None:
    chosen = list_weights(query_text="Hà Nội là thủ đô của nước nào?", languages=None, base={})

    assert (chosen.weights, chosen.reason) == ({"fulltext": 1.0, "vector": 1.0}, None)


@given(text=st.text(alphabet=string.printable), full=weights, vec=weights)
def test_ascii_text_never_weakens_a_list_and_keeps_the_base_weights(
    text: str, full: float, vec: float
) -> None:
    chosen = list_weights(
        query_text=text, languages=ENGLISH, base={"fulltext": full, "vector": vec}
    )

    assert (chosen.weights, chosen.reason) == ({"fulltext": full, "vector": vec}, None)


@given(text=st.text(), full=weights, vec=weights)
def test_the_rule_only_ever_lowers_the_vector_list(text: str, full: float, vec: float) -> None:
    chosen = list_weights(
        query_text=text, languages=ENGLISH, base={"fulltext": full, "vector": vec}
    )

    assert chosen.weights["fulltext"] == full
    assert chosen.weights["vector"] in (vec, 0.0)
    assert (chosen.weights["vector"] == vec) == (chosen.reason is None) or vec == 0.0
    assert 0.0 <= foreign_share(text) <= 1.0


def test_a_query_whose_words_the_index_hardly_knows_is_left_to_the_vector_list() -> None:
    chosen = list_weights(
        query_text="How many points did the Panthers concede?", languages=None, base={},
        coverage=0.25,
    )  # fmt: skip

    assert chosen.weights == {"fulltext": 0.0, "vector": 1.0}
    assert chosen.reason == "the index knows 25% of the query's words"


@given(coverage=st.floats(min_value=0, max_value=1), foreign=st.booleans())
def test_never_both_lists_are_left_out(coverage: float, foreign: bool) -> None:
    text = "Hà Nội là thủ đô của nước nào" if foreign else "capital of Vietnam"
    for has_vector in (True, False):
        chosen = list_weights(
            query_text=text, languages=ENGLISH, base={}, coverage=coverage, has_vector=has_vector
        )
        assert max(chosen.weights.values()) > 0
        left_out_fulltext = chosen.weights["fulltext"] == 0
        assert left_out_fulltext == (has_vector and not foreign and coverage < MIN_COVERAGE)
