"""Golden-set scoring: hit@k, reciprocal rank, nDCG@10, floors, percentiles (pure, no DB)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.domain.evaluation import (
    METRICS,
    Expectation,
    Floors,
    QueryScore,
    ScoredHit,
    answers,
    mean_scores,
    percentile,
    score,
)


def _miss(claim_id: int) -> ScoredHit:
    return ScoredHit(claim_id=claim_id, fact=f"unrelated fact {claim_id}")


def _citing(claim_id: int, episode: str) -> ScoredHit:
    return ScoredHit(claim_id=claim_id, fact=f"fact {claim_id}", episodes=(episode,))


def _dcg(*relevant_ranks: int) -> float:
    return math.fsum(1 / math.log2(rank + 1) for rank in relevant_ranks)


# --- score(): hand-computed rankings ----------------------------------------------------


def test_scores_when_first_correct_hit_is_third() -> None:
    result = score([_miss(1), _miss(2), _miss(3), _miss(4)], Expectation(claim_ids=frozenset({3})))
    assert result.first_rank == 3
    assert result.correct == (3,)
    assert result.values == {
        "hit_at_1": 0.0,
        "hit_at_3": 1.0,
        "hit_at_10": 1.0,
        "mrr": pytest.approx(1 / 3),
        "ndcg_at_10": pytest.approx(0.5),  # 1 / log2(3 + 1) over an ideal of 1
    }


def test_scores_full_marks_when_first_hit_is_the_one_answer() -> None:
    result = score([_miss(7), _miss(1)], Expectation(claim_ids=frozenset({7})))
    assert result.values == dict.fromkeys(METRICS, 1.0)


def test_scores_zero_when_no_hit_is_correct() -> None:
    result = score([_miss(1), _miss(2)], Expectation(claim_ids=frozenset({9})))
    assert (result.first_rank, result.correct) == (None, ())
    assert result.values == dict.fromkeys(METRICS, 0.0)


def test_scores_zero_when_nothing_is_returned() -> None:
    result = score([], Expectation(texts=("billing",)))
    assert result.first_rank is None
    assert result.values == dict.fromkeys(METRICS, 0.0)


def test_ndcg_ignores_a_correct_hit_when_it_ranks_below_ten() -> None:
    hits = [_miss(n) for n in range(1, 11)] + [_miss(42)]
    result = score(hits, Expectation(claim_ids=frozenset({42})))
    assert result.first_rank == 11
    assert result.reciprocal_rank == pytest.approx(1 / 11)
    assert result.hit_at[10] == 0.0
    assert result.ndcg_at_10 == 0.0


def test_ndcg_against_ideal_when_two_answers_are_expected() -> None:
    result = score([_miss(1), _miss(5), _miss(2)], Expectation(claim_ids=frozenset({1, 2})))
    assert result.correct == (1, 3)
    assert result.ndcg_at_10 == pytest.approx(_dcg(1, 3) / _dcg(1, 2))


def test_ideal_stops_at_ten_when_more_answers_are_expected() -> None:
    expected = Expectation(claim_ids=frozenset(range(1, 16)))
    result = score([_miss(n) for n in range(1, 11)], expected)
    assert result.ndcg_at_10 == pytest.approx(1.0)


def test_duplicates_of_one_answer_count_once_when_hits_cite_the_same_episode() -> None:
    expected = Expectation(episodes=frozenset({"a.md", "b.md"}))
    hits = [_citing(1, "a.md"), _citing(2, "a.md"), _citing(3, "b.md")]
    result = score(hits, expected)
    assert result.correct == (1, 2, 3)  # each is a correct hit ...
    # ... but rank 2 reaches no new answer, so it adds no gain (else nDCG would pass 1)
    assert result.ndcg_at_10 == pytest.approx(_dcg(1, 3) / _dcg(1, 2))


def test_ndcg_is_one_when_the_one_answer_is_first_and_repeated() -> None:
    expected = Expectation(episodes=frozenset({"a.md"}))
    result = score([_citing(1, "a.md"), _citing(2, "a.md")], expected)
    assert result.ndcg_at_10 == pytest.approx(1.0)


# --- answers(): what counts as a correct hit -----------------------------------------------


@pytest.mark.parametrize(
    "hit",
    [
        ScoredHit(claim_id=1, fact="The billing-api runs on K8S-PROD-1."),
        ScoredHit(claim_id=1, fact="unrelated", snippets=("… on k8s-Prod-1 since May",)),
        ScoredHit(claim_id=1, fact="unrelated", episodes=("runbooks/K8s-prod-1.md",)),
    ],
    ids=["fact", "snippet", "episode"],
)
def test_text_matches_case_insensitively_when_found_in_fact_snippet_or_episode(
    hit: ScoredHit,
) -> None:
    assert answers(hit, Expectation(texts=("k8s-prod-1",))) == {"text"}


def test_text_matches_by_casefold_when_cases_differ_beyond_ascii() -> None:
    hit = ScoredHit(claim_id=1, fact="Die Hauptstraße ist gesperrt")
    assert answers(hit, Expectation(texts=("HAUPTSTRASSE",))) == {"text"}


def test_episode_needs_exact_external_id_when_expected_by_episode() -> None:
    expected = Expectation(episodes=frozenset({"a.md"}))
    assert answers(_citing(1, "a.md"), expected) == {"episode:a.md"}
    assert answers(_citing(1, "A.md"), expected) == frozenset()
    assert answers(_citing(1, "docs/a.md"), expected) == frozenset()


def test_answers_name_every_way_a_hit_is_correct_when_it_matches_several() -> None:
    hit = ScoredHit(claim_id=3, fact="billing", episodes=("a.md",))
    expected = Expectation(
        claim_ids=frozenset({3}), episodes=frozenset({"a.md"}), texts=("BILLING", "ledger")
    )
    assert answers(hit, expected) == {"claim:3", "episode:a.md", "text"}


def test_texts_are_one_answer_when_one_hit_contains_several_of_them() -> None:
    """The texts describe one answer: a single hit holding two of them is a perfect ranking."""
    hit = ScoredHit(claim_id=1, fact="The billing-api runs on k8s-prod-1.")
    scored = score([hit], Expectation(texts=("billing-api", "K8S-PROD-1")))
    assert scored.ndcg_at_10 == 1.0


def test_floor_failure_shows_enough_digits_when_rounding_would_hide_the_gap() -> None:
    assert Floors({"mrr": 0.8}).failures({**dict.fromkeys(METRICS, 1.0), "mrr": 0.79999}) == [
        "mrr 0.799990 is below the floor 0.8000"
    ]


# --- Expectation --------------------------------------------------------------------------


def test_expectation_rejected_when_it_expects_nothing() -> None:
    with pytest.raises(ValueError, match="needs claim ids, episodes or texts"):
        Expectation()


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_expectation_rejected_when_an_expected_text_is_blank(blank: str) -> None:
    with pytest.raises(ValueError, match="must not be blank"):
        Expectation(texts=("billing", blank))


# --- mean_scores and Floors -----------------------------------------------------------------


def test_means_are_zero_when_there_are_no_queries() -> None:
    assert mean_scores([]) == dict.fromkeys(METRICS, 0.0)


def test_means_average_each_metric_when_queries_differ() -> None:
    expected = Expectation(claim_ids=frozenset({1}))
    first = score([_miss(1)], expected)
    third = score([_miss(8), _miss(9), _miss(1)], expected)
    means = mean_scores([first, third])
    assert means["hit_at_1"] == pytest.approx(0.5)
    assert means["hit_at_3"] == pytest.approx(1.0)
    assert means["mrr"] == pytest.approx((1 + 1 / 3) / 2)
    assert means["ndcg_at_10"] == pytest.approx((1 + 0.5) / 2)


def test_floors_fail_each_metric_when_it_is_below_its_floor() -> None:
    floors = Floors({"ndcg_at_10": 0.5, "hit_at_10": 0.8, "mrr": 0.2})
    means = {**dict.fromkeys(METRICS, 0.9), "ndcg_at_10": 0.4, "hit_at_10": 0.75}
    assert floors.failures(means) == [
        "hit_at_10 0.7500 is below the floor 0.8000",
        "ndcg_at_10 0.4000 is below the floor 0.5000",
    ]


def test_floors_pass_when_a_metric_equals_its_floor() -> None:
    assert Floors({"mrr": 0.5}).failures({**dict.fromkeys(METRICS, 0.0), "mrr": 0.5}) == []


def test_no_floors_pass_when_every_score_is_zero() -> None:
    assert Floors().failures(dict.fromkeys(METRICS, 0.0)) == []


def test_floors_rejected_when_a_metric_is_unknown() -> None:
    with pytest.raises(ValueError, match="unknown metric 'ndcg'"):
        Floors({"ndcg": 0.5})


@pytest.mark.parametrize("value", [-0.1, 1.01, math.nan])
def test_floors_rejected_when_a_value_is_outside_zero_to_one(value: float) -> None:
    with pytest.raises(ValueError, match="must be in"):
        Floors({"mrr": value})


# --- percentile (nearest rank) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "expected"), [(5, 15), (30, 20), (40, 20), (50, 35), (95, 50), (100, 50)]
)
def test_percentile_is_nearest_rank_when_values_are_unsorted(q: float, expected: float) -> None:
    assert percentile([50, 15, 40, 35, 20], q) == expected


def test_percentile_is_zero_when_there_are_no_values() -> None:
    assert percentile([], 95) == 0.0


@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1),
    st.floats(min_value=0.0, max_value=100.0, exclude_min=True),
    st.floats(min_value=0.0, max_value=100.0, exclude_min=True),
)
def test_percentile_is_a_value_and_grows_with_q_when_given_any_values(
    values: list[float], q1: float, q2: float
) -> None:
    low, high = sorted((q1, q2))
    assert percentile(values, low) in values
    assert percentile(values, low) <= percentile(values, high)
    assert percentile(values, 100) == max(values)


# --- properties over generated rankings --------------------------------------------------------

_EPISODES = ("a.md", "b.md", "c.md", "d.md")
_WORDS = ("billing", "Ledger", "K8S", "payments", "prod")
_hit = st.builds(
    ScoredHit,
    claim_id=st.integers(1, 6),
    fact=st.lists(st.sampled_from(_WORDS), max_size=3).map(" ".join),
    episodes=st.lists(st.sampled_from(_EPISODES), max_size=2).map(tuple),
    snippets=st.lists(st.sampled_from(_WORDS), max_size=2).map(tuple),
)
# Expectation() refuses to expect nothing: each branch expects at least one thing.
_expectation = st.one_of(
    st.builds(Expectation, claim_ids=st.frozensets(st.integers(1, 6), min_size=1, max_size=3)),
    st.builds(
        Expectation,
        claim_ids=st.frozensets(st.integers(1, 6), max_size=3),
        episodes=st.frozensets(st.sampled_from(_EPISODES), min_size=1, max_size=2),
        texts=st.lists(st.sampled_from([w.swapcase() for w in _WORDS]), max_size=2).map(tuple),
    ),
)


def _consistent(result: QueryScore, hits: list[ScoredHit]) -> None:
    assert 0.0 <= result.ndcg_at_10 <= 1.0 + 1e-12
    assert result.hit_at[1] <= result.hit_at[3] <= result.hit_at[10]
    if result.first_rank is None:
        assert result.values == dict.fromkeys(METRICS, 0.0)
    else:
        assert result.reciprocal_rank == 1 / result.first_rank
        assert all(result.hit_at[k] == float(result.first_rank <= k) for k in (1, 3, 10))
        assert result.correct[0] == result.first_rank <= len(hits)


@given(st.lists(_hit, max_size=15), _expectation)
def test_scores_stay_in_range_and_agree_when_given_any_ranking(
    hits: list[ScoredHit], expected: Expectation
) -> None:
    _consistent(score(hits, expected), hits)


@given(st.lists(_hit, min_size=1, max_size=12), _expectation, st.data())
def test_ndcg_unchanged_when_copies_of_returned_hits_are_appended(
    hits: list[ScoredHit], expected: Expectation, data: st.DataObject
) -> None:
    copies = data.draw(st.lists(st.sampled_from(hits), max_size=5))
    assert score([*hits, *copies], expected).ndcg_at_10 == score(hits, expected).ndcg_at_10


@given(
    st.lists(st.sampled_from(_EPISODES), min_size=1, unique=True),
    st.lists(st.builds(_miss, st.integers(100, 200)), max_size=8),
)
def test_ndcg_is_one_when_every_expected_answer_is_at_the_top(
    episodes: list[str], noise: list[ScoredHit]
) -> None:
    top = [_citing(n, episode) for n, episode in enumerate(episodes, start=1)]
    result = score([*top, *noise], Expectation(episodes=frozenset(episodes)))
    assert result.ndcg_at_10 == pytest.approx(1.0)
    assert result.values["mrr"] == 1.0


def test_floors_parse_reads_metric_value_pairs_when_given_text() -> None:
    assert Floors.parse(" ndcg_at_10=0.5, hit_at_10=0.8 ,").minimums == {
        "ndcg_at_10": 0.5,
        "hit_at_10": 0.8,
    }
    assert Floors.parse("").minimums == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndcg_at_10", "is not metric=value"),
        ("mrr=high", "'high' is not a number"),
        ("recall=0.5", "unknown metric 'recall'"),
        ("mrr=1.5", "must be in [0, 1]"),
    ],
)
def test_floors_parse_refuses_with_a_reason_when_text_is_bad(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Floors.parse(text)
