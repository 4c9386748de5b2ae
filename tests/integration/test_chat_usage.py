"""Tokens and cost of every provider call, not only the embedders': the LLM extractor, the
judges and the rerankers, built as the composition root builds them, call a local stand-in
through the real openai / voyageai clients; what the stand-in bills is metered, charged
to the group the work is for, flushed by beat's task and shown on the admin's cost page."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import voyageai
from django.test import Client
from prometheus_client import REGISTRY

from curation.usecases import ingest_now
from retrieval.adapters.embedders.cached import CachedEmbedder
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.adapters.rerankers import VoyageReranker
from retrieval.domain.usage import SHARED
from retrieval.models import ProviderUsage
from retrieval.tasks import flush_provider_usage
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tests.support.fake_models import StubModelAPI, rerank_answer, serving
from tests.support.tenancy import Tenant, markdown_source
from vera import wiring

pytestmark = pytest.mark.django_db
COST_PAGE = "/admin/retrieval/providerusage/"
MODEL = "gpt-4o-mini"  # USD 0.15 in, 0.60 out per million tokens
TOKENS = (2_000_000, 500_000)  # billed per chat request below: 0.30 + 0.30 = USD 0.60
CHAT_COST = 0.60
NO_CLAIMS = json.dumps({"claims": []})
Row = tuple[int, int, float]  # calls, tokens, USD


@pytest.fixture
def model_api(settings, monkeypatch) -> Iterator[StubModelAPI]:
    """The stand-in API, with every chat model role configured to call it."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with serving(StubModelAPI()) as stub:
        settings.VERA_EXTRACTOR__LLM_MODEL = settings.VERA_JUDGE__LLM_MODEL = MODEL
        settings.VERA_RERANKER__MODEL = MODEL
        settings.VERA_EXTRACTOR__LLM_BASE_URL = stub.base_url
        settings.VERA_JUDGE__LLM_BASE_URL = stub.base_url
        settings.VERA_RERANKER__BASE_URL = stub.base_url
        settings.VERA_RERANKER__PROVIDER = "llm"
        yield stub


@pytest.fixture(autouse=True)
def ledger() -> None:
    """This test database's ledger, emptied of what earlier tests metered."""
    wiring.usage_ledger().drain()


def _rows(tenant: Tenant) -> dict[tuple[str, str], Row]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return {
            (row.provider, row.model): (row.calls, row.tokens, float(row.cost_usd))
            for row in ProviderUsage.objects.all()
        }


def _ingest_one_document(tenant: Tenant, root: Path) -> None:
    root.mkdir()
    (root / "billing.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    report = ingest_now(
        source_id=markdown_source(tenant, root, tier=1), group_id=tenant.workspace.group_id
    )
    assert report.status == "ok", report.error


def test_an_ingest_runs_llm_extraction_is_charged_to_its_workspace_when_flushed(
    model_api: StubModelAPI, tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    model_api.reply(NO_CLAIMS, tokens=TOKENS)

    _ingest_one_document(tenant_a, tmp_path / "docs")
    flush_provider_usage()

    assert _rows(tenant_a)[("LLMExtractor", MODEL)] == (1, sum(TOKENS), pytest.approx(CHAT_COST))
    assert _rows(tenant_b) == {}


def test_each_judge_is_charged_under_its_own_name_when_it_judges(
    model_api: StubModelAPI, tenant_b: Tenant
) -> None:
    model_api.reply(json.dumps({"same": True, "confidence": 0.99}), tokens=TOKENS)
    model_api.reply(json.dumps({"replaces": True, "confidence": 0.99}), tokens=(100, 10))
    equivalence, contradiction = wiring.judges()
    assert equivalence is not None
    assert contradiction is not None

    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        equivalence.same_entity("PG", "PostgreSQL", entity_type="database")
        contradiction.replaces("depends on redis-7", "depends on redis-6")
    flush_provider_usage()

    rows = _rows(tenant_b)
    assert rows[("LLMEquivalenceJudge", MODEL)] == (1, sum(TOKENS), pytest.approx(CHAT_COST))
    assert rows[("LLMContradictionJudge", MODEL)][:2] == (1, 110)


def test_reranking_a_search_over_two_workspaces_is_charged_to_shared_when_flushed(
    model_api: StubModelAPI, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    model_api.reply(json.dumps({"scores": [0.9, 0.2]}), tokens=TOKENS)
    reranking = wiring.reranking()
    assert reranking is not None
    both = Principal(
        label="test", roles={tenant_a.workspace.group_id: Role.VIEWER,
                             tenant_b.workspace.group_id: Role.VIEWER},
    )  # fmt: skip

    with rls.tenant_context(both):
        reranking.reranker.score("where does billing-api run", ["k8s-prod-1", "a lunch menu"])
    flush_provider_usage()

    assert _rows(tenant_a) == _rows(tenant_b) == {}
    with rls.tenant_context(Principal(label="test", roles={SHARED: Role.OWNER})):
        row = ProviderUsage.objects.get(provider="LLMReranker", model=MODEL)
    assert (row.calls, row.tokens) == (1, sum(TOKENS))


def test_chat_tokens_and_cost_reach_prometheus_through_the_wired_meter(
    model_api: StubModelAPI, tenant_a: Tenant
) -> None:
    model_api.reply(json.dumps({"same": False, "confidence": 0.99}), tokens=TOKENS)
    labels = {"provider": "LLMEquivalenceJudge", "model": MODEL}
    names = ("vera_provider_tokens_total", "vera_provider_cost_usd_total")
    before = [REGISTRY.get_sample_value(name, labels) or 0.0 for name in names]
    equivalence, _ = wiring.judges()
    assert equivalence is not None

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        equivalence.same_entity("billing-api", "billing-worker", entity_type="service")

    after = [REGISTRY.get_sample_value(name, labels) or 0.0 for name in names]
    assert after[0] - before[0] == sum(TOKENS)
    assert after[1] - before[1] == pytest.approx(CHAT_COST)


def test_the_cost_page_shows_chat_and_rerank_rows_beside_the_embedders(
    model_api: StubModelAPI, tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    model_api.reply(NO_CLAIMS, tokens=TOKENS)
    model_api.answer(200, rerank_answer({0: 0.8, 1: 0.1}, tokens=1_000_000))  # USD 0.05
    voyage = voyageai.Client(api_key="test", base_url=model_api.base_url, max_retries=0)
    reranker = VoyageReranker(client=voyage, meter=wiring.provider_meter())
    embedder = CachedEmbedder(HashingEmbedder(), meter=wiring.provider_meter())

    _ingest_one_document(tenant_a, tmp_path / "docs")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        reranker.score("billing", ["k8s-prod-1", "lunch"])
        embedder.embed([f"cost {uuid.uuid4().hex}"])  # 37 characters: 10 tokens, local
    flush_provider_usage()
    tenant_a.admin.is_staff = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)
    page = client.get(COST_PAGE).content.decode()

    for provider, model in (("LLMExtractor", MODEL), ("VoyageReranker", "rerank-2.5"),
                            ("HashingEmbedder", HashingEmbedder().model)):  # fmt: skip
        assert f">{provider}<" in page
        assert f">{model}<" in page
    assert "<strong>3</strong> calls" in page
    assert f"<strong>{sum(TOKENS) + 1_000_000 + 10}</strong> tokens" in page
    assert "<strong>$0.6500</strong>" in page
