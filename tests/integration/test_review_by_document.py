"""The claims queue by document: one card per document, decided whole or claim by claim."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.test import Client

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode
from tenants import rls
from tests.support.ingest import ingest_folder
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

CARDS = "/review/?queue=claims&group=document"
RUNBOOK = (
    "# Billing runbook\n\n"
    "The billing-api runs on k8s-prod-1. The billing-api depends on ledger-db.\n"
)
OTHER = "# Search\n\nThe search-api uses elastic-8.\n"
# session, user, memberships and scope tree (4), the RLS savepoint, setting, reset and
# release (4), the document count and page (2), the claims, their evidence and the values
# they would supersede (3), the episodes with their sources (1), queue counts (2), filter
# options (2): 18 however many documents the page shows.
QUERIES = 18


@pytest.fixture
def runbooks(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """Two tier-3 documents in Acme's workspace: the runbook (two relations and its
    passage) and another (one relation and its passage)."""
    docs = {"billing.md": RUNBOOK, "search.md": OTHER}
    ingest_folder(tenant_a, tmp_path / "docs", docs, tier=3, name="runbooks")
    return tenant_a


def _episode(tenant: Tenant, name: str) -> Episode:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Episode.objects.get(external_id__endswith=name)


def _claims(tenant: Tenant, episode: Episode) -> dict[int, Claim]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return {c.pk: c for c in Claim.objects.filter(evidence__episode=episode)}


def _card(page: str, episode: Episode) -> str:
    match = re.search(rf'<article id="doc-{episode.pk}".*?</article>', page, re.S)
    assert match, f"no card for episode {episode.pk}"
    return match.group()


def _items(card: str, action: str, episode: Episode) -> list[str]:
    """The `id:version` pairs the card's approve-all or reject-all form would post."""
    form = f"{action}-doc-{episode.pk}"
    return re.findall(rf'name="item" value="(\d+:\d+)" form="{form}"', card)


def _cards_page(client: Client, tenant: Tenant) -> str:
    client.force_login(tenant.reviewer)
    response = client.get(CARDS)
    assert response.status_code == 200
    return response.content.decode()


def test_a_runbook_groups_into_one_card_with_its_relations_first(
    runbooks: Tenant, client: Client
) -> None:
    runbook = _episode(runbooks, "billing.md")
    claims = _claims(runbooks, runbook)
    card = _card(_cards_page(client, runbooks), runbook)

    shown = [int(pk) for pk in re.findall(r'<tr id="item-(\d+)"', card)]
    assert sorted(shown) == sorted(claims)
    assert [claims[pk].predicate for pk in shown] == ["RUNS_ON", "DEPENDS_ON", "STATES"]
    assert "billing.md" in card


def test_every_evidence_span_of_the_card_is_marked_in_the_text(
    runbooks: Tenant, client: Client
) -> None:
    runbook = _episode(runbooks, "billing.md")
    card = _card(_cards_page(client, runbooks), runbook)

    marked = [html.unescape(text) for text in re.findall(r"<mark>(.*?)</mark>", card, re.S)]
    assert marked
    with rls.tenant_context(runbooks.principal(runbooks.admin)):
        spans = list(runbook.evidence.values_list("start", "end"))
    assert len(spans) == 3
    for start, end in spans:
        assert any(RUNBOOK[start:end] in text for text in marked), RUNBOOK[start:end]
    text = re.search(r'<pre class="document"[^>]*>(.*?)</pre>', card, re.S)
    assert text
    assert html.unescape(re.sub(r"</?mark>", "", text.group(1))) == RUNBOOK  # all of it


def test_approve_all_publishes_the_cards_claims_and_only_them(
    runbooks: Tenant, client: Client
) -> None:
    runbook, other = _episode(runbooks, "billing.md"), _episode(runbooks, "search.md")
    items = _items(_card(_cards_page(client, runbooks), runbook), "approve", runbook)

    response = client.post(
        f"/review/documents/{runbook.pk}/approve", {"item": items}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert "Approved 3 claim(s)." in body
    assert re.search(r'id="count-claims"[^>]*hx-swap-oob="true">2<', body)
    decided = _claims(runbooks, runbook)
    assert {c.status for c in decided.values()} == {ClaimStatus.PUBLISHED}
    assert {c.reviewed_by_id for c in decided.values()} == {runbooks.reviewer.pk}
    assert {c.status for c in _claims(runbooks, other).values()} == {ClaimStatus.PENDING_REVIEW}


def test_reject_all_rejects_the_cards_claims_with_the_reason(
    runbooks: Tenant, client: Client
) -> None:
    runbook, other = _episode(runbooks, "billing.md"), _episode(runbooks, "search.md")
    items = _items(_card(_cards_page(client, runbooks), runbook), "reject", runbook)

    response = client.post(
        f"/review/documents/{runbook.pk}/reject",
        {"item": items, "reason": "the runbook is a draft"},
        HTTP_HX_REQUEST="true",
    )

    assert "Rejected 3 claim(s)." in response.content.decode()
    decided = _claims(runbooks, runbook).values()
    assert {(c.status, c.status_reason) for c in decided} == {
        (ClaimStatus.REJECTED, "the runbook is a draft")
    }
    assert {c.status for c in _claims(runbooks, other).values()} == {ClaimStatus.PENDING_REVIEW}


def test_reject_all_is_refused_when_no_reason_is_given(runbooks: Tenant, client: Client) -> None:
    runbook = _episode(runbooks, "billing.md")
    items = _items(_card(_cards_page(client, runbooks), runbook), "reject", runbook)

    response = client.post(
        f"/review/documents/{runbook.pk}/reject", {"item": items}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 400
    assert {c.status for c in _claims(runbooks, runbook).values()} == {ClaimStatus.PENDING_REVIEW}


def test_approve_all_refuses_a_claim_decided_since_the_card_was_loaded(
    runbooks: Tenant, client: Client
) -> None:
    runbook = _episode(runbooks, "billing.md")
    items = _items(_card(_cards_page(client, runbooks), runbook), "approve", runbook)
    first, version = (int(part) for part in items[0].split(":"))
    rejected = client.post(
        f"/review/claims/{first}/reject", {"version": version, "reason": "stale"},
        HTTP_HX_REQUEST="true",
    )  # fmt: skip
    assert rejected.status_code == 200

    response = client.post(
        f"/review/documents/{runbook.pk}/approve", {"item": items}, HTTP_HX_REQUEST="true"
    )

    body = html.unescape(response.content.decode())
    assert "Approved 2 claim(s)." in body
    assert f"#{first}: Already rejected by acme-reviewer." in body
    assert 'class="card decided conflict"' in body
    after = _claims(runbooks, runbook)
    assert (after[first].status, after[first].status_reason) == (ClaimStatus.REJECTED, "stale")
    assert [c.status for pk, c in after.items() if pk != first] == [ClaimStatus.PUBLISHED] * 2


def test_another_workspaces_documents_never_show(
    runbooks: Tenant, tenant_b: Tenant, client: Client
) -> None:
    page = _cards_page(client, tenant_b)

    assert "<article" not in page
    assert "Nothing waiting here." in page
    for text in ("billing-api", "billing.md", "search-api", "k8s-prod-1"):
        assert text not in page


def test_another_workspaces_claims_cannot_be_decided_through_a_card(
    runbooks: Tenant, tenant_b: Tenant, client: Client
) -> None:
    runbook = _episode(runbooks, "billing.md")
    items = _items(_card(_cards_page(client, runbooks), runbook), "approve", runbook)
    client.force_login(tenant_b.reviewer)

    response = client.post(f"/review/documents/{runbook.pk}/approve", {"item": items})

    assert response.status_code == 404
    assert {c.status for c in _claims(runbooks, runbook).values()} == {ClaimStatus.PENDING_REVIEW}


@pytest.mark.parametrize("documents", [2, 9])
def test_the_card_view_costs_a_fixed_number_of_queries(
    tenant_a: Tenant, tmp_path: Path, client: Client, django_assert_num_queries, documents: int
) -> None:
    files = {f"svc-{i}.md": RUNBOOK.replace("billing", f"svc{i}") for i in range(documents)}
    ingest_folder(tenant_a, tmp_path / "many", files, tier=3, name="runbooks")
    client.force_login(tenant_a.reviewer)

    with django_assert_num_queries(QUERIES):
        response = client.get(CARDS)

    assert response.content.decode().count('<article id="doc-') == documents
