"""A workspace admin takes a knowledge snapshot in Chromium, sees it sealed, searches it,
and sees the note an erasure leaves on it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from retrieval import bootstrap
from retrieval.services.erasure import erase
from retrieval.tasks import snapshots_build
from tenants import rls
from tests.support.browser import sign_in
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_an_admin_takes_searches_and_sees_the_erasure_note_of_a_snapshot(
    page: Page, live_server, tenant_a: Tenant, tmp_path: Path
) -> None:
    billing = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}
    ingest_markdown(tenant_a, tmp_path / "a", billing)
    gone = ingest_markdown(
        tenant_a, tmp_path / "b", {"mail.md": "# Mail\n\nThe mail-relay runs on k8s-mail-1.\n"},
        name="mail",
    )  # fmt: skip
    sign_in(page, live_server.url, tenant_a.admin.get_username())
    page.get_by_role("link", name="Snapshots").click()
    page.get_by_label("name").fill("Q4 audit")
    page.get_by_label("reason").fill("quarter close")
    page.get_by_role("button", name="Take a snapshot").click()
    expect(page.get_by_role("status")).to_contain_text("is being built")
    row = page.locator("tr", has_text="Q4 audit")
    expect(row).to_contain_text("building")

    # The maintenance task builds it (a real worker does so in tests/integration).
    outcomes = snapshots_build()
    assert [o for o in outcomes.values() if o.startswith("sealed")], outcomes
    page.reload()
    expect(row).to_contain_text("sealed")
    expect(row.locator("code")).to_have_text(re.compile(r"^[0-9a-f]{12}…$"))
    row.get_by_role("link", name="Search it").click()
    page.get_by_label("search").fill("where does the mail-relay run")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#searched-snapshot")).to_contain_text("Answers of snapshot")
    expect(page.locator("ol.hits li").first).to_contain_text("k8s-mail-1")

    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        erase(
            actor=admin, kind="source", target_id=gone, reason="GDPR request", confirm=True,
            catalog=bootstrap.providers().embedders(),
        )  # fmt: skip
    page.goto(f"{live_server.url}/snapshots/")
    expect(row).to_contain_text("re-sealed after the erasure of source")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "snapshots-page.png"), full_page=True)
    snapshot_id = next(iter(outcomes))
    page.goto(f"{live_server.url}/search/?q=mail-relay&snapshot={snapshot_id}")
    expect(page.locator("#searched-snapshot")).to_be_visible()
    expect(page.locator("ol.hits")).not_to_contain_text("k8s-mail-1")
