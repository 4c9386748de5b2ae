"""Keys in another member's name: never for a stronger member, and never outliving the
role that allowed them (removal, demotion, deactivation, a provider group lost)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import ApiKey, AuditEvent
from tenants.services.scopes import membership_grant, memberships_from_idp
from tests.support.tenancy import PASSWORD, Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_failure_counters() -> None:
    cache.clear()


@pytest.fixture
def owner(tenant_a: Tenant):
    """The organisation's owner, also the workspace's (inherited and explicit)."""
    user = get_user_model().objects.create_user(
        username="acme-owner", email="owner@example.org", password=PASSWORD
    )
    membership_grant(user_id=user.pk, scope_id=tenant_a.org.pk, role=Role.OWNER)
    membership_grant(user_id=user.pk, scope_id=tenant_a.workspace.pk, role=Role.OWNER)
    return user


def _issue(client: Client, tenant: Tenant, issuer, owner, ceiling: str) -> object:
    client.force_login(issuer)
    body = {"name": "k", "scope": tenant.workspace.group_id, "owner": owner.get_username(),
            "role_ceiling": ceiling}  # fmt: skip
    response = client.post("/api/v1/keys", body, content_type="application/json")
    client.logout()
    return response


def _answers(client: Client, key: str) -> int:
    return client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {key}").status_code


@pytest.mark.parametrize("ceiling", ["viewer", "admin"])
def test_a_workspace_admin_cannot_issue_a_key_in_the_owners_name(
    client: Client, tenant_a: Tenant, owner, ceiling: str
) -> None:
    response = _issue(client, tenant_a, tenant_a.admin, owner, ceiling)
    assert response.status_code == 403
    assert "at least as high as theirs" in response.json()["detail"]
    with rls.tenant_context(tenant_a.principal(owner)):
        assert not ApiKey.objects.filter(owner=owner).exists()


def test_a_key_issued_for_a_weaker_member_names_its_issuer(
    client: Client, tenant_a: Tenant
) -> None:
    response = _issue(client, tenant_a, tenant_a.admin, tenant_a.viewer, "viewer")
    assert response.status_code == 201, response.content
    assert response.json()["issued_by"] == tenant_a.admin.get_username()
    assert response.json()["owner"] == tenant_a.viewer.get_username()


def test_an_owner_may_issue_a_key_for_an_admin(client: Client, tenant_a: Tenant, owner) -> None:
    response = _issue(client, tenant_a, owner, tenant_a.admin, "admin")
    assert response.status_code == 201, response.content


def _key_for_viewer(client: Client, tenant: Tenant) -> str:
    response = _issue(client, tenant, tenant.admin, tenant.viewer, "viewer")
    assert response.status_code == 201, response.content
    return str(response.json()["key"])


def test_a_key_issued_for_someone_else_dies_when_its_issuer_is_removed(
    client: Client, tenant_a: Tenant, owner
) -> None:
    key = _key_for_viewer(client, tenant_a)
    own = _issue(client, tenant_a, tenant_a.viewer, tenant_a.viewer, "viewer")
    assert own.status_code == 403  # a viewer issues no key at all
    assert _answers(client, key) == 200
    client.force_login(owner)
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}/members/{tenant_a.admin.pk}"
    assert client.delete(url).status_code == 204
    client.logout()
    assert _answers(client, key) == 401
    with rls.tenant_context(tenant_a.principal(owner)):
        event = AuditEvent.objects.filter(action="api_key.revoke").latest("pk")
    assert event.data["reason"] == "role.revoke"
    assert event.data["issuer_id"] == tenant_a.admin.pk


def test_a_key_issued_for_someone_else_dies_when_its_issuer_is_demoted(
    client: Client, tenant_a: Tenant, owner
) -> None:
    key = _key_for_viewer(client, tenant_a)
    other = _issue(client, tenant_a, tenant_a.admin, tenant_a.reviewer, "reviewer")
    client.force_login(owner)
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}/members"
    body = {"user": tenant_a.admin.get_username(), "role": "reviewer"}
    response = client.post(url, body, content_type="application/json")
    assert response.status_code in (200, 201), response.content
    client.logout()
    assert _answers(client, key) == 401
    assert _answers(client, str(other.json()["key"])) == 401


def test_a_key_issued_for_someone_else_dies_when_its_issuer_is_deactivated(
    client: Client, tenant_a: Tenant, owner
) -> None:
    key = _key_for_viewer(client, tenant_a)
    client.force_login(owner)
    url = f"/api/v1/scopes/{tenant_a.org.group_id}/members/{tenant_a.admin.pk}/deactivate"
    assert client.post(url).status_code in (200, 204)
    client.logout()
    assert _answers(client, key) == 401


def test_a_key_issued_for_someone_else_dies_when_its_issuer_loses_the_provider_group(
    client: Client, tenant_a: Tenant
) -> None:
    group = tenant_a.workspace.group_id
    memberships_from_idp(user_id=tenant_a.admin.pk, wanted={group: Role.ADMIN}, mapped={group})
    key = _key_for_viewer(client, tenant_a)
    own = tenant_a.issue_key(owner=tenant_a.admin, role=Role.ADMIN).plaintext
    assert _answers(client, key) == _answers(client, own) == 200
    # The admin role came from an administrator, so the provider leaves it: make it the
    # provider's, then take the group away.
    from tenants.models import Membership

    Membership.objects.filter(user=tenant_a.admin, scope=tenant_a.workspace).update(via_idp=True)
    memberships_from_idp(user_id=tenant_a.admin.pk, wanted={}, mapped={group})
    assert _answers(client, key) == 401
    assert _answers(client, own) == 401  # their own key of the scope went with the role


def test_a_key_the_issuer_still_may_issue_outlives_a_change_elsewhere(
    client: Client, tenant_a: Tenant, owner
) -> None:
    key = _key_for_viewer(client, tenant_a)
    client.force_login(owner)
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}/members"
    body = {"user": tenant_a.reviewer.get_username(), "role": "viewer"}  # someone else
    assert client.post(url, body, content_type="application/json").status_code in (200, 201)
    client.logout()
    assert _answers(client, key) == 200
