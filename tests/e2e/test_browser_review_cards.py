"""A reviewer works the claims queue by document in Chromium: one card per document."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode
from tenants import rls
from tests.support.browser import sign_in
from tests.support.ingest import ingest_folder
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
RUNBOOK = (
    "# Billing runbook\n\n"
    "The billing-api runs on k8s-prod-1. The billing-api depends on ledger-db.\n"
)
PLATFORM = "# Checkout\n\nThe checkout-web uses redis-7. The checkout-web runs on k8s-prod-2.\n"


@pytest.fixture
def documents(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """Two tier-3 documents waiting in Acme's workspace, the runbook first (the oldest):
    each two relations and its passage."""
    runbooks, platform = tmp_path / "runbooks", tmp_path / "platform"
    ingest_folder(tenant_a, runbooks, {"billing.md": RUNBOOK}, tier=3, name="docs-runbooks")
    ingest_folder(tenant_a, platform, {"checkout.md": PLATFORM}, tier=3, name="docs-platform")
    return tenant_a


def _claims(tenant: Tenant, name: str) -> dict[str, Claim]:
    """The document's claims by predicate, as the database has them now."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        episode = Episode.objects.get(external_id__endswith=name)
        return {c.predicate: c for c in Claim.objects.filter(evidence__episode=episode)}


def _card(page: Page, tenant: Tenant, name: str) -> Locator:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        episode = Episode.objects.get(external_id__endswith=name)
    return page.locator(f"#doc-{episode.pk}")


def _open_cards(page: Page, base: str, tenant: Tenant) -> None:
    sign_in(page, base, tenant.reviewer.get_username())
    page.goto(f"{base}/review/?queue=claims")
    page.get_by_role("link", name="by document").click()
    expect(page.locator("article.card.item")).to_have_count(2)
    expect(page.locator("#count-claims")).to_have_text("6")


def test_one_keystroke_approves_the_focused_document_card(
    page: Page, live_server, documents: Tenant
) -> None:
    _open_cards(page, live_server.url, documents)
    runbook, other = _card(page, documents, "billing.md"), _card(page, documents, "checkout.md")
    marks = runbook.locator("pre.document mark")
    expect(marks.first).to_contain_text("runs on k8s-prod-1")
    assert marks.count() >= 1
    expect(runbook.locator("tr.item")).to_have_count(3)
    expect(runbook.locator("tr.item").last).to_have_class("item passage")  # relations first
    page.keyboard.press("j")
    expect(runbook).to_be_focused()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "review-by-document.png"), full_page=True)

    page.keyboard.press("a")

    expect(runbook.get_by_role("status")).to_have_text("Approved 3 claim(s).")
    expect(page.locator("#count-claims")).to_have_text("3")
    expect(other).to_be_focused()  # on to the next document
    assert {c.status for c in _claims(documents, "billing.md").values()} == {ClaimStatus.PUBLISHED}
    assert {c.status for c in _claims(documents, "checkout.md").values()} == {
        ClaimStatus.PENDING_REVIEW
    }


def test_a_relation_inside_a_card_is_rejected_on_its_own(
    page: Page, live_server, documents: Tenant
) -> None:
    _open_cards(page, live_server.url, documents)
    other = _card(page, documents, "checkout.md")
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(other).to_be_focused()
    page.keyboard.press("Enter")  # into the card: its first claim, a relation
    first = other.locator("tr.item").first
    expect(first).to_be_focused()
    expect(first).to_have_class("item relation")
    claim_id = int((first.get_attribute("id") or "").removeprefix("item-"))

    page.keyboard.press("r")
    expect(first.get_by_label("reason")).to_be_focused()
    page.keyboard.type("redis-7 was replaced")
    page.keyboard.press("Enter")

    expect(other.locator(f"#item-{claim_id}")).to_have_text("Rejected")
    expect(page.locator("#count-claims")).to_have_text("5")
    expect(other.locator("tr.item")).to_have_count(2)
    expect(other.locator("tr.item").first).to_be_focused()  # the next claim of the card
    claims = {c.pk: c for c in _claims(documents, "checkout.md").values()}
    assert (claims[claim_id].status, claims[claim_id].status_reason) == (
        ClaimStatus.REJECTED,
        "redis-7 was replaced",
    )
    rest = [c.status for pk, c in claims.items() if pk != claim_id]
    assert rest == [ClaimStatus.PENDING_REVIEW] * 2
    assert {c.status for c in _claims(documents, "billing.md").values()} == {
        ClaimStatus.PENDING_REVIEW
    }
