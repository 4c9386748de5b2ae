"""A workspace admin erases a document from the portal in Chromium: the confirmation says
what goes, the tombstone is what remains, and its residual scan finds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from curation.models import Claim
from tenants import rls
from tests.support.browser import sign_in
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_an_admin_erases_a_document_and_verifies_nothing_remains(
    page: Page, live_server, tenant_a: Tenant, tmp_path: Path
) -> None:
    ingest_markdown(
        tenant_a, tmp_path,
        {"secret.md": "# Secret\n\nThe vault-api runs on k8s-secret-9.\n",
         "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"},
    )  # fmt: skip
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        claim = Claim.objects.get(predicate="RUNS_ON", fact_text__contains="k8s-secret-9")

    # A reviewer may retract but is not offered erasure.
    sign_in(page, live_server.url, tenant_a.reviewer.get_username())
    page.goto(f"{live_server.url}/claims/{claim.pk}/")
    expect(page.get_by_text("Retract this document")).to_be_visible()
    expect(page.get_by_role("link", name="Erase document…")).to_have_count(0)
    page.context.clear_cookies()

    sign_in(page, live_server.url, tenant_a.admin.get_username())
    page.goto(f"{live_server.url}/claims/{claim.pk}/")
    page.get_by_role("link", name="Erase document…").click()
    expect(page.locator("#preview")).to_contain_text("destroys 1 episode(s)")
    page.get_by_label("reason").fill("leaked secret")
    page.get_by_role("button", name="Erase").click()  # not confirmed: refused, nothing done
    expect(page.locator("#erase-error")).to_contain_text("confirm to proceed")
    page.get_by_label("confirm").check()
    page.get_by_role("button", name="Erase").click()
    expect(page.get_by_role("heading", name="Tombstone")).to_be_visible()
    expect(page.locator("#cleanup-status")).to_contain_text("complete")
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#scan")).to_contain_text("Nothing of the erased content remains")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "erasure-tombstone.png"), full_page=True)
    page.goto(f"{live_server.url}/search/?q=k8s-secret-9")
    expect(page.locator("#results")).not_to_contain_text("k8s-secret-9")
    page.goto(f"{live_server.url}/claims/{claim.pk}/")
    expect(page.get_by_role("heading", name="Not Found")).to_be_visible()  # erased: a 404
