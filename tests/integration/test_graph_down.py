"""A graph outage stops only the graph consumer: search indexing goes on, the graph catches up."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from curation import bootstrap
from curation.domain.outbox import Consumer
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, OutboxJob
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from devtools.graph_server import GraphServer
from tenants import rls
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db


def _jobs(tenant: Tenant, consumer: Consumer) -> dict[str, int]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = OutboxJob.objects.filter(consumer=consumer).values_list("status", "attempts")
        return {
            "pending": sum(1 for status, _ in rows if status == "pending"),
            "done": sum(1 for status, _ in rows if status == "done"),
            "attempts": sum(attempts for _, attempts in rows),
        }


def test_search_indexing_goes_on_while_the_graph_is_down_and_the_graph_catches_up(
    tenant_a: Tenant, tmp_path: Path, graph_server: GraphServer, client: Client
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pay.md").write_text("# Payments\n\nThe payments-api runs on k8s-prod-7.\n")
    source_id = markdown_source(tenant_a, docs, tier=1)
    principal = tenant_a.principal(tenant_a.admin)
    graph_server.stop()
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    with rls.tenant_context(principal):
        published = Claim.objects.filter(status=ClaimStatus.PUBLISHED).count()

    assert process_outbox(consumer="index") == {"done": published}
    assert process_outbox(consumer="graph") == {"waiting": 1}
    # The graph's jobs wait untouched: no attempt is spent while its server is down.
    assert _jobs(tenant_a, Consumer.GRAPH) == {"pending": published, "done": 0, "attempts": 0}
    client.force_login(tenant_a.admin)
    hits = client.get("/api/v1/search", {"q": "payments-api runs on"}).json()["hits"]
    assert any("k8s-prod-7" in hit["fact"] for hit in hits)

    graph_server.start()
    assert process_outbox(consumer="graph") == {"done": published}
    assert bootstrap.providers().graph().count_claims() == published
    assert _jobs(tenant_a, Consumer.GRAPH)["pending"] == 0
