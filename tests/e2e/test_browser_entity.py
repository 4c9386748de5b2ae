"""An entity's page in Chromium: its facts and its neighbourhood as a picture, as of a day."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from curation import bootstrap
from curation.models import Entity
from tenants import rls
from tests.support.ingest import ingest_billing_history
from tests.support.tenancy import PASSWORD, Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture
def billing(tenant_a: Tenant, tmp_path: Path) -> Entity:
    """billing-api ran on k8s-prod-1, runs on k8s-prod-2 since March; a team owns it."""
    bootstrap.providers().graph().clear()
    org = "# Org\n\nThe payments-team is part of finance-org.\n"
    ingest_billing_history(tenant_a, tmp_path, extra={"org.md": org})
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        return Entity.objects.get(canonical_name="billing-api")


def test_the_entity_page_draws_its_neighbourhood_as_of_a_day(
    page: Page, live_server, tenant_a: Tenant, billing: Entity
) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=login]", tenant_a.viewer.get_username())
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/entities/{billing.pk}/")

    expect(page.get_by_role("heading", name="billing-api")).to_be_visible()
    picture = page.locator("#picture svg")
    expect(picture.locator("g.node", has_text="k8s-prod-2")).to_be_visible()
    expect(picture.locator("g.node", has_text="payments-team")).to_be_visible()
    expect(picture.locator("g.node", has_text="k8s-prod-1")).to_have_count(0)
    expect(picture.locator("g.node", has_text="finance-org")).to_have_count(0)  # 2 hops
    expect(page.locator("table", has_text="superseded")).to_contain_text("k8s-prod-1")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "entity_now.png"), full_page=True)

    page.fill("input[name=as_of]", "2026-02-01")
    page.locator("input[name=as_of]").dispatch_event("change")
    expect(picture.locator("g.node", has_text="k8s-prod-1")).to_be_visible()
    expect(picture.locator("g.node", has_text="k8s-prod-2")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"as_of=2026-02-01"))
    expect(page.locator("#picture figcaption")).to_contain_text("as of the end of 2026-02-01")

    page.select_option("select[name=hops]", "2")
    expect(picture.locator("g.node.hops-2", has_text="finance-org")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "entity_as_of.png"), full_page=True)

    page.locator("g.node", has_text="payments-team").locator("a").click()
    expect(page.get_by_role("heading", name="payments-team")).to_be_visible()
