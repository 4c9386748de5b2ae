"""Stage-3 rerankers through the real voyageai and openai clients, against a local stub API."""

from __future__ import annotations

import json
import math
import traceback
from collections.abc import Iterator
from typing import Any

import openai
import pytest
import voyageai
from django.core.exceptions import ImproperlyConfigured

from kernel.resilience import BreakerState, CircuitBreaker
from retrieval.adapters.rerankers import (
    LLMReranker,
    RerankerError,
    ResilientReranker,
    VoyageReranker,
)
from retrieval.ports import Reranker, Reranking
from tests.support.clock import RecordingSleep
from tests.support.fake_models import CHAT_COMPLETIONS, RERANK, StubModelAPI, rerank_answer, serving
from vera import wiring

API_KEY = "sk-test-SECRET-rerank-4242"
LLM_MODEL = "gpt-4o-mini"
QUERY = "what does billing-api depend on?"
FACTS = [
    "checkout-web runs on k8s-prod-1.",
    "billing-api depends on redis-7.",
    "billing-api is owned by the Payments team.",
]


@pytest.fixture
def model_api() -> Iterator[StubModelAPI]:
    with serving(StubModelAPI()) as stub:
        yield stub


def _voyage(stub: StubModelAPI, **options: Any) -> VoyageReranker:
    client = voyageai.Client(api_key=API_KEY, base_url=stub.base_url, max_retries=0, timeout=5)
    return VoyageReranker(client=client, **options)


def _llm(stub: StubModelAPI, **options: Any) -> LLMReranker:
    return LLMReranker(client=stub.client(api_key=API_KEY), model=LLM_MODEL, **options)


def _resilient(inner: Reranker, **options: Any) -> ResilientReranker:
    options.setdefault("breaker", CircuitBreaker(failure_threshold=5, reset_after_s=30))
    options.setdefault("sleep", RecordingSleep())
    return ResilientReranker(inner, **options)


def _reply_scores(stub: StubModelAPI, scores: Any) -> None:
    stub.reply_json({"scores": scores})


# --- Voyage ---------------------------------------------------------------------------


def test_voyage_scores_come_back_in_input_order_when_the_answer_is_by_relevance(
    model_api: StubModelAPI,
) -> None:
    model_api.answer(200, rerank_answer({0: 0.12, 1: 0.91, 2: 0.47}))
    assert _voyage(model_api).score(QUERY, FACTS) == [0.12, 0.91, 0.47]


def test_voyage_request_carries_model_query_and_documents_when_scoring(
    model_api: StubModelAPI,
) -> None:
    model_api.answer(200, rerank_answer({0: 0.1, 1: 0.9, 2: 0.5}, model="rerank-2.5-lite"))
    _voyage(model_api, model="rerank-2.5-lite").score(QUERY, FACTS)
    (request,) = model_api.requests
    body = request["body"]
    assert (request["path"], request["authorization"]) == (RERANK, f"Bearer {API_KEY}")
    assert (body["model"], body["query"], body["documents"], body["truncation"]) == (
        "rerank-2.5-lite",
        QUERY,
        FACTS,
        True,
    )


def test_voyage_score_clamped_when_slightly_outside_unit_interval(
    model_api: StubModelAPI,
) -> None:
    model_api.answer(200, rerank_answer({0: 1.0000002, 1: -0.0000001}))
    assert _voyage(model_api).score(QUERY, FACTS[:2]) == [1.0, 0.0]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param([{"index": 0, "relevance_score": 0.9}], id="index-missing"),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.2}],
            id="index-repeated",
        ),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": 2, "relevance_score": 0.2}],
            id="index-out-of-range",
        ),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": -1, "relevance_score": 0.2}],
            id="index-negative",
        ),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": "1", "relevance_score": 0.2}],
            id="index-is-text",
        ),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": 1}], id="relevance-score-missing"
        ),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": 1, "relevance_score": "high"}],
            id="relevance-score-is-text",
        ),
        pytest.param(
            [{"index": 0, "relevance_score": 0.9}, {"index": 1, "relevance_score": math.nan}],
            id="relevance-score-nan",
        ),
        pytest.param(None, id="no-data"),
    ],
)
def test_reranker_error_raised_when_voyage_answer_is_malformed(
    model_api: StubModelAPI, data: Any
) -> None:
    model_api.answer(200, {"object": "list", "data": data, "usage": {"total_tokens": 9}})
    with pytest.raises(RerankerError, match=r"Voyage rerank-2\.5"):
        _voyage(model_api).score(QUERY, FACTS[:2])


def test_voyage_sends_one_request_per_batch_when_documents_exceed_it(
    model_api: StubModelAPI,
) -> None:
    model_api.answer(200, rerank_answer({0: 0.3, 1: 0.8}))
    model_api.answer(200, rerank_answer({0: 0.6}))
    scores = _voyage(model_api, batch_size=2).score(QUERY, FACTS)
    sent = [request["body"]["documents"] for request in model_api.requests]
    assert (scores, sent) == ([0.3, 0.8, 0.6], [FACTS[:2], FACTS[2:]])


# --- LLM ------------------------------------------------------------------------------


def test_llm_scores_parsed_when_answer_is_valid(model_api: StubModelAPI) -> None:
    _reply_scores(model_api, [0.05, 1, 0.6])
    assert _llm(model_api).score(QUERY, FACTS) == [0.05, 1.0, 0.6]


def test_llm_scores_read_when_answer_is_wrapped_in_a_code_fence(model_api: StubModelAPI) -> None:
    model_api.reply("```json\n" + json.dumps({"scores": [0.2, 0.9, 0.4]}) + "\n```")
    assert _llm(model_api).score(QUERY, FACTS) == [0.2, 0.9, 0.4]


def test_llm_request_numbers_quoted_documents_when_scoring(model_api: StubModelAPI) -> None:
    _reply_scores(model_api, [0.1, 0.9, 0.5])
    _llm(model_api).score(QUERY, FACTS)
    assert model_api.user_message() == (
        f'Query: "{QUERY}"\nDocuments (3):\n1. "{FACTS[0]}"\n2. "{FACTS[1]}"\n3. "{FACTS[2]}"'
    )


def test_llm_request_asks_for_json_at_temperature_zero_when_scoring(
    model_api: StubModelAPI,
) -> None:
    _reply_scores(model_api, [0.1, 0.9, 0.5])
    _llm(model_api).score(QUERY, FACTS)
    body = model_api.body()
    assert (model_api.requests[0]["path"], body["model"]) == (CHAT_COMPLETIONS, LLM_MODEL)
    assert (body["response_format"], body["temperature"]) == ({"type": "json_object"}, 0)


def test_llm_sends_one_request_per_batch_when_documents_exceed_it(
    model_api: StubModelAPI,
) -> None:
    _reply_scores(model_api, [0.3, 0.8])
    _reply_scores(model_api, [0.6])
    scores = _llm(model_api, batch_size=2).score(QUERY, FACTS)
    assert (scores, len(model_api.requests)) == ([0.3, 0.8, 0.6], 2)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(json.dumps({"scores": [0.9, 0.1]}), id="too-few-scores"),
        pytest.param(json.dumps({"scores": [0.9, 0.1, 0.5, 0.5]}), id="too-many-scores"),
        pytest.param("The second document answers the query.", id="prose"),
        pytest.param('{"scores": [0.9, 0.1', id="cut-off-json"),
        pytest.param(json.dumps([0.9, 0.1, 0.5]), id="json-array"),
        pytest.param(json.dumps({"relevance": [0.9, 0.1, 0.5]}), id="no-scores-key"),
        pytest.param(json.dumps({"scores": "0.9, 0.1, 0.5"}), id="scores-is-text"),
        pytest.param(json.dumps({"scores": [0.9, "high", 0.5]}), id="score-is-text"),
        pytest.param(json.dumps({"scores": [0.9, True, 0.5]}), id="score-is-a-bool"),
        pytest.param(json.dumps({"scores": [0.9, None, 0.5]}), id="score-is-null"),
        pytest.param('{"scores": [0.9, NaN, 0.5]}', id="score-nan"),
        pytest.param(json.dumps({"scores": [0.9, 1.7, 0.5]}), id="score-above-one"),
        pytest.param(json.dumps({"scores": [9, 1, 5]}), id="scores-out-of-ten"),
        pytest.param(json.dumps({"scores": [0.9, -0.2, 0.5]}), id="score-negative"),
        pytest.param("", id="empty"),
    ],
)
def test_reranker_error_raised_when_llm_answer_is_malformed(
    model_api: StubModelAPI, content: str
) -> None:
    model_api.reply(content)
    with pytest.raises(RerankerError, match=f"LLM reranker {LLM_MODEL}"):
        _llm(model_api).score(QUERY, FACTS)


def test_reranker_error_raised_when_llm_refuses(model_api: StubModelAPI) -> None:
    model_api.reply(None, refusal="I can't help with that.")
    with pytest.raises(RerankerError, match="refused"):
        _llm(model_api).score(QUERY, FACTS)


# --- both providers -------------------------------------------------------------------

PROVIDERS = [pytest.param(_voyage, id="voyage"), pytest.param(_llm, id="llm")]


def _answer_scores(stub: StubModelAPI, build: Any, scores: list[float]) -> None:
    if build is _voyage:
        stub.answer(200, rerank_answer(dict(enumerate(scores))))
    else:
        _reply_scores(stub, scores)


@pytest.mark.parametrize("build", PROVIDERS)
def test_no_request_when_documents_are_empty(model_api: StubModelAPI, build: Any) -> None:
    reranker = _resilient(build(model_api))
    assert (reranker.score(QUERY, []), model_api.requests) == ([], [])


@pytest.mark.parametrize("build", PROVIDERS)
def test_scores_returned_after_retries_when_provider_answers_429_then_503(
    model_api: StubModelAPI, build: Any
) -> None:
    model_api.fail(429, "Rate limit reached.", kind="requests")
    model_api.fail(503, "The server is overloaded.")
    _answer_scores(model_api, build, [0.2, 0.9, 0.4])
    sleep = RecordingSleep()
    reranker = _resilient(build(model_api), retries=2, sleep=sleep)
    scores = reranker.score(QUERY, FACTS)
    assert (scores, len(model_api.requests), len(sleep.calls)) == ([0.2, 0.9, 0.4], 3, 2)


@pytest.mark.parametrize("build", PROVIDERS)
def test_reranker_error_raised_when_retries_are_exhausted(
    model_api: StubModelAPI, build: Any
) -> None:
    for _ in range(3):
        model_api.fail(503, "The server is overloaded.")
    reranker = _resilient(build(model_api), retries=2)
    with pytest.raises(RerankerError, match=r"failed: \w+ \(HTTP 503\)"):
        reranker.score(QUERY, FACTS)


@pytest.mark.parametrize("build", PROVIDERS)
def test_rejected_request_not_retried_when_provider_answers_400(
    model_api: StubModelAPI, build: Any
) -> None:
    model_api.fail(400, "The query is too long.", kind="invalid_request_error")
    reranker = _resilient(build(model_api), retries=2)
    with pytest.raises(RerankerError, match=r"HTTP 400"):
        reranker.score(QUERY, FACTS)
    assert len(model_api.requests) == 1


@pytest.mark.parametrize("build", PROVIDERS)
def test_reranker_error_without_a_request_when_breaker_is_open(
    model_api: StubModelAPI, build: Any
) -> None:
    for _ in range(2):
        model_api.fail(500, "The server had an error.")
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=30)
    reranker = _resilient(build(model_api), breaker=breaker, retries=0)
    for _ in range(2):
        with pytest.raises(RerankerError, match="HTTP 500"):
            reranker.score(QUERY, FACTS)
    with pytest.raises(RerankerError, match="circuit is open"):
        reranker.score(QUERY, FACTS)
    assert (breaker.state, len(model_api.requests)) == (BreakerState.OPEN, 2)


@pytest.mark.parametrize("build", PROVIDERS)
def test_api_key_absent_from_error_when_server_echoes_it(
    model_api: StubModelAPI, build: Any
) -> None:
    model_api.fail(401, f"Incorrect API key provided: {API_KEY}", kind="invalid_request_error")
    reranker = _resilient(build(model_api))
    with pytest.raises(RerankerError) as raised:
        reranker.score(QUERY, FACTS)
    rendered = "".join(traceback.format_exception(raised.value))
    assert ("HTTP 401" in str(raised.value), API_KEY in rendered) == (True, False)


# --- Reranking ------------------------------------------------------------------------


class _ConstantReranker:
    """A reranker that finds every document half relevant."""

    model = "constant"

    def score(self, query: str, documents: Any) -> list[float]:
        return [0.5] * len(documents)


@pytest.mark.parametrize(("top_n", "weight"), [(1, 0.0), (100, 1.0), (20, 0.5), (5, 1)])
def test_reranking_accepted_when_values_are_in_bounds(top_n: int, weight: float) -> None:
    reranking = Reranking(reranker=_ConstantReranker(), top_n=top_n, weight=weight)
    assert (reranking.top_n, reranking.weight) == (top_n, weight)


@pytest.mark.parametrize("top_n", [0, -1, 101, 2.5, True, "20"])
def test_reranking_rejected_when_top_n_is_out_of_range(top_n: Any) -> None:
    with pytest.raises(ValueError, match="top_n"):
        Reranking(reranker=_ConstantReranker(), top_n=top_n, weight=0.5)


@pytest.mark.parametrize("weight", [-0.1, 1.01, math.nan, math.inf, True, "0.5", None])
def test_reranking_rejected_when_weight_is_out_of_range(weight: Any) -> None:
    with pytest.raises(ValueError, match="weight"):
        Reranking(reranker=_ConstantReranker(), top_n=20, weight=weight)


# --- wiring ---------------------------------------------------------------------------


def test_no_reranking_when_provider_is_left_unset() -> None:
    assert wiring.reranking() is None


def test_retrieval_providers_give_the_wired_reranking_when_asked(settings, monkeypatch) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    settings.VERA_RERANKER__PROVIDER = "voyage"
    assert wiring.RetrievalProviders().reranking() is wiring.reranking()


def test_voyage_reranking_built_when_configured(settings, monkeypatch) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    settings.VERA_RERANKER__PROVIDER = "voyage"
    reranking = wiring.reranking()
    assert reranking is not None
    reranker = reranking.reranker
    assert isinstance(reranker, ResilientReranker)
    assert isinstance(reranker.inner, VoyageReranker)
    assert (reranker.model, reranking.top_n, reranking.weight) == ("rerank-2.5", 20, 0.5)


def test_llm_reranking_scores_through_the_configured_base_url_when_configured(
    settings, monkeypatch, model_api: StubModelAPI
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    settings.VERA_RERANKER__PROVIDER = "llm"
    settings.VERA_RERANKER__MODEL = LLM_MODEL
    settings.VERA_RERANKER__BASE_URL = model_api.base_url
    _reply_scores(model_api, [0.3, 0.7, 0.1])
    reranking = wiring.reranking()
    assert reranking is not None
    assert reranking.reranker.score(QUERY, FACTS) == [0.3, 0.7, 0.1]
    assert model_api.requests[0]["authorization"] == f"Bearer {API_KEY}"


def test_reranking_rebuilt_when_a_setting_changes(settings, monkeypatch) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    settings.VERA_RERANKER__PROVIDER = "voyage"
    first = wiring.reranking()
    settings.VERA_RERANKER__TOP_N = 50
    second = wiring.reranking()
    assert second is not first
    assert second is not None
    assert second.top_n == 50


def test_unknown_reranker_provider_is_a_configuration_error_when_configured(settings) -> None:
    settings.VERA_RERANKER__PROVIDER = "cohere"
    with pytest.raises(ImproperlyConfigured, match="'cohere'; choose voyage or llm"):
        wiring.reranking()


def test_llm_reranker_without_a_model_is_a_configuration_error(settings, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    settings.VERA_RERANKER__PROVIDER = "llm"
    with pytest.raises(ImproperlyConfigured, match="VERA_RERANKER__MODEL"):
        wiring.reranking()


def test_out_of_range_reranker_weight_is_a_value_error_when_configured(
    settings, monkeypatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    settings.VERA_RERANKER__PROVIDER = "voyage"
    settings.VERA_RERANKER__WEIGHT = 1.5
    with pytest.raises(ValueError, match="weight"):
        wiring.reranking()


@pytest.mark.parametrize(
    ("provider", "variable"), [("voyage", "VOYAGE_API_KEY"), ("llm", "OPENAI_API_KEY")]
)
def test_missing_reranker_key_is_a_value_error_naming_it(
    settings, monkeypatch, provider: str, variable: str
) -> None:
    monkeypatch.delenv(variable, raising=False)
    settings.VERA_RERANKER__PROVIDER = provider
    settings.VERA_RERANKER__MODEL = LLM_MODEL if provider == "llm" else ""
    with pytest.raises(ValueError, match=f"{variable} is not set"):
        wiring.reranking()


def test_sdk_clients_do_not_retry_when_wired(settings, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    settings.VERA_RERANKER__PROVIDER = "llm"
    settings.VERA_RERANKER__MODEL = LLM_MODEL
    reranking = wiring.reranking()
    assert reranking is not None
    inner = reranking.reranker.inner  # type: ignore[attr-defined]
    assert isinstance(inner._client, openai.OpenAI)
    assert (inner._client.max_retries, inner._client.timeout) == (0, 10)
