"""Invitations by email: an admin invites an address with a role; the person follows the
link, signs up through allauth's own sign-up with that address (sign-up is closed to
anyone without one) and lands with that role in exactly that scope. The link is single
use, expires, can be withdrawn, and every refusal says why. Real Postgres (RLS as the
app role), Django's outbox for the email."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from tenants import rls
from tenants.models import AuditEvent, Invitation, Membership
from tests.support.tenancy import PASSWORD, Tenant

pytestmark = pytest.mark.django_db

LINK = re.compile(r"https?://[^\s]+/invitations/[A-Za-z0-9_-]{43}")


def _invite(client: Client, tenant: Tenant, email: str, role: str = "contributor", **extra):
    client.force_login(tenant.admin)
    url = f"/api/v1/scopes/{tenant.workspace.group_id}/invitations"
    return client.post(
        url, {"email": email, "role": role, **extra}, content_type="application/json"
    )


def _sign_up(browser: Client, email: str, username: str = "newcomer"):
    return browser.post(
        "/accounts/signup/",
        {"email": email, "username": username, "password1": PASSWORD, "password2": PASSWORD},
    )


def test_an_invited_person_signs_up_through_the_link_and_lands_with_the_role(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    sent = _invite(client, tenant_a, "New.Comer@Example.org")
    assert sent.status_code == 201, sent.content
    body = sent.json()
    assert (body["email"], body["role"], body["status"]) == (
        "new.comer@example.org", "contributor", "pending",
    )  # fmt: skip
    assert body["emailed"] is True
    (message,) = mail.outbox
    assert message.to == ["new.comer@example.org"]
    link = LINK.search(message.body).group(0)
    assert link == body["link"]
    path = link.split("testserver", 1)[-1]
    # The row never holds the link.
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert path.rsplit("/", 1)[-1] not in Invitation.objects.get().token_hash

    # Sign-up is closed to a browser without an invitation.
    assert "closed" in Client().get("/accounts/signup/").content.decode().lower()
    browser = Client()
    shown = browser.get(path)
    assert shown.status_code == 200
    assert tenant_a.workspace.name in shown.content.decode()
    assert browser.get("/accounts/signup/").status_code == 200
    # Another address is refused, saying which one the link is for; no account is made.
    other = _sign_up(browser, "someone.else@example.org")
    assert "this invitation is for new.comer@example.org" in other.content.decode()
    assert not get_user_model().objects.filter(username="newcomer").exists()
    done = _sign_up(browser, "new.comer@example.org")
    assert done.status_code == 302, done.content.decode()[:2000]
    user = get_user_model().objects.get(username="newcomer")
    # Exactly that workspace (and their own personal scope), with the invited role.
    roles = browser.get("/api/v1/me").json()["roles"]
    assert roles[tenant_a.workspace.group_id] == "contributor"
    assert tenant_b.workspace.group_id not in roles
    assert tenant_a.org.group_id not in roles
    assert {g[0] for g in roles} <= {"w", "u"}
    assert Membership.objects.filter(user=user).count() == 2  # the workspace, the personal scope

    # Single use: the link now says so, to anyone.
    again = Client().get(path)
    assert again.status_code == 410
    assert "used already" in again.content.decode()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        invitation = Invitation.objects.get()
        assert invitation.accepted_by_id == user.pk
        actions = list(
            AuditEvent.objects.filter(group_id=tenant_a.workspace.group_id)
            .order_by("pk")
            .values_list("action", flat=True)
        )
    assert actions[-3:] == ["invitation.send", "role.grant", "invitation.accept"]


def test_a_signed_in_person_accepts_with_their_own_address_only(
    client: Client, tenant_a: Tenant
) -> None:
    path = _invite(client, tenant_a, "member@example.org", role="reviewer").json()["link"]
    path = path.split("testserver", 1)[-1]
    stranger = get_user_model().objects.create_user(
        username="stranger", email="stranger@example.org", password=PASSWORD
    )
    member = get_user_model().objects.create_user(
        username="member", email="member@example.org", password=PASSWORD
    )
    theirs = Client()
    theirs.force_login(stranger)
    assert theirs.post(path).status_code == 410
    assert not Membership.objects.filter(user=stranger, scope=tenant_a.workspace).exists()
    mine = Client()
    mine.force_login(member)
    assert "Join" in mine.get(path).content.decode()
    assert mine.post(path).status_code == 302
    assert Membership.objects.get(user=member, scope=tenant_a.workspace).role == 30


def test_expired_withdrawn_and_malformed_links_are_refused_with_the_reason(
    client: Client, tenant_a: Tenant
) -> None:
    expired = _invite(client, tenant_a, "late@example.org").json()
    withdrawn = _invite(client, tenant_a, "gone@example.org").json()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Invitation.objects.filter(pk=expired["id"]).update(
            expires_at=timezone.now() - dt.timedelta(seconds=1)
        )
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}/invitations/{withdrawn['id']}"
    assert client.delete(url).json()["status"] == "revoked"
    for link, reason in ((expired["link"], "expired"), (withdrawn["link"], "withdrawn")):
        browser = Client()
        response = browser.get(link.split("testserver", 1)[-1])
        assert (response.status_code, reason in response.content.decode()) == (410, True)
        # The refused link opens no sign-up.
        assert "closed" in browser.get("/accounts/signup/").content.decode().lower()
    assert Client().get("/invitations/not-a-token").status_code == 404
    assert Client().get("/invitations/" + "A" * 43).status_code == 404
    listed = client.get(f"/api/v1/scopes/{tenant_a.workspace.group_id}/invitations").json()
    assert {i["email"]: i["status"] for i in listed} == {
        "late@example.org": "expired", "gone@example.org": "revoked",
    }  # fmt: skip


def test_who_may_invite_whom(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert _invite(client, tenant_a, "boss@example.org", role="owner").status_code == 403
    assert _invite(client, tenant_a, "not an address").status_code == 400
    assert _invite(client, tenant_a, "x@example.org", days=90).status_code == 400
    viewer = Client()
    viewer.force_login(tenant_a.viewer)
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}/invitations"
    refused = viewer.post(url, {"email": "v@example.org", "role": "viewer"},
                          content_type="application/json")  # fmt: skip
    assert refused.status_code == 403
    assert viewer.get(url).status_code == 403
    across = f"/api/v1/scopes/{tenant_b.workspace.group_id}/invitations"
    client.force_login(tenant_a.admin)
    crossing = client.post(across, {"email": "x@example.org", "role": "viewer"},
                           content_type="application/json")  # fmt: skip
    assert crossing.status_code == 404
    assert not mail.outbox
