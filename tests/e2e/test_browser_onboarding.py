"""An organisation onboards a colleague in Chromium, end to end, from an empty database:
an operator opens the organisation with its owner (`manage.py create_organisation`); the
owner signs in, opens a workspace and a project, invites a colleague by email; the
colleague signs up through the link and sees exactly that workspace; a role change takes
effect on their next request; deactivation stops their key and their session."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from playwright.sync_api import Browser, Page, expect

from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.selectors import principal_for_user
from tenants.services.api_keys import api_key_issue
from tests.support.browser import sign_in
from tests.support.tenancy import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _scope_page(page: Page, base: str, name: str) -> None:
    page.goto(f"{base}/scopes/")
    page.click(f"#scopes a:text-is('{name}')")
    expect(page.locator("#scope-name")).to_have_text(name)


def test_an_owner_onboards_a_colleague_who_then_loses_access(
    page: Page, browser: Browser, live_server
) -> None:
    base = live_server.url
    assert not Scope.objects.exists()  # an empty deployment
    owner = get_user_model().objects.create_user(
        username="olga", email="olga@acme.example.org", password=PASSWORD
    )
    call_command("create_organisation", "--name", "Acme", "--owner", "olga@acme.example.org",
                 stdout=StringIO())  # fmt: skip
    sign_in(page, base, "olga")

    # A workspace under the organisation, a project under the workspace.
    _scope_page(page, base, "Acme")
    page.fill("#open-form input[name=name]", "Platform")
    page.click("#open-form button")
    expect(page.locator("#scope-name")).to_have_text("Platform")
    platform = Scope.objects.get(name="Platform")
    page.fill("#open-form input[name=name]", "Migration")
    page.click("#open-form button")
    expect(page.locator("#scope-name")).to_have_text("Migration")
    assert Scope.objects.get(name="Migration").parent_id == platform.pk

    # The colleague is invited to the workspace as a reviewer.
    _scope_page(page, base, "Platform")
    page.fill("#invite-form input[name=email]", "casey@example.org")
    page.select_option("#invite-form select[name=role]", "reviewer")
    page.click("#invite-form button")
    link = page.locator("#invitation-link").inner_text()
    (message,) = mail.outbox
    assert link in message.body
    expect(page.locator("#invitations")).to_contain_text("casey@example.org")

    # They sign up through the link, in a browser of their own.
    colleague = browser.new_context(base_url=base)
    theirs = colleague.new_page()
    theirs.goto(link)
    expect(theirs.locator("#invitation")).to_contain_text("Platform")
    theirs.click("#sign-up")
    theirs.fill("input[name=email]", "casey@example.org")
    theirs.fill("input[name=username]", "casey")
    theirs.fill("input[name=password1]", PASSWORD)
    theirs.fill("input[name=password2]", PASSWORD)
    theirs.click("button[type=submit]")
    expect(theirs.get_by_role("heading", name="Welcome, casey")).to_be_visible()
    theirs.goto(f"{base}/scopes/")
    names = theirs.locator("#scopes tbody a").all_inner_texts()
    # Exactly that workspace, and the project its role reaches.
    assert sorted(name for name in names if "personal" not in name) == ["Migration", "Platform"]
    expect(theirs.locator("tr", has_text="Platform")).to_contain_text("reviewer")
    # The link is used up.
    theirs.goto(link)
    expect(theirs.locator("#invitation-refused")).to_contain_text("used already")

    # A key of theirs works; the owner makes them a viewer: their next request knows it.
    casey = get_user_model().objects.get(username="casey")
    me = theirs.request.get(f"{base}/api/v1/me").json()
    assert me["roles"][platform.group_id] == "reviewer"
    owner_principal = principal_for_user(owner.pk, label="user:olga")
    with rls.tenant_context(owner_principal):
        key = api_key_issue(
            actor=owner_principal, owner_id=casey.pk, scope_id=platform.pk, name="casey-bot",
            role_ceiling=Role.REVIEWER,
        ).plaintext  # fmt: skip
    bearer = {"Authorization": f"Bearer {key}"}
    assert page.request.get(f"{base}/api/v1/me", headers=bearer).status == 200
    _scope_page(page, base, "Platform")
    row = page.locator("#members tr[data-user=casey]")
    row.locator("select[name=role]").select_option("viewer")
    row.locator("button[name=change]").click()
    expect(page.get_by_role("status").first).to_contain_text("Role changed")
    me = theirs.request.get(f"{base}/api/v1/me").json()
    assert me["roles"][platform.group_id] == "viewer"

    # Deactivated by the organisation's owner, from the workspace's page: their key and
    # their session stop at once.
    _scope_page(page, base, "Platform")
    page.locator("#members tr[data-user=casey] button[name=deactivate]").click()
    expect(page.get_by_role("status").first).to_contain_text("Deactivated")
    assert page.request.get(f"{base}/api/v1/me", headers=bearer).status == 401
    theirs.goto(f"{base}/scopes/")
    assert re.search(r"/accounts/login/", theirs.url)
    colleague.close()
