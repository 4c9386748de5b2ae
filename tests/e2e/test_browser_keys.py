"""A workspace admin issues, uses and revokes an API key in Chromium, end to end."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tenants import rls
from tenants.models import ApiKey
from tests.support.browser import sign_in
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_issues_uses_and_revokes_a_key(page: Page, live_server, tenant_a: Tenant) -> None:
    base = live_server.url
    page.on("dialog", lambda dialog: dialog.accept())
    sign_in(page, base, tenant_a.admin.get_username())
    page.click("text=API keys")
    page.select_option("select[name=scope]", tenant_a.workspace.group_id)
    page.select_option("select[name=owner]", label=tenant_a.viewer.get_username())
    page.fill("input[name=name]", "deploy-bot")
    page.select_option("select[name=role_ceiling]", label="Viewer")
    page.click("button:has-text('Issue key')")
    secret = page.locator("#new-key").inner_text()
    assert secret.startswith("vera_")

    me = page.request.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status == 200
    assert me.json()["user_id"] == tenant_a.viewer.pk

    row = page.locator("tr", has_text="deploy-bot")
    row.locator("button:has-text('Revoke')").click()
    expect(row.locator("td.status")).to_have_text("revoked")
    again = page.request.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert again.status == 401

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        key = ApiKey.objects.get(name="deploy-bot")
    assert key.revoked_at is not None
    assert secret.split("_", 2)[2] not in key.secret_hash
    page.goto(f"{base}/keys/")
    assert secret not in page.content()  # shown once, never again


def test_admin_of_another_workspace_sees_none_of_the_keys(
    page: Page, live_server, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    tenant_a.issue_key(owner=tenant_a.viewer)
    sign_in(page, live_server.url, tenant_b.admin.get_username())
    page.goto(f"{live_server.url}/keys/")
    expect(page.locator("td.empty")).to_have_text("No keys yet.")
    options = page.locator("select[name=scope] option").all_inner_texts()
    assert all("Acme" not in option for option in options)
