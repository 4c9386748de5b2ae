"""What only the database can refuse is a clear 4xx over REST, never a 500, and the
request's transaction is rolled back (found by schemathesis against the served schema);
and a body that names its scope badly is a 400 saying how to name it."""

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
        {"scope": tenant.workspace.group_id, "name": name, "kind": "markdown",
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


# --- naming the scope: `scope`, or the deprecated `group_id` ----------------------------


def _create(client: Client, root: Path, **naming: str) -> tuple:
    """A markdown source created by a workspace admin, its scope named as given."""
    response = client.post(
        "/api/v1/sources",
        {**naming, "name": "docs", "kind": "markdown", "config": {"root": str(root)},
         "trust_tier": 1},
        content_type="application/json",
    )  # fmt: skip
    return response.status_code, response.json()


@pytest.mark.parametrize("name", ["scope", "group_id"])
def test_a_source_is_created_in_the_scope_when_named_either_way(
    tenant_a: Tenant, tmp_path: Path, client: Client, name: str
) -> None:
    client.force_login(tenant_a.admin)
    group = tenant_a.workspace.group_id

    status, body = _create(client, tmp_path, **{name: group})

    assert status == 201, body
    assert body["group_id"] == group  # a record says where it lives with `group_id`
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Source.objects.get(name="docs").group_id == group


def test_a_source_is_created_when_scope_and_group_id_agree(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    client.force_login(tenant_a.admin)
    group = tenant_a.workspace.group_id
    assert _create(client, tmp_path, scope=group, group_id=group)[0] == 201


def test_a_source_is_refused_with_a_message_when_no_scope_is_named(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    client.force_login(tenant_a.admin)

    assert _create(client, tmp_path) == (400, {"scope": ["This field is required."]})


def test_a_source_is_refused_with_a_message_when_scope_and_group_id_disagree(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    client.force_login(tenant_a.admin)

    status, body = _create(client, tmp_path, scope=tenant_a.workspace.group_id, group_id="w:b")

    assert (status, body) == (
        400,
        {"scope": ["disagrees with group_id (deprecated): send scope alone"]},
    )
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Source.objects.exists()
