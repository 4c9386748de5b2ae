"""A personal scope is its owner's alone: no members, no invitations, no keys for anyone
else, by REST or by the services."""

from __future__ import annotations

import pytest
from django.test import Client

from common.errors import PermissionDenied
from tenants.domain.scopes import Role
from tenants.models import Membership, Scope
from tenants.services.scopes import membership_grant, personal_scope_ensure
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def personal(tenant_a: Tenant) -> Scope:
    return personal_scope_ensure(user_id=tenant_a.admin.pk, username="acme-admin")


def test_a_personal_scope_refuses_a_member_over_rest(
    client: Client, tenant_a: Tenant, personal: Scope
) -> None:
    client.force_login(tenant_a.admin)
    response = client.post(
        f"/api/v1/scopes/{personal.group_id}/members",
        {"user": tenant_a.viewer.get_username(), "role": "viewer"},
        content_type="application/json",
    )
    assert response.status_code == 403
    assert "its owner's alone" in response.json()["detail"]
    assert list(Membership.objects.filter(scope=personal).values_list("user_id", flat=True)) == [
        tenant_a.admin.pk
    ]


def test_a_personal_scope_refuses_an_invitation_and_a_key_for_someone_else(
    client: Client, tenant_a: Tenant, personal: Scope
) -> None:
    client.force_login(tenant_a.admin)
    invited = client.post(
        f"/api/v1/scopes/{personal.group_id}/invitations",
        {"email": "friend@example.org", "role": "viewer"},
        content_type="application/json",
    )
    assert invited.status_code in (400, 403), invited.content
    key = client.post(
        "/api/v1/keys",
        {"name": "k", "scope": personal.group_id, "owner": tenant_a.viewer.get_username(),
         "role_ceiling": "viewer"},
        content_type="application/json",
    )  # fmt: skip
    assert key.status_code == 403, key.content
    own = client.post(
        "/api/v1/keys",
        {"name": "mine", "scope": personal.group_id, "owner": tenant_a.admin.get_username(),
         "role_ceiling": "viewer"},
        content_type="application/json",
    )  # fmt: skip
    assert own.status_code == 201, own.content  # the owner's own key is fine


def test_no_service_grants_a_role_on_a_personal_scope(tenant_a: Tenant, personal: Scope) -> None:
    with pytest.raises(PermissionDenied, match="its owner's alone"):
        membership_grant(user_id=tenant_a.viewer.pk, scope_id=personal.pk, role=Role.VIEWER)
