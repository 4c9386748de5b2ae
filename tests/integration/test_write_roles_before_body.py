"""Proposals and snapshots: a caller who holds the needed role in no scope is refused
before its body is read (403 with what it lacks, whatever the body), and nothing is
recorded; a caller who holds it is still told what is wrong with a body (400).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from curation.models import Claim
from curation.usecases import PROPOSERS_ONLY
from retrieval.models import Snapshot
from retrieval.usecases import SNAPSHOT_ADMINS_ONLY
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

BODIES = [
    pytest.param({}, id="empty"),
    pytest.param({"name": "x"}, id="missing-fields"),
    pytest.param({"subject": "x", "tier": 2}, id="unknown-field"),
    pytest.param("{not json", id="malformed"),
]


def _post(client: Client, key: str, path: str, body: Any) -> Any:
    return client.post(
        path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


def _counts(tenant: Tenant) -> tuple[int, int]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.count(), Snapshot.objects.count()


@pytest.mark.parametrize("body", BODIES)
def test_a_viewer_is_refused_a_proposal_before_its_body_is_read(
    client: Client, tenant_a: Tenant, body: Any
) -> None:
    key = tenant_a.issue_key(owner=tenant_a.viewer, role=Role.VIEWER).plaintext
    response = _post(client, key, "/api/v1/proposals", body)
    assert response.status_code == 403
    assert response.json() == {"detail": PROPOSERS_ONLY}


@pytest.mark.parametrize("body", BODIES)
def test_a_reviewer_is_refused_a_snapshot_before_its_body_is_read(
    client: Client, tenant_a: Tenant, body: Any
) -> None:
    key = tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.REVIEWER).plaintext
    response = _post(client, key, "/api/v1/snapshots", body)
    assert response.status_code == 403
    assert response.json() == {"detail": SNAPSHOT_ADMINS_ONLY}


def test_whole_bodies_from_callers_without_the_role_record_nothing(
    client: Client, tenant_a: Tenant
) -> None:
    viewer = tenant_a.issue_key(owner=tenant_a.viewer, role=Role.VIEWER).plaintext
    scope = tenant_a.workspace.group_id
    proposal = {
        "scope": scope, "subject": "billing-api «ñ»", "predicate": "RUNS_ON",
        "object": "k8s-prod", "evidence": "The billing-api runs on k8s-prod.",
    }  # fmt: skip
    assert _post(client, viewer, "/api/v1/proposals", proposal).status_code == 403
    snapshot = {"scope": scope, "name": "before 'the' move"}
    assert _post(client, viewer, "/api/v1/snapshots", snapshot).status_code == 403
    assert _counts(tenant_a) == (0, 0)


def test_callers_with_the_role_are_still_told_what_is_wrong_with_a_body(
    client: Client, tenant_a: Tenant
) -> None:
    admin = tenant_a.issue_key(owner=tenant_a.admin, role=Role.ADMIN).plaintext
    response = _post(client, admin, "/api/v1/snapshots", {"scope": tenant_a.workspace.group_id})
    assert response.status_code == 400
    assert "name" in response.json()
    response = _post(client, admin, "/api/v1/proposals", {"subject": "x"})
    assert response.status_code == 400
    assert "predicate" in response.json()
