"""Erasure and the search log: a query that quoted erased content does not keep quoting it.

Real pipeline (Markdown sources), real search (its hits logged), real erasure under RLS.
A search for a word or a name that only the erased document held leaves that text in
`SearchHit.query_text`, also on hits of claims that stay; the erasure redacts it, and
the residual scan looks for it by keyed term fingerprint.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.utils import timezone

from curation import bootstrap as curation_bootstrap
from curation.models import Source, Tombstone
from curation.tasks import process_outbox
from retrieval import bootstrap
from retrieval.domain.query import Query
from retrieval.models import SearchHit
from retrieval.services.erasure import erase, erasure_cleanup, erasure_scan
from tenants import rls
from tenants.selectors import principal_system
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

MARKER = "quorvantix"
NAME = "Henrietta Vasquez-Olmo"
ERASED = {"visitors.md": f"# Visitors\n\nThe {MARKER} badge was issued to {NAME} on arrival.\n"}
KEPT = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}
UNRELATED = "billing-api k8s-prod-1"


def _search(tenant: Tenant, text: str) -> list[int]:
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = bootstrap.search()(query=Query(text=text, k=10), now=timezone.now())
    return [hit.claim_id for hit in result.hits]


def _query_texts(tenant: Tenant) -> dict[int, str]:
    """Every logged hit's query text, by hit id (read as a system job of the workspace)."""
    with rls.tenant_context(principal_system("test", group_ids=[tenant.workspace.group_id])):
        return dict(SearchHit.objects.values_list("pk", "query_text"))


def _erase_source(tenant: Tenant, name: str) -> Tombstone:
    """Erase the tenant's source `name` as its admin, then run the cleanup."""
    admin = tenant.principal(tenant.admin)
    stores, catalog = curation_bootstrap.providers(), bootstrap.providers().embedders()
    with rls.tenant_context(admin):
        source = Source.objects.get(name=name)
        tombstone = erase(
            actor=admin, kind="source", target_id=source.pk, reason="a person's request",
            confirm=True, catalog=catalog,
        )  # fmt: skip
        erasure_cleanup(
            tombstone, graph=stores.graph(), store=stores.object_store(), catalog=catalog
        )
    while process_outbox():
        pass
    return tombstone


def _scan(tenant: Tenant, tombstone: Tombstone) -> dict[str, list[str]]:
    stores, catalog = curation_bootstrap.providers(), bootstrap.providers().embedders()
    with rls.tenant_context(principal_system("test", group_ids=[tenant.workspace.group_id])):
        fresh = Tombstone.objects.get(pk=tombstone.pk)
        return erasure_scan(
            fresh, graph=stores.graph(), store=stores.object_store(), catalog=catalog
        ).found


@pytest.fixture
def searched(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """A workspace with a source to erase and one that stays, searched for both."""
    ingest_markdown(tenant_a, tmp_path / "erased", ERASED, name="visitors")
    ingest_markdown(tenant_a, tmp_path / "kept", KEPT, name="billing")
    for text in (MARKER, NAME, UNRELATED):
        assert _search(tenant_a, text), text
    return tenant_a


def test_no_logged_query_quotes_erased_content_when_its_source_is_erased(
    searched: Tenant,
) -> None:
    before = _query_texts(searched)
    assert any(MARKER in text for text in before.values())
    assert any(NAME in text for text in before.values())
    unrelated = {pk for pk, text in before.items() if text == UNRELATED}

    tombstone = _erase_source(searched, "visitors")

    after = _query_texts(searched)
    assert not [text for text in after.values() if MARKER in text or NAME in text]
    kept = {after[pk] for pk in unrelated if pk in after}  # its hits on the other source
    assert kept == {UNRELATED}
    assert MARKER not in str(tombstone.cleanup) + str(tombstone.counts)
    assert _scan(searched, tombstone) == {}


def test_the_scan_reports_a_logged_query_with_an_erased_term_when_one_is_left(
    searched: Tenant,
) -> None:
    tombstone = _erase_source(searched, "visitors")
    group_id = searched.workspace.group_id
    with rls.tenant_context(searched.principal(searched.admin)):
        left = SearchHit.objects.create(
            group_id=group_id, query_id="00000000-0000-0000-0000-000000000042",
            query_text=f"who holds the {MARKER.upper()} badge?", claim_id=1, rank=1,
            score=0.1, signals={},
        )  # fmt: skip
        SearchHit.objects.filter(pk=left.pk).update(
            created_at=tombstone.created_at - dt.timedelta(minutes=5)
        )

    assert _scan(searched, tombstone) == {"query texts": [str(left.pk)]}
