"""An erasure's `confirm` is the JSON literal true, nothing that merely reads as true.

DRF's BooleanField takes "yes", "true", "on" and 1 for true; an erasure cannot be undone,
so those are a 400 and nothing is erased. Real pipeline (Markdown source), real Postgres
with RLS, an admin's API key, as a client would send it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from curation.models import Claim, Source
from curation.tasks import process_outbox
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

DOCS = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}
MESSAGE = "must be the JSON literal true or false"


def _erase(client: Client, tenant: Tenant, source_id: int, confirm: Any) -> tuple[int, Any]:
    """POST an erasure of the source with the admin's API key; the status and the body."""
    key = tenant.issue_key(owner=tenant.admin, role=Role.ADMIN)
    response = client.post(
        f"/api/v1/sources/{source_id}/erase",
        json.dumps({"reason": "wrong repository", "confirm": confirm}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key.plaintext}",
    )
    return response.status_code, response.json()


def _left(tenant: Tenant, source_id: int) -> tuple[bool, int]:
    """Whether the source still exists, and how many claims it has."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        exists = Source.objects.filter(pk=source_id).exists()
        return exists, Claim.objects.filter(source_id=source_id).count()


@pytest.mark.parametrize("confirm", ["yes", 1, "true"])
def test_erasure_is_refused_when_confirm_only_reads_as_true(
    confirm: Any, tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    source_id = ingest_markdown(tenant_a, tmp_path, DOCS)
    before = _left(tenant_a, source_id)
    assert before[1] >= 1, "the fixture's document yielded no claims"

    status, body = _erase(client, tenant_a, source_id, confirm)

    assert (status, body) == (400, {"confirm": [MESSAGE]})
    assert _left(tenant_a, source_id) == before


def test_erasure_proceeds_when_confirm_is_the_json_literal_true(
    tenant_a: Tenant, tmp_path: Path, client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    source_id = ingest_markdown(tenant_a, tmp_path, DOCS)

    with django_capture_on_commit_callbacks(execute=True):
        status, body = _erase(client, tenant_a, source_id, True)
    while process_outbox():
        pass

    assert status == 200, body
    assert _left(tenant_a, source_id) == (False, 0)
