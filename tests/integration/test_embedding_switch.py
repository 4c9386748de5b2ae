"""A workspace's embedding model, chosen among those the operator offers.

The deployment's default here is `hashing` (the test settings); the operator also
offers the real multilingual e5 (`VERA_EMBEDDER__CHOICES=e5`). A workspace admin
switches their workspace in the admin; a real maintenance-lane worker re-embeds the
existing documents; search embeds each query once per model it meets and compares
vectors only within a model.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from common.errors import PermissionDenied
from retrieval import bootstrap
from retrieval.domain.query import Query
from retrieval.models import GroupEmbedding, SearchDocument
from retrieval.services.embedding import SwitchRefused, embedding_switch
from retrieval.services.search import stage1_lists
from retrieval.tasks import index_catch_up_workspaces
from tenants import rls
from tenants.models import AuditEvent
from tenants.selectors import principal_system
from tests.support.embedding import E5, ENGLISH, VIETNAMESE, maintenance_worker_offering_e5
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

SWITCH_URL = "/admin/retrieval/groupembedding/switch/"


@pytest.fixture
def offered(settings) -> None:
    settings.VERA_EMBEDDER__CHOICES = ["e5"]


def _models(tenant: Tenant) -> set[str]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return set(SearchDocument.objects.values_list("embedding_model", flat=True))


def _admin_client(client: Client, tenant: Tenant) -> Client:
    tenant.admin.is_staff = True
    tenant.admin.save()
    client.force_login(tenant.admin)
    return client


def _hits(client: Client, q: str) -> list[dict]:
    response = client.get("/api/v1/search", {"q": q, "k": 3})
    assert response.status_code == 200, response.content
    return response.json()["hits"]


@pytest.fixture
def maintenance_worker(app_database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen]:
    with maintenance_worker_offering_e5(app_database_url, tmp_path / "worker.log") as process:
        yield process


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_workspace_switched_in_the_admin_is_re_embedded_by_the_worker(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, client: Client, offered: None,
    maintenance_worker: subprocess.Popen,
) -> None:  # fmt: skip
    ingest_markdown(tenant_a, tmp_path / "a", VIETNAMESE)
    ingest_markdown(tenant_b, tmp_path / "b", ENGLISH)
    assert _models(tenant_a) == _models(tenant_b) == {"hashing-v1-256"}
    client = _admin_client(client, tenant_a)
    question = "What is the capital of Vietnam?"

    page = client.get(SWITCH_URL)
    assert page.status_code == 200
    assert "hashing, e5" in page.content.decode()  # what the operator offers
    refused = client.post(
        SWITCH_URL, {"workspace": tenant_a.workspace.group_id, "provider": "e5", "reason": ""}
    )
    assert refused.status_code == 200  # the form again, with what is missing
    assert "This field is required" in refused.content.decode()
    outside = client.post(
        SWITCH_URL,
        {
            "workspace": tenant_b.workspace.group_id,
            "provider": "e5",
            "reason": "x",
            "confirm": "on",
        },
    )
    assert "Select a valid choice" in outside.content.decode()  # not a workspace it administers

    done = client.post(
        SWITCH_URL,
        {"workspace": tenant_a.workspace.group_id, "provider": "e5",
         "reason": "Vietnamese documents", "confirm": "on"},
    )  # fmt: skip
    assert done.status_code == 302
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        pin = GroupEmbedding.objects.get()
        assert (pin.provider, pin.model, pin.dimension) == ("e5", E5, 384)
        event = AuditEvent.objects.get(action="embedding.switch")
        assert event.data["reason"] == "Vietnamese documents"
        assert event.data["to_reembed"] == 2
        assert event.data["from"] == "hashing"
    # Until re-embedded, a document is not in the vector half (and search does not fail):
    # the question shares no word with the paragraphs, so nothing is found yet.
    assert _models(tenant_a) == {"hashing-v1-256"}
    assert _hits(client, question) == []
    listing = client.get("/admin/retrieval/groupembedding/")
    assert "0 of 2 (re-embedding)" in listing.content.decode()

    outcome = index_catch_up_workspaces.delay().get(timeout=180)

    assert outcome == {tenant_a.workspace.group_id: "re-embedded 2; 0 of 2 left"}
    assert _models(tenant_a) == {E5}
    assert _models(tenant_b) == {"hashing-v1-256"}  # another workspace keeps its model
    hits = _hits(client, question)
    assert "Hà Nội là thủ đô" in hits[0]["fact"]  # found by e5's vectors: no shared word
    # New documents are embedded with the workspace's model at once.
    ingest_markdown(tenant_a, tmp_path / "a2", {"hue.md": "# Huế\n\nHuế là cố đô.\n"}, name="more")
    assert _models(tenant_a) == {E5}
    listing = client.get("/admin/retrieval/groupembedding/").content.decode()
    assert "3 of 3" in listing
    assert "(re-embedding)" not in listing


@pytest.mark.django_db
def test_a_search_over_workspaces_on_two_models_keeps_one_vector_list_per_model(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, offered: None
) -> None:
    ingest_markdown(tenant_a, tmp_path / "a", VIETNAMESE)
    ingest_markdown(tenant_b, tmp_path / "b", ENGLISH)
    call_command(
        "embedding_switch", "--group", tenant_a.workspace.group_id, "--provider", "e5",
        "--reason", "Vietnamese documents", "--now", stdout=StringIO(),
    )  # fmt: skip
    both = principal_system("test", group_ids=[tenant_a.workspace.group_id,
                                               tenant_b.workspace.group_id])  # fmt: skip
    with rls.tenant_context(both):
        claims = dict(SearchDocument.objects.values_list("claim_id", "group_id"))
        lists = stage1_lists(
            Query(text="capital of Vietnam billing", k=10),
            embedder=bootstrap.providers().embedders(),
        )
        result = bootstrap.search()(
            query=Query(text="thủ đô billing-api", k=10), now=timezone.now()
        )
    vectors = {name: ids for name, ids in lists.rankings.items() if name != "fulltext"}
    assert set(vectors) == {"vector", f"vector@{E5}"}
    assert {claims[c] for c in vectors["vector"]} == {tenant_b.workspace.group_id}
    assert {claims[c] for c in vectors[f"vector@{E5}"]} == {tenant_a.workspace.group_id}
    assert {claims[hit.claim_id] for hit in result.hits} == set(claims.values())
    assert all(set(hit.stage1) == {"fulltext", "vector"} for hit in result.hits)


@pytest.mark.django_db
def test_a_switch_is_refused_with_the_reason(tenant_a: Tenant, offered: None) -> None:
    catalog = bootstrap.providers().embedders()
    group_id = tenant_a.workspace.group_id
    admin, reviewer = tenant_a.principal(tenant_a.admin), tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(admin):
        with pytest.raises(PermissionDenied, match="admin role"):
            embedding_switch(
                actor=reviewer, group_id=group_id, provider="e5", catalog=catalog, reason="x"
            )
        with pytest.raises(SwitchRefused, match="not offered here; choose one of hashing, e5"):
            embedding_switch(
                actor=admin, group_id=group_id, provider="openai", catalog=catalog, reason="x"
            )
        with pytest.raises(SwitchRefused, match="say why"):
            embedding_switch(
                actor=admin, group_id=group_id, provider="e5", catalog=catalog, reason=" "
            )
        assert not GroupEmbedding.objects.exists()
        assert not AuditEvent.objects.filter(action="embedding.switch").exists()
    with pytest.raises(CommandError, match="not offered here"):
        call_command(
            "embedding_switch", "--group", group_id, "--provider", "voyage", "--reason", "x"
        )


@pytest.mark.django_db
def test_switching_back_re_embeds_with_the_first_model(
    tenant_a: Tenant, tmp_path: Path, offered: None
) -> None:
    ingest_markdown(tenant_a, tmp_path, ENGLISH)
    out = StringIO()
    group_id = tenant_a.workspace.group_id
    for provider in ("e5", "hashing"):
        call_command(
            "embedding_switch", "--group", group_id, "--provider", provider, "--reason", "try",
            "--now", stdout=out,
        )  # fmt: skip
    assert _models(tenant_a) == {"hashing-v1-256"}
    assert f"{group_id}: hashing hashing-v1-256 (256), 2 of 2 documents on it" in out.getvalue()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        switches = AuditEvent.objects.filter(action="embedding.switch").order_by("pk")
        assert [(e.data["from"], e.data["to"]) for e in switches] == [
            ("hashing", "e5"),
            ("e5", "hashing"),
        ]


@pytest.mark.django_db
def test_a_workspace_on_a_model_no_longer_offered_is_found_by_full_text(
    tenant_a: Tenant, tmp_path: Path, client: Client, settings, offered: None
) -> None:
    ingest_markdown(tenant_a, tmp_path, ENGLISH)
    call_command(
        "embedding_switch", "--group", tenant_a.workspace.group_id, "--provider", "e5",
        "--reason", "try", "--now", stdout=StringIO(),
    )  # fmt: skip
    settings.VERA_EMBEDDER__CHOICES = []  # the operator withdrew e5
    client.force_login(tenant_a.admin)
    hits = _hits(client, "billing-api")
    assert "billing-api" in hits[0]["fact"]
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        result = bootstrap.search()(query=Query(text="billing-api", k=3), now=timezone.now())
    assert result.hits[0].claim_id == hits[0]["claim_id"]
    assert result.hits[0].stage1 == {"fulltext": 1, "vector": None}  # e5 vectors sit unused
