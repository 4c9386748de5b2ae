"""What only the database can refuse is a clear 4xx over REST, never a 500, and the
request's transaction is rolled back (found by schemathesis against the served schema)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from curation.models import Source
from tenants import rls
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


def _source(client: Client, tenant: Tenant, root: Path, name: str = "docs") -> tuple:
    response = client.post(
        "/api/v1/sources",
        {"group_id": tenant.workspace.group_id, "name": name, "kind": "markdown",
         "config": {"root": str(root)}, "trust_tier": 1},
        content_type="application/json",
    )  # fmt: skip
    return response.status_code, response.json()


def test_a_source_name_taken_in_the_workspace_is_a_409_naming_it(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    client.force_login(tenant_a.admin)
    assert _source(client, tenant_a, tmp_path)[0] == 201

    status, body = _source(client, tenant_a, tmp_path)

    assert status == 409
    assert body == {"detail": "a source with this name exists in this workspace already"}
    assert _source(client, tenant_a, tmp_path, name="other")[0] == 201  # nothing broken
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert sorted(Source.objects.values_list("name", flat=True)) == ["docs", "other"]


@pytest.mark.parametrize("url", ["/api/v1/sources", "/api/v1/claims", "/api/v1/episodes"])
def test_pagination_past_what_postgres_can_hold_is_bounded_or_refused(
    tenant_a: Tenant, client: Client, url: str
) -> None:
    client.force_login(tenant_a.admin)
    huge = "9" * 23

    assert client.get(url, {"limit": huge}).status_code == 200  # cut at 500
    refused = client.get(url, {"offset": huge})
    assert refused.status_code == 400
    assert refused.json() == {"offset": ["at most 1000000000"]}
