"""Search in any language: the real local embedders through the real pipeline and API.

- e5 (multilingual) finds a Vietnamese paragraph for an English question;
- MiniLM (English only) does not get to vote on a Vietnamese query: the fusion leans on
  full text, so Vietnamese ranks at least as BM25 ranks it;
- vectors of two models of one dimension never meet in one vector list.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from retrieval import bootstrap
from retrieval.domain.query import Query
from retrieval.models import SearchDocument
from retrieval.services.index import DimensionMismatch, index_claims
from retrieval.services.search import fuse, stage1_lists
from tenants import rls
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant
from vera import wiring

pytestmark = pytest.mark.django_db

VIETNAMESE = {
    "hanoi.md": "# Hà Nội\n\nHà Nội là thủ đô của Việt Nam, nằm bên bờ sông Hồng.\n",
    "panthers.md": "# Panthers\n\nĐội thủ của Panthers chỉ thua 308 điểm trong cả mùa giải.\n",
    "pho.md": "# Phở\n\nPhở là món ăn truyền thống làm từ bánh phở và nước dùng bò.\n",
}


def _hits(client: Client, tenant: Tenant, q: str) -> list[dict]:
    client.force_login(tenant.admin)
    response = client.get("/api/v1/search", {"q": q, "k": 3})
    assert response.status_code == 200, response.content
    return response.json()["hits"]


def test_with_e5_an_english_question_finds_the_vietnamese_paragraph(
    tenant_a: Tenant, tmp_path: Path, client: Client, settings
) -> None:
    settings.VERA_EMBEDDER__PROVIDER = "e5"
    ingest_markdown(tenant_a, tmp_path, VIETNAMESE)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert set(SearchDocument.objects.values_list("embedding_model", flat=True)) == {
            "multilingual-e5-small-q4"
        }

    hits = _hits(client, tenant_a, "What is the capital of Vietnam?")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        result = bootstrap.search()(
            query=Query(text="What is the capital of Vietnam?", k=3), now=timezone.now()
        )

    assert "Hà Nội là thủ đô" in hits[0]["fact"]
    assert result.hits[0].claim_id == hits[0]["claim_id"]
    assert result.hits[0].stage1 == {"fulltext": None, "vector": 1}  # no shared word
    assert (
        "308 điểm"
        in _hits(client, tenant_a, "How many points did the Panthers concede?")[0]["fact"]
    )


def test_with_minilm_a_vietnamese_query_ranks_as_full_text_does(
    tenant_a: Tenant, tmp_path: Path, settings
) -> None:
    settings.VERA_EMBEDDER__PROVIDER = "minilm"
    ingest_markdown(tenant_a, tmp_path, VIETNAMESE)
    embedder = wiring.query_embedder()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        vietnamese = Query(text="món ăn truyền thống nước dùng bò", k=10)
        lists = stage1_lists(vietnamese, embedder=embedder)
        fused, chosen = fuse(vietnamese, lists, embedder=embedder)
        english = Query(text="traditional dish with beef broth", k=10)
        english_lists = stage1_lists(english, embedder=embedder)
        _, english_choice = fuse(english, english_lists, embedder=embedder)

    assert set(lists.rankings) == {"fulltext", "vector"}  # the model still answered...
    assert chosen.reason is not None
    assert "outside the embedder's languages" in chosen.reason
    assert sorted(fused, key=lambda c: -fused[c]) == lists.rankings["fulltext"]  # ...unheard
    # In English, MiniLM keeps its vote; full text, knowing none of these words, sits out.
    assert english_choice.weights == {"fulltext": 0.0, "vector": 1.0}
    assert english_choice.reason == "the index knows 0% of the query's words"


def test_vectors_of_another_model_of_the_same_dimension_are_refused_and_never_compared(
    tenant_a: Tenant, tmp_path: Path, settings
) -> None:
    settings.VERA_EMBEDDER__PROVIDER = "minilm"
    ingest_markdown(tenant_a, tmp_path, VIETNAMESE)
    settings.VERA_EMBEDDER__PROVIDER = "e5"
    e5 = wiring.embedder()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        claim_ids = list(SearchDocument.objects.values_list("claim_id", flat=True))
        with pytest.raises(DimensionMismatch, match="all-MiniLM-L6-v2"):
            index_claims(claim_ids=claim_ids, embedder=e5)
        # Same 384 dimensions, another space: an e5 query vector finds no MiniLM document.
        lists = stage1_lists(Query(text="Hà Nội", k=10), embedder=wiring.query_embedder())

    assert lists.rankings["vector"] == []
    assert lists.rankings["fulltext"]
