"""Web sign-in with TOTP MFA; admin pages see through RLS like everything else."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
import time

import pytest
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
from django.test import Client

from tenants import rls
from tenants.models import AuditEvent
from tests.support.tenancy import PASSWORD, Tenant

pytestmark = pytest.mark.django_db


def _totp(secret: str, at: float | None = None) -> str:
    """RFC 6238 (SHA-1, 30 s, 6 digits), written out here rather than borrowed from allauth."""
    counter = int((time.time() if at is None else at) // 30)
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 1_000_000:06d}"


@pytest.fixture
def totp_user(tenant_a: Tenant) -> tuple[Tenant, str]:
    secret = generate_totp_secret()
    TOTP.activate(tenant_a.reviewer, secret)
    return tenant_a, secret


def _password_step(client: Client, username: str) -> str:
    response = client.post("/accounts/login/", {"login": username, "password": PASSWORD})
    assert response.status_code == 302
    return response["Location"]


def test_mfa_user_is_not_signed_in_by_the_password_alone(
    client: Client, totp_user: tuple[Tenant, str]
) -> None:
    tenant, _ = totp_user
    assert _password_step(client, tenant.reviewer.get_username()) == "/accounts/2fa/authenticate/"
    assert client.get("/").status_code == 302  # still anonymous


def test_mfa_user_signs_in_with_a_valid_totp_code(
    client: Client, totp_user: tuple[Tenant, str]
) -> None:
    tenant, secret = totp_user
    step = _password_step(client, tenant.reviewer.get_username())
    stale = _totp(secret, at=time.time() - 3600)
    assert client.post(step, {"code": stale}).status_code == 200  # refused, form shown again
    assert client.get("/").status_code == 302
    response = client.post(step, {"code": _totp(secret)})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    with rls.tenant_context(tenant.principal(tenant.reviewer)):
        assert AuditEvent.objects.filter(
            action="auth.sign_in", actor_id=tenant.reviewer.pk
        ).exists()


@pytest.fixture
def staff_of_a(tenant_a: Tenant) -> Tenant:
    tenant_a.admin.is_staff = tenant_a.admin.is_superuser = True
    tenant_a.admin.save()
    return tenant_a


@pytest.mark.parametrize("page", ["/admin/tenants/apikey/", "/admin/tenants/auditevent/"])
def test_even_a_django_superuser_sees_only_their_tenants_rows_in_the_admin(
    client: Client, staff_of_a: Tenant, tenant_b: Tenant, page: str
) -> None:
    staff_of_a.issue_key(owner=staff_of_a.viewer)
    b_key = tenant_b.issue_key(owner=tenant_b.viewer)
    client.force_login(staff_of_a.admin)
    html = client.get(page).content.decode()
    assert staff_of_a.workspace.group_id in html or "acme-viewer-key" in html
    assert tenant_b.workspace.group_id not in html
    assert b_key.key.prefix not in html


def test_admin_change_page_shows_neither_secret_nor_hash(
    client: Client, staff_of_a: Tenant
) -> None:
    issued = staff_of_a.issue_key(owner=staff_of_a.viewer)
    client.force_login(staff_of_a.admin)
    html = client.get(f"/admin/tenants/apikey/{issued.key.pk}/change/").content.decode()
    assert issued.key.prefix in html
    assert issued.plaintext.split("_", 2)[2] not in html
    assert issued.key.secret_hash not in html


def test_another_tenants_key_is_a_404_in_the_admin(
    client: Client, staff_of_a: Tenant, tenant_b: Tenant
) -> None:
    b_key = tenant_b.issue_key(owner=tenant_b.viewer)
    client.force_login(staff_of_a.admin)
    response = client.get(f"/admin/tenants/apikey/{b_key.key.pk}/change/")
    assert response.status_code == 302  # the admin's "does not exist" redirect
    assert client.get(response["Location"]).status_code == 200
