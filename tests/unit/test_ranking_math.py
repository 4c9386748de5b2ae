"""Ranking math: RRF, min-max, recency, Laplace, the blend and the ranker (pure, no database)."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.domain.ranking import (
    DEFAULT_WEIGHTS,
    HALF_LIFE_S,
    SIGNALS,
    CandidateFacts,
    Signals,
    Weights,
    blend,
    laplace,
    min_max,
    rank,
    recency,
    rerank,
    rerank_blend,
    rrf,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
DAY_S = 24 * 60 * 60.0

_rankings = st.lists(st.lists(st.integers(0, 30), unique=True, max_size=10), max_size=5)
_unit = st.floats(min_value=0.0, max_value=1.0)
_signals = st.builds(Signals, **dict.fromkeys(SIGNALS, _unit))
_raw_weights = st.fixed_dictionaries({name: st.floats(0.0, 10.0) for name in SIGNALS}).filter(
    lambda raw: sum(raw.values()) > 0
)
_weights = _raw_weights.map(Weights.from_mapping)
_finite = st.floats(allow_nan=False, allow_infinity=False)
_ages = st.floats(min_value=0.0, max_value=1e12)
_half_lives = st.floats(min_value=1.0, max_value=1e10)
_votes = st.integers(min_value=0, max_value=10**6)


def _facts(**overrides: object) -> CandidateFacts:
    base: dict[str, object] = {
        "stage1": 0.5,
        "authority": 0.85,
        "verification": 0.8,
        "confidence": 0.9,
        "valid_from": NOW,
    }
    return CandidateFacts(**{**base, **overrides})  # type: ignore[arg-type]


# --- RRF ----------------------------------------------------------------------------------


@given(_rankings)
def test_rrf_scores_positive_when_fusing_any_rankings(rankings: list[list[int]]) -> None:
    assert all(score > 0 for score in rrf(rankings).values())


@given(_rankings.filter(bool))
def test_rrf_top_score_when_item_ranked_first_in_every_list(rankings: list[list[int]]) -> None:
    winner = -1
    scores = rrf([[winner, *ranking] for ranking in rankings])
    assert all(scores[winner] > score for key, score in scores.items() if key != winner)


@given(_rankings, st.lists(st.integers(0, 30), unique=True, max_size=10), st.integers(0, 5))
def test_rrf_no_score_lowered_when_a_list_is_added(
    rankings: list[list[int]], extra: list[int], position: int
) -> None:
    before = rrf(rankings)
    after = rrf([*rankings[:position], extra, *rankings[position:]])
    assert all(after[key] >= score for key, score in before.items())


@given(st.data(), _rankings)
def test_rrf_identical_when_lists_reordered(data: st.DataObject, rankings: list[list[int]]) -> None:
    shuffled = data.draw(st.permutations(rankings))
    assert rrf(shuffled) == rrf(rankings)


def test_rrf_adds_one_over_one_plus_rank_when_k_is_default() -> None:
    assert rrf([["a", "b"], ["b"]]) == {"a": 1 / 2, "b": 1 / 3 + 1 / 2}


def test_rrf_counts_best_rank_once_when_a_list_repeats_an_item() -> None:
    assert rrf([["a", "b", "a"]]) == {"a": 1 / 2, "b": 1 / 3}


_list_weights = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)


@given(_rankings)
def test_weighted_rrf_equals_plain_rrf_when_every_weight_is_one(rankings: list[list[int]]) -> None:
    assert rrf(rankings, weights=[1.0] * len(rankings)) == rrf(rankings)


@given(st.data(), _rankings)
def test_weighted_rrf_identical_when_lists_reordered_with_their_weights(
    data: st.DataObject, rankings: list[list[int]]
) -> None:
    weights = data.draw(st.lists(_list_weights, min_size=len(rankings), max_size=len(rankings)))
    pairs = data.draw(st.permutations(list(zip(rankings, weights, strict=True))))
    shuffled = rrf([r for r, _ in pairs], weights=[w for _, w in pairs])
    assert shuffled == rrf(rankings, weights=weights)


@given(_rankings, st.floats(min_value=0.01, max_value=100.0))
def test_weighted_rrf_keeps_the_order_when_every_weight_is_scaled(
    rankings: list[list[int]], factor: float
) -> None:
    plain = rrf(rankings)
    scaled = rrf(rankings, weights=[factor] * len(rankings))
    assert all(math.isclose(scaled[key], factor * score) for key, score in plain.items())


@given(_rankings.filter(bool), st.lists(st.integers(0, 30), unique=True, min_size=1, max_size=10))
def test_weighted_rrf_ignores_a_list_when_its_weight_is_zero(
    rankings: list[list[int]], noisy: list[int]
) -> None:
    """A list weighted 0 changes no score: the other lists decide alone."""
    alone = rrf(rankings)
    with_noise = rrf([*rankings, noisy], weights=[1.0] * len(rankings) + [0.0])
    assert all(with_noise[key] == score for key, score in alone.items())
    assert all(with_noise[key] == 0.0 for key in set(noisy) - set(alone))


def test_weighted_rrf_lets_the_stronger_list_win_when_lists_disagree_at_the_top() -> None:
    """With k = 1 a noisy list's rank 1 ties the good list's rank 1; a lower weight breaks it."""
    good, noisy = ["right", "other"], ["wrong", "right2"]
    assert rrf([good, noisy])["right"] == rrf([good, noisy])["wrong"]
    scores = rrf([good, noisy], weights=[1.0, 0.5])
    assert scores["right"] > scores["wrong"]


@pytest.mark.parametrize("weights", [[1.0], [1.0, -0.5], [1.0, math.inf], [math.nan, 1.0]])
def test_weighted_rrf_refuses_weights_when_they_do_not_fit_the_lists(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="weight"):
        rrf([["a"], ["b"]], weights=weights)


def test_rrf_rejects_negative_k_when_given_one() -> None:
    with pytest.raises(ValueError, match="k must be"):
        rrf([["a"]], k=-1)


# --- min-max ------------------------------------------------------------------------------


@given(st.dictionaries(st.integers(), _finite))
def test_min_max_in_unit_interval_when_given_finite_scores(scores: dict[int, float]) -> None:
    assert all(0.0 <= value <= 1.0 for value in min_max(scores).values())


@given(st.dictionaries(st.integers(), _finite, min_size=2))
def test_min_max_maps_ends_to_0_and_1_when_scores_distinct(scores: dict[int, float]) -> None:
    low, high = min(scores, key=scores.__getitem__), max(scores, key=scores.__getitem__)
    normalised = min_max(scores)
    if scores[low] != scores[high]:
        assert (normalised[low], normalised[high]) == (0.0, 1.0)


@given(st.dictionaries(st.integers(), _finite), st.integers(), st.integers())
def test_min_max_keeps_order_when_given_any_two_keys(
    scores: dict[int, float], a: int, b: int
) -> None:
    normalised = min_max(scores)
    if a in scores and b in scores and scores[a] <= scores[b]:
        assert normalised[a] <= normalised[b]


def test_min_max_gives_one_when_all_scores_equal() -> None:
    assert min_max({"a": 0.3, "b": 0.3}) == {"a": 1.0, "b": 1.0}


def test_min_max_gives_one_when_candidate_is_alone() -> None:
    assert min_max({"a": 0.02}) == {"a": 1.0}


def test_min_max_empty_when_given_no_scores() -> None:
    assert min_max({}) == {}


def test_min_max_rejects_nan_when_given_one() -> None:
    with pytest.raises(ValueError, match="finite"):
        min_max({"a": math.nan, "b": 1.0})


# --- recency ------------------------------------------------------------------------------


@given(_ages, _ages, _half_lives)
def test_recency_never_rises_when_age_grows(a: float, b: float, half_life: float) -> None:
    younger, older = sorted((a, b))
    assert recency(younger, half_life_s=half_life) >= recency(older, half_life_s=half_life)


@given(_half_lives)
def test_recency_is_half_when_one_half_life_old(half_life: float) -> None:
    assert recency(half_life, half_life_s=half_life) == 0.5


@given(_half_lives)
def test_recency_is_one_when_age_is_zero(half_life: float) -> None:
    assert recency(0.0, half_life_s=half_life) == 1.0


@given(st.floats(max_value=0.0, allow_nan=False))
def test_recency_is_one_when_timestamp_in_future(age: float) -> None:
    assert recency(age) == 1.0


@given(st.floats(allow_nan=False))
def test_recency_is_zero_when_invalidated(age: float) -> None:
    assert recency(age, invalidated=True) == 0.0


def test_recency_halves_every_30_days_when_half_life_is_default() -> None:
    assert HALF_LIFE_S == 30 * DAY_S
    assert (recency(30 * DAY_S), recency(60 * DAY_S)) == (0.5, 0.25)


def test_recency_matches_spec_formula_when_age_is_arbitrary() -> None:
    age = 11.5 * DAY_S
    assert recency(age) == pytest.approx(math.exp(-math.log(2) * age / HALF_LIFE_S), rel=1e-15)


@pytest.mark.parametrize("half_life", [0.0, -1.0, math.nan])
def test_recency_rejects_half_life_when_not_positive(half_life: float) -> None:
    with pytest.raises(ValueError, match="half_life_s"):
        recency(1.0, half_life_s=half_life)


# --- Laplace ------------------------------------------------------------------------------


@given(_votes, _votes)
def test_laplace_strictly_between_0_and_1_when_given_any_votes(up: int, down: int) -> None:
    assert 0.0 < laplace(up, down) < 1.0


@given(_votes)
def test_laplace_neutral_when_votes_balanced(votes: int) -> None:
    assert laplace(votes, votes) == 0.5


@given(_votes, _votes)
def test_laplace_rises_when_an_up_vote_is_added(up: int, down: int) -> None:
    assert laplace(up + 1, down) > laplace(up, down)


@given(_votes, _votes)
def test_laplace_falls_when_a_down_vote_is_added(up: int, down: int) -> None:
    assert laplace(up, down + 1) < laplace(up, down)


def test_laplace_neutral_when_no_votes() -> None:
    assert laplace(0, 0) == 0.5


def test_laplace_damps_one_vote_when_it_is_the_only_one() -> None:
    assert (laplace(1, 0), laplace(0, 1)) == (2 / 3, 1 / 3)


def test_laplace_rejects_votes_when_negative() -> None:
    with pytest.raises(ValueError, match="votes"):
        laplace(-1, 0)


# --- weights and signals ------------------------------------------------------------------


def test_weights_are_the_spec_defaults_when_not_told() -> None:
    assert Weights().as_dict() == {
        "relevance": 0.40,
        "authority": 0.18,
        "verification": 0.12,
        "recency": 0.12,
        "feedback": 0.08,
        "confidence": 0.10,
    }
    assert math.fsum(DEFAULT_WEIGHTS.as_dict().values()) == 1.0


@given(_raw_weights)
def test_weights_normalise_when_built_from_any_mapping(raw: dict[str, float]) -> None:
    weights = Weights.from_mapping(raw).as_dict()
    total = math.fsum(raw.values())
    assert math.fsum(weights.values()) == pytest.approx(1.0, abs=1e-12)
    assert all(weights[name] == pytest.approx(raw[name] / total) for name in SIGNALS)


def test_weights_kept_when_mapping_already_sums_to_one() -> None:
    assert Weights.from_mapping(DEFAULT_WEIGHTS.as_dict()) == DEFAULT_WEIGHTS


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relevence": 0.4}, "unknown"),
        ({"relevance": -0.1}, ">= 0"),
        ({"relevance": math.inf}, "finite"),
        (dict.fromkeys(SIGNALS, 0.0), "positive"),
    ],
)
def test_weights_rejected_when_mapping_is_invalid(change: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Weights.from_mapping({**DEFAULT_WEIGHTS.as_dict(), **change})


def test_weights_rejected_when_a_name_is_missing() -> None:
    partial = {name: 1.0 for name in SIGNALS if name != "feedback"}
    with pytest.raises(ValueError, match=r"missing \['feedback'\]"):
        Weights.from_mapping(partial)


def test_weights_rejected_when_built_directly_not_summing_to_one() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        Weights(relevance=0.9)


@pytest.mark.parametrize("value", [-0.01, 1.01, math.nan])
def test_signals_rejected_when_outside_unit_interval(value: float) -> None:
    with pytest.raises(ValueError, match="authority"):
        Signals(**{**dict.fromkeys(SIGNALS, 0.5), "authority": value})


def test_signals_listed_in_blend_order_when_as_dict() -> None:
    signals = Signals(*(i / 10 for i in range(6)))
    assert list(signals.as_dict()) == list(SIGNALS) == list(DEFAULT_WEIGHTS.as_dict())


# --- blend --------------------------------------------------------------------------------


def test_blend_is_one_when_every_signal_is_one() -> None:
    assert blend(Signals(**dict.fromkeys(SIGNALS, 1.0)), DEFAULT_WEIGHTS) == 1.0


def test_blend_is_zero_when_every_signal_is_zero() -> None:
    assert blend(Signals(**dict.fromkeys(SIGNALS, 0.0)), DEFAULT_WEIGHTS) == 0.0


def test_blend_is_the_spec_weighted_sum_when_signals_differ() -> None:
    signals = Signals(
        relevance=1.0, authority=0.85, verification=0.8, recency=0.5, feedback=0.5, confidence=0.9
    )
    expected = 0.40 * 1.0 + 0.18 * 0.85 + 0.12 * 0.8 + 0.12 * 0.5 + 0.08 * 0.5 + 0.10 * 0.9
    assert blend(signals, DEFAULT_WEIGHTS) == pytest.approx(expected, abs=1e-15)


@given(_signals, _weights)
def test_blend_in_unit_interval_when_given_any_signals(signals: Signals, weights: Weights) -> None:
    assert 0.0 <= blend(signals, weights) <= 1.0


@given(_signals, _weights, st.sampled_from(SIGNALS), _unit)
def test_blend_never_falls_when_one_signal_rises(
    signals: Signals, weights: Weights, name: str, value: float
) -> None:
    raised = dataclasses.replace(signals, **{name: max(value, getattr(signals, name))})
    assert blend(raised, weights) >= blend(signals, weights)


# --- cross-encoder ------------------------------------------------------------------------


def test_rerank_blend_mixes_linearly_when_weight_is_between() -> None:
    assert rerank_blend(0.6, 0.2, w=0.25) == pytest.approx(0.75 * 0.6 + 0.25 * 0.2)
    assert (rerank_blend(0.6, 0.2, w=0.0), rerank_blend(0.6, 0.2, w=1.0)) == (0.6, 0.2)


@given(_unit, _unit, _unit)
def test_rerank_blend_between_inputs_when_given_any_weight(b: float, ce: float, w: float) -> None:
    assert min(b, ce) - 1e-15 <= rerank_blend(b, ce, w=w) <= max(b, ce) + 1e-15


@pytest.mark.parametrize(("b", "ce", "w"), [(1.2, 0.5, 0.5), (0.5, -0.1, 0.5), (0.5, 0.5, 2.0)])
def test_rerank_blend_rejects_input_when_outside_unit_interval(
    b: float, ce: float, w: float
) -> None:
    with pytest.raises(ValueError, match="must be in"):
        rerank_blend(b, ce, w=w)


# --- the ranker ---------------------------------------------------------------------------


def test_rank_orders_by_blended_score_when_signals_differ() -> None:
    candidates = {
        "fresh-tier1": _facts(stage1=0.25, authority=1.0, verification=1.0, up=3),
        "old-tier4": _facts(stage1=0.5, authority=0.4, valid_from=NOW - timedelta(days=90)),
        "weak": _facts(stage1=0.0, authority=0.7, verification=0.5, down=2),
    }
    ranked = rank(candidates, now=NOW)
    assert [key for key, _, _ in ranked] == ["fresh-tier1", "old-tier4", "weak"]
    _, score, signals = ranked[0]
    assert signals == Signals(
        relevance=0.5, authority=1.0, verification=1.0, recency=1.0, feedback=0.8, confidence=0.9
    )
    assert score == blend(signals, DEFAULT_WEIGHTS)


def test_rank_relevance_is_one_when_candidate_is_alone() -> None:
    [(_, _, signals)] = rank({"only": _facts(stage1=0.01)}, now=NOW)
    assert signals.relevance == 1.0


def test_rank_breaks_ties_by_key_when_scores_equal() -> None:
    ranked = rank({"b": _facts(), "a": _facts(), "c": _facts()}, now=NOW)
    assert [key for key, _, _ in ranked] == ["a", "b", "c"]


def test_rank_recency_is_half_when_fact_is_one_half_life_old() -> None:
    facts = _facts(valid_from=NOW - timedelta(days=7))
    [(_, _, signals)] = rank({"x": facts}, now=NOW, half_life_s=7 * DAY_S)
    assert signals.recency == 0.5


def test_rank_recency_is_zero_when_fact_invalidated() -> None:
    [(_, _, signals)] = rank({"x": _facts(invalidated=True)}, now=NOW)
    assert signals.recency == 0.0


def test_rank_uses_given_weights_when_told() -> None:
    only_authority = Weights.from_mapping({name: float(name == "authority") for name in SIGNALS})
    candidates = {"relevant": _facts(stage1=1.0, authority=0.4), "trusted": _facts(stage1=0.0)}
    ranked = rank(candidates, now=NOW, weights=only_authority)
    assert [(key, score) for key, score, _ in ranked] == [("trusted", 0.85), ("relevant", 0.4)]


def test_rank_empty_when_no_candidates() -> None:
    assert rank({}, now=NOW) == []


@given(
    st.dictionaries(
        st.integers(0, 50),
        st.builds(
            CandidateFacts,
            stage1=st.floats(0.0, 1.0),
            authority=_unit,
            verification=_unit,
            confidence=_unit,
            valid_from=st.datetimes(timezones=st.just(UTC)),
            invalidated=st.booleans(),
            up=st.integers(0, 100),
            down=st.integers(0, 100),
        ),
    ),
    _weights,
)
def test_rank_sorted_by_blend_when_given_any_candidates(
    candidates: dict[int, CandidateFacts], weights: Weights
) -> None:
    ranked = rank(candidates, now=NOW, weights=weights)
    assert sorted(key for key, _, _ in ranked) == sorted(candidates)
    assert all(score == blend(signals, weights) for _, score, signals in ranked)
    assert [(-s, k) for k, s, _ in ranked] == sorted((-s, k) for k, s, _ in ranked)


_blended = st.dictionaries(st.integers(0, 50), _unit, min_size=1, max_size=20).map(
    lambda scores: sorted(scores.items(), key=lambda row: (-row[1], row[0]))
)


@given(blended=_blended, data=st.data(), w=_unit)
def test_rerank_keeps_the_rescored_head_above_the_tail_when_any_scores(
    blended: list[tuple[int, float]], data: st.DataObject, w: float
) -> None:
    top_n = data.draw(st.integers(1, len(blended)))
    head = [key for key, _ in blended[:top_n]]
    ce = {key: data.draw(_unit) for key in head}
    final = rerank(blended, ce, w=w)
    assert sorted(key for key, _ in final) == sorted(key for key, _ in blended)
    assert all(0.0 <= score <= 1.0 for _, score in final)
    scores = [score for _, score in final]
    assert scores == sorted(scores, reverse=True)
    score_of = dict(final)
    tail = [score_of[key] for key, _ in blended[top_n:]]
    assert all(score_of[key] >= max(tail, default=0.0) for key in head)
    tail_keys = [key for key, _ in final if key not in ce]
    assert tail_keys == [key for key, _ in blended[top_n:]]  # stage 2's order, even at w = 1


def test_rerank_lets_the_cross_encoder_reorder_the_head_when_weighted() -> None:
    blended = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
    final = rerank(blended, {"a": 0.0, "b": 1.0}, w=0.5)
    # a: 0.5 * 1.0 + 0; b: 0.5 * 0.875 + 0.5; c: 0.5 * 0.0 (unread, ce 0)
    assert final == [("b", pytest.approx(0.9375)), ("a", 0.5), ("c", 0.0)]


def test_rerank_is_the_normalised_blend_when_weight_is_zero() -> None:
    blended = [(1, 0.7), (2, 0.5), (3, 0.3)]
    assert rerank(blended, {1: 0.0, 2: 1.0, 3: 1.0}, w=0.0) == [
        (1, 1.0),
        (2, pytest.approx(0.5)),
        (3, 0.0),
    ]
