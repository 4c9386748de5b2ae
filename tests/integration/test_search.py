"""Search end to end: ingestion -> outbox -> index -> ranked, cited, time-aware hits."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.test import Client

from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.models import SearchDocument, SearchHit
from retrieval.services.index import DimensionMismatch, index_claims
from tenants import rls
from tests.support.ingest import T0, ingest_folder, ingest_markdown, write_at
from tests.support.lifecycle import history_written_by_hand
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
SIGNALS = {"relevance", "authority", "verification", "recency", "feedback", "confidence"}


@pytest.fixture
def corpus(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    docs = {
        "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
        "ledger.md": "# Ledger\n\nThe ledger-db stores the double-entry books.\n",
        "hanoi.md": "# Hà Nội\n\nDịch vụ thanh toán chạy trên cụm máy chủ Hà Nội.\n",
    }
    ingest_markdown(tenant_a, tmp_path, docs, at=T0)
    tenant_a.root = tmp_path  # type: ignore[attr-defined]
    return tenant_a


def _search(client: Client, tenant: Tenant, **params: object) -> dict:
    client.force_login(tenant.admin)
    response = client.get("/api/v1/search", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_search_returns_ranked_cited_hits_with_their_signals(
    corpus: Tenant, client: Client
) -> None:
    body = _search(client, corpus, q="where does billing-api run", k=5)
    top = body["hits"][0]
    assert top["predicate"] in {"RUNS_ON", "STATES"}
    assert "k8s-prod-1" in top["fact"]
    assert set(top["signals"]) == {*SIGNALS, "understood"}
    assert all(0.0 <= v <= 1.0 for v in top["signals"].values())
    assert top["citations"][0]["episode"] == "billing.md"
    assert [h["score"] for h in body["hits"]] == sorted(
        (h["score"] for h in body["hits"]), reverse=True
    )
    with rls.tenant_context(corpus.principal(corpus.admin)):
        logged = SearchHit.objects.get(pk=top["id"])
    assert logged.signals == top["signals"]


def test_superseded_facts_are_hidden_now_and_visible_as_of_the_past(
    corpus: Tenant, client: Client
) -> None:
    later = T0 + dt.timedelta(days=30)
    write_at(corpus.root, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-2.\n", later)
    principal = corpus.principal(corpus.admin)
    with rls.tenant_context(principal):
        from curation.models import Source

        source = Source.objects.get(name="docs")
    ingest_now(source_id=source.pk, group_id=source.group_id)
    process_outbox()
    now = _search(client, corpus, q="billing-api runs on", predicate="RUNS_ON")
    assert [h["fact"] for h in now["hits"]] == ["The billing-api runs on k8s-prod-2."]
    past = (T0 + dt.timedelta(days=1)).isoformat()
    then = _search(client, corpus, q="billing-api runs on", predicate="RUNS_ON", as_of=past)
    assert [(h["fact"], h["status"]) for h in then["hits"]] == [
        ("The billing-api runs on k8s-prod-1.", "superseded")
    ]


def test_feedback_is_recorded_and_moves_the_feedback_signal(corpus: Tenant, client: Client) -> None:
    first = _search(client, corpus, q="ledger-db double-entry books")["hits"][0]
    assert first["signals"]["feedback"] == 0.5  # no votes: neutral
    response = client.post(
        "/api/v1/feedback",
        {"hit_id": first["id"], "helpful": True},
        content_type="application/json",
    )
    assert response.status_code == 201
    again = _search(client, corpus, q="ledger-db double-entry books")["hits"]
    same = next(h for h in again if h["claim_id"] == first["claim_id"])
    assert same["signals"]["feedback"] == pytest.approx(2 / 3)


def test_vietnamese_matches_by_its_exact_accented_form(corpus: Tenant, client: Client) -> None:
    body = _search(client, corpus, q="Hà Nội")
    assert "Hà Nội" in body["hits"][0]["fact"]


@pytest.mark.parametrize(
    "params",
    [
        {"q": ""},
        {"q": "   "},
        {"q": "x" * 2001},
        {"q": "a", "k": 0},
        {"q": "a", "k": 101},
        {"q": "a", "k": "ten"},
        {"q": "a", "as_of": "yesterday"},
        {"q": "a", "as_of": "2026-01-01T00:00:00"},
        {"q": "a", "colour": "red"},
        {"q": "a", "tier": 9},
    ],
)
def test_bad_queries_are_400_with_a_message(corpus: Tenant, client: Client, params: dict) -> None:
    client.force_login(corpus.admin)
    response = client.get("/api/v1/search", params)
    assert response.status_code == 400
    assert response.json()


@pytest.mark.parametrize(
    "text",
    ["billing & !ledger | run:*", "'; DROP TABLE claims; --", "\u202e\u0000billing\ufeff", "((("],
)
def test_query_syntax_and_unicode_tricks_are_just_text(
    corpus: Tenant, client: Client, text: str
) -> None:
    client.force_login(corpus.admin)
    response = client.get("/api/v1/search", {"q": text})
    assert response.status_code in (200, 400)
    if response.status_code == 400:
        assert "q" in response.json()


def test_another_tenant_finds_nothing(corpus: Tenant, tenant_b: Tenant, client: Client) -> None:
    assert _search(client, tenant_b, q="billing-api")["hits"] == []


def test_a_group_refuses_vectors_of_another_dimension(corpus: Tenant) -> None:
    with rls.tenant_context(corpus.principal(corpus.admin)):
        claim_id = SearchDocument.objects.values_list("claim_id", flat=True).first()
        with pytest.raises(DimensionMismatch, match="Reprocess"):
            index_claims(claim_ids=[claim_id], embedder=HashingEmbedder(dimension=384))


def test_feedback_on_an_unknown_hit_is_404(corpus: Tenant, client: Client) -> None:
    client.force_login(corpus.admin)
    response = client.post(
        "/api/v1/feedback", {"hit_id": 999999, "helpful": True}, content_type="application/json"
    )
    assert response.status_code == 404


def test_reindex_with_a_new_model_needs_the_reset_and_then_repins(corpus: Tenant) -> None:
    from io import StringIO

    from django.core.management import call_command

    from retrieval.models import GroupEmbedding

    out = StringIO()
    call_command("search_reindex", "--group", corpus.workspace.group_id, stdout=out)
    assert "indexed" in out.getvalue()
    with pytest.raises(DimensionMismatch), rls.tenant_context(corpus.principal(corpus.admin)):
        index_claims(
            claim_ids=list(SearchDocument.objects.values_list("claim_id", flat=True)[:1]),
            embedder=HashingEmbedder(dimension=384),
        )
    call_command(
        "search_reindex", "--group", corpus.workspace.group_id, "--reset-model", stdout=out
    )
    with rls.tenant_context(corpus.principal(corpus.admin)):
        assert GroupEmbedding.objects.get().dimension == 256


def test_the_portal_search_box_uses_the_same_service(corpus: Tenant, client: Client) -> None:
    client.force_login(corpus.viewer)
    html = client.get("/search/", {"q": "billing-api k8s-prod-1"}).content.decode()
    assert "k8s-prod-1" in html
    assert "the query is empty" in client.get("/search/", {"q": " ", "k": "5"}).content.decode()


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.append(len(texts))
        return super().embed(texts)


def test_a_batch_is_embedded_in_one_model_call(tenant_a: Tenant, tmp_path: Path) -> None:
    from curation.domain.outbox import Consumer
    from curation.models import OutboxJob
    from curation.services.outbox import outbox_process
    from retrieval.adapters.embedders import CachedEmbedder
    from retrieval.services.index import index_job, index_prepare

    docs = {
        "a.md": "# A\n\nThe api-a runs on node-1.\n",
        "b.md": "# B\n\nThe api-b runs on node-2.\n",
    }
    ingest_folder(tenant_a, tmp_path, docs, at=T0)
    principal = tenant_a.principal(tenant_a.admin)
    counting = CountingEmbedder()
    cached = CachedEmbedder(counting)
    with rls.tenant_context(principal):
        jobs = OutboxJob.objects.filter(kind="claim.project", consumer="index").count()
        outcome = outbox_process(
            consumer=Consumer.INDEX,
            handlers={"claim.project": lambda job: index_job(job, embedder=cached)},
            prepare=lambda batch: index_prepare(batch, embedder=cached),
        )
    assert outcome == {"done": jobs}
    assert counting.calls == [jobs]  # one call for the batch, every job a cache hit


def test_retracted_facts_are_hidden_now_and_visible_as_of_the_past(
    corpus: Tenant, client: Client
) -> None:
    from django.db import transaction

    from curation.models import Claim
    from curation.services.outbox import outbox_enqueue

    retracted_at = T0 + dt.timedelta(days=10)
    with rls.tenant_context(corpus.principal(corpus.admin)), transaction.atomic():
        # What withdrawing a source does to its published claims: end them, re-project.
        claim = Claim.objects.get(fact_text__contains="ledger-db stores")
        with history_written_by_hand():
            Claim.objects.filter(pk=claim.pk).update(status="retracted", valid_to=retracted_at)
        outbox_enqueue(
            group_id=claim.group_id, kind="claim.project", payload={"claim_id": claim.pk}
        )
    process_outbox()
    now = _search(client, corpus, q="ledger-db double-entry books")
    assert claim.pk not in [hit["claim_id"] for hit in now["hits"]]
    before = (retracted_at - dt.timedelta(days=1)).isoformat()
    then = _search(client, corpus, q="ledger-db double-entry books", as_of=before)
    assert (claim.pk, "retracted") in [(hit["claim_id"], hit["status"]) for hit in then["hits"]]
    after = (retracted_at + dt.timedelta(days=1)).isoformat()
    later = _search(client, corpus, q="ledger-db double-entry books", as_of=after)
    assert claim.pk not in [hit["claim_id"] for hit in later["hits"]]


def test_search_reports_its_steps_in_server_timing(corpus: Tenant, client: Client) -> None:
    client.force_login(corpus.admin)
    response = client.get("/api/v1/search", {"q": "billing-api"})
    metrics = dict(part.strip().split(";dur=") for part in response["Server-Timing"].split(","))
    assert {"lexical", "embed", "vector", "blend", "log", "app"} <= set(metrics)
    # and what lies outside the stages: the way in, citing, serialising, the way out
    assert {"pre", "cite", "serialize", "post"} <= set(metrics)
    assert all(float(ms) >= 0 for ms in metrics.values())
    assert float(metrics["app"]) >= float(metrics["lexical"])
    steps = sum(float(ms) for name, ms in metrics.items() if name != "app")
    assert steps <= float(metrics["app"]) + 0.5  # rounding: the parts do not overlap


def test_search_runs_a_fixed_number_of_queries_whatever_the_hit_count(
    corpus: Tenant, client: Client
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(corpus.admin)
    counts, hits = [], []
    for k in (1, 10):
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/v1/search", {"q": "billing ledger Hà Nội", "k": k})
        hits.append(len(response.json()["hits"]))
        counts.append(len(queries))
    assert hits[0] == 1 < hits[1]  # more hits, more citations to fetch...
    assert counts[0] == counts[1]  # ... in the same queries


class _BrokenEmbedder:
    """An embedder whose provider is down (its circuit open)."""

    model, dimension = "hashing-v1", 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        from kernel.resilience import CircuitOpen

        raise CircuitOpen("embedder", retry_after_s=30.0)


def test_search_answers_by_text_alone_when_the_query_embedding_fails(
    corpus: Tenant, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval import bootstrap
    from retrieval.adapters.embedders import Catalog

    providers = bootstrap.providers()
    offered = providers.embedders()
    broken = Catalog(
        default=offered.default,
        models={offered.default: (lambda: offered.passage(offered.default), _BrokenEmbedder)},
    )
    monkeypatch.setattr(type(providers), "embedders", lambda self: broken)
    body = _search(client, corpus, q="ledger-db double-entry books")
    assert body["degraded"] == ["vector"]
    assert "ledger-db" in body["hits"][0]["fact"]


def test_fusion_weights_let_the_lexical_list_decide_when_vector_counts_zero(
    corpus: Tenant, settings
) -> None:
    """Weighted RRF is wired: a vector list weighted 0 is left out, its finds are no hits."""
    from django.utils import timezone

    from retrieval import bootstrap
    from retrieval.services.search import Query

    def relevance_outside_fulltext() -> list[float]:
        with rls.tenant_context(corpus.principal(corpus.admin)):
            result = bootstrap.search()(query=Query(text="billing-api", k=10), now=timezone.now())
        return [h.signals["relevance"] for h in result.hits if h.stage1.get("fulltext") is None]

    settings.VERA_SEARCH__FUSION_WEIGHTS = ""
    plain = relevance_outside_fulltext()
    assert plain, "the vector list should find claims the full-text list does not"
    assert max(plain) > 0.0
    settings.VERA_SEARCH__FUSION_WEIGHTS = "fulltext=1.0,vector=0.0"
    assert relevance_outside_fulltext() == []


def test_a_small_workspace_in_a_large_vector_index_gets_its_whole_vector_list(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    """The shared HNSW scan gives up after `hnsw.max_scan_tuples`; the short answer is
    then ranked exactly over the workspace's own rows, so none of them is lost."""
    from django.db import connection

    from retrieval import bootstrap
    from retrieval.domain.query import Query
    from retrieval.services.search import stage1_lists

    services = {f"doc{n}.md": f"# Doc {n}\n\nThe service svc-{n} runs on k8s.\n" for n in range(40)}
    ingest_markdown(tenant_a, tmp_path / "a", services, at=T0)
    teams = {f"b{n}.md": f"# Team {n}\n\nTeam {n} owns the payroll.\n" for n in range(3)}
    ingest_markdown(tenant_b, tmp_path / "b", teams, at=T0)
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        own = set(SearchDocument.objects.values_list("claim_id", flat=True))
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.max_scan_tuples = 1")  # a scan that gives up early
            cursor.execute("SET LOCAL enable_seqscan = off")  # as a large index would be used
        lists = stage1_lists(
            Query(text="service on k8s", k=10), embedder=bootstrap.providers().query_embedder()
        )

    assert len(own) >= 3
    assert set(lists.rankings["vector"]) == own  # every one, though none shares a word
