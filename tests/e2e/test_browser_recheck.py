"""A reviewer works the re-check queue in Chromium with the keyboard: keep one claim that
reprocessing no longer found, retract the other with why."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from curation.domain.tiers import ClaimStatus
from curation.models import Claim
from tenants import rls
from tests.support.browser import sign_in
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WHY = "no longer found in 'docs' when read again (rules-2)"


@pytest.fixture
def flagged(tenant_a: Tenant, tmp_path: Path) -> list[int]:
    """Two published claims asking for a re-check (as reprocessing leaves them), oldest
    first, and one that asks nothing."""
    ingest_markdown(
        tenant_a, tmp_path,
        {"platform.md": "# Platform\n\nThe billing-api runs on k8s-prod-1. "
                        "The billing-api depends on ledger-db. The checkout-web uses redis-7.\n"},
    )  # fmt: skip
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        asking = Claim.objects.filter(predicate__in=["RUNS_ON", "DEPENDS_ON"])
        asking.update(recheck=WHY)
        return list(asking.order_by("recorded_at", "pk").values_list("pk", flat=True))


def test_the_keyboard_keeps_one_recheck_and_retracts_the_next_with_why(
    page: Page, live_server, tenant_a: Tenant, flagged: list[int]
) -> None:
    sign_in(page, live_server.url, tenant_a.reviewer.get_username())
    page.goto(f"{live_server.url}/review/?queue=rechecks")
    count = page.locator("#queue-tabs [data-queue=rechecks]")
    expect(page.locator("tr.item")).to_have_count(2)
    expect(count).to_have_text("2")
    expect(page.locator("tr.item td.recheck").first).to_have_text(WHY)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "queue-rechecks.png"), full_page=True)
    first, second = (page.locator(f"#item-{pk}") for pk in flagged)

    page.keyboard.press("j")
    expect(first).to_be_focused()
    page.keyboard.press("a")
    expect(first).to_contain_text(f"Kept #{flagged[0]}")
    expect(second).to_be_focused()  # the next row takes the focus
    page.keyboard.press("r")
    expect(second.get_by_label("reason")).to_be_focused()  # r asks for the reason first
    page.keyboard.type("ledger-db was retired")
    page.keyboard.press("Enter")

    expect(second).to_contain_text(f"Retracted claim {flagged[1]}")
    expect(count).to_have_text("0")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        kept, retracted = (Claim.objects.get(pk=pk) for pk in flagged)
    assert (kept.status, kept.recheck) == (ClaimStatus.PUBLISHED, "")
    assert (retracted.status, retracted.status_reason, retracted.recheck) == (
        ClaimStatus.RETRACTED, "ledger-db was retired", "",
    )  # fmt: skip
