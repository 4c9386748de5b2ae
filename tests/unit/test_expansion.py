"""A query's vector moved towards its best hits (`retrieval.domain.expansion`), and how a
pack's second reading reranks its facts (`retrieval.domain.context.with_like`)."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from retrieval.domain.context import (
    LIKE_HITS,
    LIKE_WEIGHT,
    PackClaim,
    PackFact,
    best_claims,
    with_like,
)
from retrieval.domain.expansion import CENTROID_WEIGHT, toward, unit


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.hypot(*a) / math.hypot(*b)


def test_the_moved_vector_is_of_unit_length_and_between_the_question_and_the_centroid() -> None:
    query, centroid = [3.0, 0.0, 0.0], [0.0, 0.0, 0.5]
    moved = toward(query, centroid)
    assert math.isclose(math.hypot(*moved), 1.0)
    assert _cos(moved, centroid) > _cos(query, centroid)
    assert _cos(moved, query) > _cos(centroid, query)
    # The centroid weighs CENTROID_WEIGHT against the question, whatever their lengths.
    assert moved[2] / moved[0] == pytest.approx(CENTROID_WEIGHT)


def test_no_weight_leaves_the_question_where_it_was_and_one_weight_goes_half_way() -> None:
    query, centroid = [1.0, 1.0], [-1.0, 1.0]
    assert toward(query, centroid, weight=0.0) == pytest.approx(unit(query))
    half = toward(query, centroid, weight=1.0)
    assert _cos(half, query) == pytest.approx(_cos(half, centroid))


def test_a_centroid_of_another_dimension_is_refused() -> None:
    with pytest.raises(ValueError, match="384-dimension query"):
        toward([0.1] * 384, [0.1] * 256)


def test_a_zero_vector_stays_zero_when_scaled() -> None:
    assert unit([0.0, 0.0]) == [0.0, 0.0]


def _fact(claim_id: int, predicate: str = "STATES") -> PackFact:
    return PackFact(
        fact=f"fact {claim_id}", subject="s", predicate=predicate, object_text=f"fact {claim_id}",
        valid_from=dt.datetime(2024, 1, 1, tzinfo=dt.UTC), valid_to=None, tier=2,
        status="published", citations=(), claims=(PackClaim(claim_id, "w:1"),),
    )  # fmt: skip


def test_the_second_reading_lifts_a_fact_both_readings_found() -> None:
    first = [_fact(n) for n in range(1, 41)]
    like = [_fact(30), _fact(2)]
    order = [fact.claims[0].claim_id for fact in with_like(first, like)]
    assert order[:3] == [2, 1, 30]  # 30 from the 30th place to the third
    assert sorted(order) == list(range(1, 41))  # every fact once


def test_a_fact_only_the_second_reading_found_never_displaces_one_of_the_first() -> None:
    first = [_fact(n) for n in range(1, 101)]  # a search's largest k
    order = [fact.claims[0].claim_id for fact in with_like(first, [_fact(500)])]
    assert order[:100] == list(range(1, 101))
    assert order[100] == 500
    assert LIKE_WEIGHT / (60 + 1) < 1 / (60 + 100)


def test_the_second_reading_moves_towards_the_first_facts_best_claims() -> None:
    facts = [_fact(n) for n in range(10, 20)]
    assert best_claims(facts) == tuple(range(10, 10 + LIKE_HITS))
    assert best_claims(facts[:2]) == (10, 11)
    assert best_claims([]) == ()


def test_a_structured_fact_keeps_its_place_and_only_statements_are_reordered() -> None:
    runs_on = _fact(1, "RUNS_ON")
    first = [runs_on, *(_fact(n) for n in range(2, 30))]
    like = [_fact(12), _fact(10), _fact(1, "RUNS_ON")]
    order = with_like(first, like)
    assert order[0] is runs_on
    # 10: 1 / (60 + 9) + 0.3 / (60 + 2); 12: 1 / (60 + 11) + 0.3 / (60 + 1); 2: 1 / 61.
    assert [fact.claims[0].claim_id for fact in order[1:4]] == [10, 12, 2]
    assert sorted(fact.claims[0].claim_id for fact in order) == list(range(1, 30))


def test_a_pack_of_structured_facts_alone_reads_no_more() -> None:
    structured = [_fact(n, "RUNS_ON") for n in range(1, 8)]
    assert best_claims(structured) == ()
    mixed = [*structured, _fact(8)]
    assert best_claims(mixed) == (1, 2, 3, 4, 5)  # the best facts, whatever their kind
