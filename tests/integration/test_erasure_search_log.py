"""Erasure and the search log: a query that quoted erased content does not keep quoting it.

Real pipeline (Markdown sources), real search (its hits logged), real erasure under RLS.
A search for a word or a name that only the erased document held leaves that text in
`SearchHit.query_text`, also on hits of claims that stay, and in the question of a kept
context pack that cites only what stays; the erasure redacts both, and the residual
scan looks for them by keyed term fingerprint.
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
from retrieval.models import ContextPack, SearchHit
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


def _kept_pack(tenant: Tenant, question: str, *, pack: int) -> ContextPack:
    """A kept pack asking `question` that cites only claims that stay (the billing ones)."""
    admin = tenant.principal(tenant.admin)
    with rls.tenant_context(admin):
        kept = list(
            SearchHit.objects.filter(query_text=UNRELATED).values_list("claim_id", flat=True)
        )
        return ContextPack.objects.create(
            group_id=tenant.workspace.group_id, pack_id=f"00000000-0000-0000-0000-{pack:012d}",
            query_text=question, as_of=timezone.now(), assembler_version=1, tokenizer="t",
            token_budget=50, tokens=10, claim_ids=kept[:1], episode_ids=[],
            text="The billing-api runs on k8s-prod-1.",
        )  # fmt: skip


def _pack_questions(tenant: Tenant) -> dict[int, str]:
    with rls.tenant_context(principal_system("test", group_ids=[tenant.workspace.group_id])):
        return dict(ContextPack.objects.values_list("pk", "query_text"))


def test_a_kept_pack_citing_what_stays_keeps_no_erased_name_in_its_question(
    searched: Tenant,
) -> None:
    quoting = _kept_pack(searched, f"Does {NAME} use the billing-api?", pack=1)
    plain = _kept_pack(searched, "Where does the billing-api run?", pack=2)

    tombstone = _erase_source(searched, "visitors")

    assert _pack_questions(searched) == {
        quoting.pk: "[erased]",  # cited nothing erased: kept, its question redacted
        plain.pk: "Where does the billing-api run?",
    }
    assert tombstone.counts["pack_queries_redacted"] == 1
    assert _scan(searched, tombstone) == {}

    # The scan is not blind: a question left quoting the name is found.
    with rls.tenant_context(searched.principal(searched.admin)):
        ContextPack.objects.filter(pk=plain.pk).update(
            query_text=f"who is {NAME.lower()}?",
            created_at=tombstone.created_at - dt.timedelta(minutes=5),
        )
    assert _scan(searched, tombstone) == {"pack queries": [str(plain.pk)]}


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
