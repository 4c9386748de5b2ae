"""Who may add a source through the API, and what a caller who may not is told.

A source reaches the network and the files an operator allow-listed, so only an admin
of its scope adds one. A caller who administers no scope is refused before its body is
read: it learns nothing of what a body it could never send would need.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from curation.models import Source
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
ADMINS_ONLY = "only an admin of the scope can add or change its sources"


def _post(client: Client, key: str, body: Any) -> Any:
    return client.post(
        "/api/v1/sources", body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )  # fmt: skip


def _markdown(tenant: Tenant) -> dict[str, Any]:
    return {
        "scope": tenant.workspace.group_id, "name": "runbooks «ñ» 'x'", "kind": "markdown",
        "config": {"root": "/nowhere-allowed"}, "trust_tier": 2,
    }  # fmt: skip


def _sources(tenant: Tenant) -> int:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.count()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="empty"),
        pytest.param({"name": "x", "kind": "markdown"}, id="no-scope"),
        pytest.param({"name": "x", "tier": 2}, id="unknown-field"),
        pytest.param("{not json", id="malformed"),
    ],
)
def test_a_key_that_administers_no_scope_is_refused_before_its_body_is_read(
    client: Client, tenant_a: Tenant, body: Any
) -> None:
    key = tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.REVIEWER).plaintext
    response = _post(client, key, body)
    assert response.status_code == 403
    assert response.json() == {"detail": ADMINS_ONLY}


@pytest.mark.parametrize("caller", ["viewer", "another-scopes-admin"])
def test_a_whole_body_from_anyone_but_an_admin_of_its_scope_adds_nothing(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, caller: str
) -> None:
    issued = (
        tenant_a.issue_key(owner=tenant_a.viewer, role=Role.VIEWER)
        if caller == "viewer"
        else tenant_b.issue_key(owner=tenant_b.admin, role=Role.ADMIN)
    )
    response = _post(client, issued.plaintext, _markdown(tenant_a))
    assert response.status_code == 403
    assert response.json() == {"detail": ADMINS_ONLY}
    assert _sources(tenant_a) == 0


def test_an_admin_is_still_told_what_is_wrong_with_a_body(client: Client, tenant_a: Tenant) -> None:
    key = tenant_a.issue_key(owner=tenant_a.admin, role=Role.ADMIN).plaintext
    response = _post(client, key, {"name": "x", "kind": "markdown"})
    assert response.status_code == 400
    assert "scope" in response.json()
