"""normalize_name: the key exact and fuzzy entity matching compare (pure, no database)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curation.domain.names import (
    DEFAULT_FUNCTIONAL_PREDICATES,
    normalize_name,
    spelling_conflict,
    word_order_conflict,
)
from curation.domain.records import PREDICATE_PATTERN

# Latin (incl. Vietnamese, French, German), Greek and Cyrillic letters, with spaces.
# Turkish dotless i (U+0131) is left out: locale-free case folding keeps it apart from
# "i" by design, see test_dotless_i_kept_distinct_when_case_folding_without_locale.
_CASED_ALPHABET = st.characters(
    categories=("Lu", "Ll", "Zs"),
    exclude_characters="\u0131",
    max_codepoint=0x1EFF,
)


@given(st.text())
def test_normalising_twice_changes_nothing_when_given_any_text(name: str) -> None:
    once = normalize_name(name)
    assert normalize_name(once) == once


@given(st.text(alphabet=_CASED_ALPHABET))
def test_case_ignored_when_names_differ_only_in_case(name: str) -> None:
    assert normalize_name(name.upper()) == normalize_name(name.lower())


@given(st.text())
def test_no_edge_whitespace_when_given_any_text(name: str) -> None:
    normalized = normalize_name(name)
    assert normalized == normalized.strip()


@given(st.text())
def test_whitespace_runs_collapsed_when_given_any_text(name: str) -> None:
    normalized = normalize_name(name)
    assert " ".join(normalized.split()) == normalized


@given(st.text())
def test_canonically_equivalent_forms_equal_when_composed_or_decomposed(name: str) -> None:
    assert normalize_name(unicodedata.normalize("NFD", name)) == normalize_name(name)


@pytest.mark.parametrize(
    ("variant", "plain"),
    [
        ("\ufb01le-store", "file-store"),  # the "fi" ligature
        ("\uff22\uff49\uff4c\uff4c\uff49\uff4e\uff47", "billing"),  # full-width letters
        ("Kubernetes\u00a0Cluster", "kubernetes cluster"),  # no-break space
        ("\u216b", "xii"),  # the Roman numeral twelve as one character
        ("billing\u200b-api", "billing-api"),  # a zero-width space
    ],
)
def test_compatibility_forms_equal_when_nfkc_equivalent(variant: str, plain: str) -> None:
    assert normalize_name(variant) == normalize_name(plain)


def test_accents_kept_when_name_is_vietnamese() -> None:
    assert normalize_name("Hà Nội") != normalize_name("Ha Noi")


def test_accented_name_case_folded_when_upper_case_vietnamese() -> None:
    assert normalize_name("HÀ NỘI") == "hà nội"


def test_accents_kept_when_name_is_french() -> None:
    assert normalize_name("Éloïse Café") == "éloïse café"


def test_umlaut_kept_when_name_is_german() -> None:
    assert normalize_name("Zürich") != normalize_name("Zurich")


def test_sharp_s_folds_to_ss_when_case_folding() -> None:
    assert normalize_name("Straße") == normalize_name("STRASSE") == "strasse"


def test_dotless_i_kept_distinct_when_case_folding_without_locale() -> None:
    assert normalize_name("\u0131zmir") != normalize_name("izmir")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("  billing-api \n", "billing-api"),
        ('"billing-api"', "billing-api"),
        ("\u201cPayments team\u201d", "payments team"),
        ("**PostgreSQL   16**", "postgresql 16"),
        ("`payments_service`", "payments_service"),
        ("(ledger-db)", "ledger-db"),
        ("Node.js.", "node.js"),
        ("- Kafka;", "kafka"),
    ],
)
def test_surrounding_punctuation_trimmed_when_name_is_wrapped(name: str, expected: str) -> None:
    assert normalize_name(name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("billing-api", "billing-api"),
        ("payments_service", "payments_service"),
        ("eu-west-1.prod", "eu-west-1.prod"),
        ("C#", "c#"),
        ("C++", "c++"),
        (".NET", ".net"),
        ("billing (EU)", "billing (eu)"),
        ("AT&T", "at&t"),
    ],
)
def test_internal_punctuation_kept_when_it_belongs_to_the_name(name: str, expected: str) -> None:
    assert normalize_name(name) == expected


def test_non_latin_script_kept_when_name_is_chinese() -> None:
    assert normalize_name("\u300a北京数据中心\u300b") == "北京数据中心"


def test_functional_predicates_are_upper_snake_when_listed() -> None:
    assert all(PREDICATE_PATTERN.match(predicate) for predicate in DEFAULT_FUNCTIONAL_PREDICATES)


def test_runs_on_is_functional_when_using_defaults() -> None:
    assert "RUNS_ON" in DEFAULT_FUNCTIONAL_PREDICATES


# --- the word-order rule ----------------------------------------------------------------


def test_reordered_words_conflict_when_names_swap_two_words() -> None:
    conflict = word_order_conflict("stock-notify-queue", "notify-stock-queue")
    assert conflict is not None
    assert conflict.kind == "order"


def test_reordered_words_conflict_when_separators_and_case_differ() -> None:
    assert word_order_conflict("Stock_Notify.Queue", "notify stock-queue") is not None


def test_no_order_conflict_when_words_keep_their_order() -> None:
    assert word_order_conflict("billing-api", "Billing API") is None


def test_no_order_conflict_when_the_words_differ() -> None:
    assert word_order_conflict("stock-notify-queue", "stock-alert-queue") is None


def test_no_order_conflict_when_a_word_is_repeated_only_on_one_side() -> None:
    assert word_order_conflict("queue-stock-queue", "stock-queue") is None


def test_reordered_words_are_not_a_sibling_when_they_conflict() -> None:
    conflict = word_order_conflict("eu-prod", "prod-eu")
    assert conflict is not None
    assert not conflict.sibling


@given(st.lists(st.sampled_from(["stock", "notify", "queue", "api", "eu"]), max_size=5))
def test_order_conflict_is_symmetric_when_given_any_words(words: list[str]) -> None:
    a, b = "-".join(words), " ".join(reversed(words))
    assert (word_order_conflict(a, b) is None) == (word_order_conflict(b, a) is None)


@given(st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=4), min_size=2, max_size=5))
def test_reversed_distinct_words_conflict_when_the_order_changes(words: list[str]) -> None:
    reordered = list(reversed(words))
    conflict = word_order_conflict("-".join(words), "_".join(reordered))
    assert (conflict is not None) == (reordered != words)


@pytest.mark.parametrize(
    ("a", "b"),
    [("metric-queue", "metrics-queue"), ("billng-api", "billing-api"), ("db-01", "db-1")],
)
def test_names_spelt_otherwise_conflict_when_one_letter_or_digit_differs(a: str, b: str) -> None:
    conflict = spelling_conflict(a, b)
    assert conflict is not None
    assert conflict.kind == "spelling"
    assert spelling_conflict(b, a) == conflict


@pytest.mark.parametrize(
    ("a", "b"),
    [("billing-api", "Billing API"), ("billing_api", "billing api."), ("The Ledger", "ledger")],
)
def test_names_are_spelt_alike_when_only_case_punctuation_or_fillers_differ(a: str, b: str) -> None:
    assert spelling_conflict(a, b) is None
