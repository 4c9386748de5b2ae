"""A query word's other forms (`lexical.inflections`) and how BM25 counts them (no database)."""

from __future__ import annotations

import pytest

from retrieval.domain.lexical import (
    VARIANT_WEIGHT,
    bm25,
    idf,
    inflections,
    query_terms_weighted,
    tf_part,
)

# A query word, then forms a document may hold that it must find.
FOUND = [
    ("research", {"researching", "researched", "researches"}),
    ("researching", {"research", "researched", "researches"}),
    ("hike", {"hikes", "hiked", "hiking"}),
    ("hiking", {"hike", "hikes", "hiked"}),
    ("camps", {"camp", "camped", "camping"}),
    ("studies", {"study", "studied", "studying"}),
    ("study", {"studies", "studied", "studying"}),
    ("stopped", {"stop", "stops", "stopping"}),
    ("stop", {"stops", "stopped", "stopping"}),
    ("running", {"run", "runs"}),
    ("painting", {"paint", "paints", "painted", "paintings"}),
    ("classes", {"class"}),
    ("watches", {"watch", "watched", "watching"}),
    ("dependencies", {"dependency"}),
    ("adopted", {"adopt", "adopts", "adopting"}),
]


@pytest.mark.parametrize(("word", "forms"), FOUND)
def test_a_word_finds_its_regular_inflections_when_it_is_english(
    word: str, forms: set[str]
) -> None:
    found = inflections(word)
    assert word in found
    assert forms <= found, forms - found


@pytest.mark.parametrize(
    "word",
    [
        "run",  # shorter than four letters
        "api",
        "nhiều",  # not ASCII: another language's word, read as written
        "khởi",
        "covid19",  # a digit
        "il6",
        "straße",
    ],
)
def test_a_word_is_read_as_written_when_short_not_ascii_or_not_letters(word: str) -> None:
    assert inflections(word) == frozenset({word})


@pytest.mark.parametrize(
    ("word", "not_found"),
    [
        ("analysis", {"analysi", "analys"}),  # -is is no plural
        ("status", {"statu"}),  # nor -us
        ("class", {"clas"}),  # nor a double s
        ("falling", {"fal"}),  # a doubled l is the word's own
    ],
)
def test_an_ending_is_not_stripped_when_it_is_part_of_the_word(
    word: str, not_found: set[str]
) -> None:
    assert not (inflections(word) & not_found)


def test_each_form_stands_for_one_query_word_and_the_words_weigh_one() -> None:
    rows = query_terms_weighted(["run", "hiking", "hikes", "hiking"])
    terms = [term for term, _, _ in rows]
    assert len(terms) == len(set(terms))  # a form is looked up once
    by_term = {term: (origin, weight) for term, origin, weight in rows}
    assert by_term["run"] == ("run", 1.0)
    assert by_term["hikes"] == ("hikes", 1.0)  # a query word is its own, not a form of another
    assert by_term["hike"] == ("hiking", VARIANT_WEIGHT)  # the first word it is a form of
    assert query_terms_weighted(["hiking", "run"], variant_weight=None) == [
        ("hiking", "hiking", 1.0),
        ("run", "run", 1.0),
    ]


def test_a_document_counts_its_best_form_of_a_word_once_weighed_by_the_form() -> None:
    df = {"hiking": 2, "hike": 5, "hikes": 1}
    n, avg = 100, 4.0

    def part(term: str, counts: dict[str, int]) -> float:
        return idf(documents=n, df=df[term]) * tf_part(
            tf=counts[term], doc_len=sum(counts.values()), avg_len=avg
        )

    as_written = {"hiking": 1, "trail": 3}
    other_form = {"hike": 2, "trail": 2}
    both_forms = {"hike": 1, "hikes": 1, "trail": 2}

    def score(counts: dict[str, int]) -> float:
        return bm25(["hiking"], counts, document_frequency=df, documents=n, avg_len=avg)

    assert score(as_written) == pytest.approx(part("hiking", as_written))
    assert score(other_form) == pytest.approx(VARIANT_WEIGHT * part("hike", other_form))
    # Two forms in one document: the better one counts, not their sum.
    best = max(part("hike", both_forms), part("hikes", both_forms))
    assert score(both_forms) == pytest.approx(VARIANT_WEIGHT * best)
    # Without forms the word as written alone counts.
    assert (
        bm25(["hiking"], other_form, document_frequency=df, documents=n, avg_len=avg,
             variant_weight=None)
        == 0.0
    )  # fmt: skip
