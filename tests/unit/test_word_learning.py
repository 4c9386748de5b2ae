"""Which question words votes teach a workspace, per predicate (pure rules)."""

from __future__ import annotations

from retrieval.domain.word_learning import Vote, relation_words, suggestions


def _votes(word: str, predicate: str, n: int, *, helpful: bool = True) -> list[Vote]:
    return [
        Vote(f"who is Person {i}'s {word}", predicate, (f"Person {i}", "Ana Silva"), helpful)
        for i in range(n)
    ]


def test_the_words_of_a_question_that_name_the_fact_are_not_relation_words() -> None:
    assert relation_words("who is Noah Dubois's boss in 2024?", ["Noah Dubois", "Ana Silva"]) == {
        "boss"
    }


def test_a_word_enough_questions_used_for_one_predicate_is_suggested() -> None:
    (found,) = suggestions(_votes("boss", "REPORTS_TO", 3), {"REPORTS_TO": ["reports to"]})
    assert (found.predicate, found.word, found.support, found.against) == (
        "REPORTS_TO", "boss", 3, 0,
    )  # fmt: skip


def test_too_few_questions_suggest_nothing() -> None:
    assert suggestions(_votes("boss", "REPORTS_TO", 2), {}) == []


def test_the_same_question_asked_again_counts_once() -> None:
    votes = _votes("boss", "REPORTS_TO", 1) * 5
    assert suggestions(votes, {}) == []


def test_a_word_the_sense_knows_even_through_its_stem_is_not_suggested() -> None:
    known = {"REPORTS_TO": ["reports to", "manager", "bosses"]}
    assert suggestions(_votes("boss", "REPORTS_TO", 4), known) == []


def test_a_word_spread_over_predicates_is_suggested_for_none() -> None:
    votes = _votes("lead", "REPORTS_TO", 3) + _votes("lead", "MEMBER_OF", 3)
    assert suggestions(votes, {}) == []


def test_a_word_voted_down_as_often_as_up_is_not_suggested() -> None:
    votes = _votes("boss", "REPORTS_TO", 3) + [
        Vote(f"the boss of Person {i}", "REPORTS_TO", (f"Person {i}",), False) for i in range(3)
    ]
    assert suggestions(votes, {}) == []
