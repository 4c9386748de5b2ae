"""Stage 3 through the search API: the configured cross-encoder re-scores the top N.

The reranker is the real LLM adapter on the real `openai` client, pointed at a local
model API; nothing in between is faked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.test import Client

from tests.integration.test_search import _search, corpus  # noqa: F401 - the shared fixture
from tests.support.fake_models import StubModelAPI, serving
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
QUERY = "where does billing-api run"


@pytest.fixture
def model_api() -> Iterator[StubModelAPI]:
    with serving(StubModelAPI()) as stub:
        yield stub


@pytest.fixture
def llm_reranking(settings, monkeypatch, model_api: StubModelAPI) -> StubModelAPI:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-stage3")
    settings.VERA_RERANKER__PROVIDER = "llm"
    settings.VERA_RERANKER__MODEL = "gpt-4o-mini"
    settings.VERA_RERANKER__BASE_URL = model_api.base_url
    settings.VERA_RERANKER__TOP_N = 2
    settings.VERA_RERANKER__WEIGHT = 1.0
    return model_api


def _order(body: dict) -> list[int]:
    return [hit["claim_id"] for hit in body["hits"]]


def test_stage3_is_off_and_scores_nothing_when_not_configured(
    corpus: Tenant,  # noqa: F811
    client: Client,
) -> None:
    body = _search(client, corpus, q=QUERY)
    assert body["stage3"] == "off"
    assert all(hit["rerank"] is None for hit in body["hits"])


def test_the_cross_encoder_reorders_the_top_n_when_configured(
    corpus: Tenant,  # noqa: F811
    client: Client,
    llm_reranking: StubModelAPI,
    settings,
) -> None:
    settings.VERA_RERANKER__PROVIDER = ""
    stage2 = _order(_search(client, corpus, q=QUERY))
    assert len(stage2) >= 3
    settings.VERA_RERANKER__PROVIDER = "llm"
    llm_reranking.reply_json({"scores": [0.1, 0.9]})  # the second candidate answers best
    body = _search(client, corpus, q=QUERY)
    assert body["stage3"] == "applied"
    assert _order(body) == [stage2[1], stage2[0], *stage2[2:]]
    assert [hit["rerank"] for hit in body["hits"][:3]] == [0.9, 0.1, None]
    (request,) = llm_reranking.requests
    prompt = request["body"]["messages"][-1]["content"]
    assert QUERY in prompt
    assert "k8s-prod-1" in json.dumps(request["body"])


def test_search_answers_in_stage2_order_when_the_reranker_fails(
    corpus: Tenant,  # noqa: F811
    client: Client,
    llm_reranking: StubModelAPI,
    settings,
) -> None:
    settings.VERA_RERANKER__PROVIDER = ""
    stage2 = _search(client, corpus, q=QUERY)
    settings.VERA_RERANKER__PROVIDER = "llm"
    llm_reranking.fail(400, "model not found", kind="invalid_request_error")
    body = _search(client, corpus, q=QUERY)
    assert body["stage3"] == "unavailable"
    assert _order(body) == _order(stage2)
    assert [hit["score"] for hit in body["hits"]] == [hit["score"] for hit in stage2["hits"]]
