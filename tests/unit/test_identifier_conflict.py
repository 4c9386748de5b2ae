"""identifier_conflict: what tells two similar names apart as two things (pure, no database)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from curation.domain.names import identifier_conflict

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Fillers ("the", "of") and conjunctions ("and", "y", "e"...) never tell names apart.
_WORD = st.text(alphabet=_LETTERS, min_size=1, max_size=10).filter(
    lambda word: word not in {"the", "of", "and", "und", "y", "e", "et"}
)
_WORDS = st.lists(_WORD, min_size=1, max_size=4)
_SEPARATOR = st.sampled_from([" ", "-", "_", ".", " - ", "/"])


def _name(words: list[str], separator: str = " ") -> str:
    return separator.join(words)


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ("Kubernetes cluster prod-eu-1", "Kubernetes cluster prod-eu-3", "different number: 1 / 3"),
        ("db-01", "db-02", "different number: 01 / 02"),
        ("db-01", "db-1", "different number: 01 / 1"),
        ("payments-v1", "payments-v2", "different number: 1 / 2"),
        ("PostgreSQL 16", "PostgreSQL", "different number: none / 16"),
        ("api v1.2", "api v12", "different number: 1-2 / 12"),
        ("prod-eu", "prod-us", "different code: eu / us"),
        ("us-east-1", "us-west-1", "different word: east / west"),
        ("Samoa", "American Samoa", "extra word: american"),
        ("Guinea", "Guinea-Bissau", "extra word: bissau"),
        ("South Korea", "North Korea", "different word: north / south"),
        ("C#", "C++", "different symbol: # / +"),
        ("C", "C#", "different symbol: # / none"),
        ("Bua-ga-ri", "Hun-ga-ri", "different code: bua / hun"),
        ("Team E", "Team", "extra word: e"),
    ],
)
def test_a_reason_is_given_when_names_differ_like_identifiers(a: str, b: str, reason: str) -> None:
    conflict = identifier_conflict(a, b)
    assert conflict is not None
    assert str(conflict) == reason


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Payments API", "payments-api"),
        ("PaymentsAPI", "payments api"),
        ("The Payments API", "Payments API"),
        ("Postgress", "Postgres"),
        ("payments-gateway-service", "payments-gateway-servce"),
        ("Node.js", "NodeJS"),
        ("Korea, Republic of", "Republic of Korea"),
        ("KUBERNETES  Cluster prod-EU-1", "kubernetes cluster prod_eu_1"),
        ("Afghanistan", "Afganistán"),
        ("Antigua y Barbuda", "Antigua and Barbuda"),
    ],
)
def test_no_conflict_when_names_differ_by_case_spacing_or_a_typo(a: str, b: str) -> None:
    assert identifier_conflict(a, b) is None


@pytest.mark.parametrize(
    ("a", "b"), [("auth service", "login gateway"), ("Aruba", "Ă-ru-ba"), ("Niger", "Nigeria")]
)
def test_no_conflict_when_names_share_no_word(a: str, b: str) -> None:
    # Not identifier-like: whether they are one thing is for similarity and a judge.
    assert identifier_conflict(a, b) is None


@pytest.mark.parametrize(
    ("a", "b", "sibling"),
    [
        ("db-01", "db-02", True),
        ("prod-eu", "prod-us", True),
        ("C#", "C++", True),
        ("Samoa", "American Samoa", False),
        ("payments-api", "payments-api service", False),
    ],
)
def test_numbers_and_codes_mark_siblings_when_words_do_not(a: str, b: str, sibling: bool) -> None:
    conflict = identifier_conflict(a, b)
    assert conflict is not None
    assert conflict.sibling is sibling


@given(st.text(), st.text())
def test_the_answer_is_symmetric_when_given_any_two_texts(a: str, b: str) -> None:
    assert identifier_conflict(a, b) == identifier_conflict(b, a)


@given(_WORDS, _SEPARATOR, _SEPARATOR)
def test_no_conflict_when_only_case_and_separators_change(
    words: list[str], one: str, other: str
) -> None:
    assert identifier_conflict(_name(words, one), _name(words, other).upper()) is None


@given(_WORDS, st.integers(0, 999), st.integers(0, 999))
def test_a_number_conflict_when_only_the_number_changes(
    words: list[str], number: int, other: int
) -> None:
    assume(number != other)
    conflict = identifier_conflict(f"{_name(words)}-{number}", f"{_name(words)}-{other}")
    assert conflict is not None
    assert conflict.kind == "number"


@given(_WORDS, _WORD)
def test_a_conflict_when_a_word_is_added(words: list[str], extra: str) -> None:
    assume("".join([*words, extra]) != "".join(words))
    assert identifier_conflict(_name(words), _name([*words, extra])) is not None


@given(_WORDS, st.text(alphabet=_LETTERS, min_size=1, max_size=3), st.data())
def test_a_conflict_when_a_short_code_is_swapped(
    words: list[str], code: str, data: st.DataObject
) -> None:
    other = data.draw(st.text(alphabet=_LETTERS, min_size=1, max_size=3))
    assume(other != code and other not in words and code not in words)
    conflict = identifier_conflict(_name([*words, code]), _name([*words, other]))
    assert conflict is not None


@given(_WORDS, st.text(alphabet=_LETTERS, min_size=6, max_size=12), st.data())
def test_no_conflict_when_a_long_word_loses_one_letter(
    words: list[str], long_word: str, data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(long_word) - 1))
    typo = long_word[:cut] + long_word[cut + 1 :]
    assert identifier_conflict(_name([*words, long_word]), _name([*words, typo])) is None
