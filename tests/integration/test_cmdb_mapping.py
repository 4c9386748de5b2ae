"""A CMDB source maps its own columns onto predicates (config `mapping`, over the defaults).

Real ingestion of a CMDB export, and the REST API refusing a bad mapping at save.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Source
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.ingest import ingest_cmdb
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

EXPORT = "id,name,runtime_host,owner\nCI001,billing-api,k8s-prod-1,payments-team\n"


def _published(tenant: Tenant) -> set[tuple[str, str, str]]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = Claim.objects.filter(status=ClaimStatus.PUBLISHED).values_list(
            "subject__canonical_name", "predicate", "object_entity__canonical_name"
        )
        return set(rows)


def test_a_custom_column_gives_published_claims_when_the_source_maps_it(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    ingest_cmdb(tenant_a, tmp_path / "cmdb.csv", EXPORT, mapping={"runtime_host": "RUNS_ON"})
    assert ("billing-api", "RUNS_ON", "k8s-prod-1") in _published(tenant_a)


def test_the_default_columns_still_give_claims_when_the_source_adds_one(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    ingest_cmdb(tenant_a, tmp_path / "cmdb.csv", EXPORT, mapping={"runtime_host": "RUNS_ON"})
    assert ("billing-api", "OWNED_BY", "payments-team") in _published(tenant_a)


def test_an_unmapped_column_gives_no_claim_when_the_source_maps_nothing(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    ingest_cmdb(tenant_a, tmp_path / "cmdb.csv", EXPORT)
    assert {predicate for _, predicate, _ in _published(tenant_a)} == {"OWNED_BY"}


def _post(client: Client, tenant: Tenant, config: dict[str, Any]) -> Any:
    key = tenant.issue_key(owner=tenant.admin, role=Role.ADMIN).plaintext
    body = {
        "scope": tenant.workspace.group_id, "name": "cmdb", "kind": "cmdb",
        "config": config, "token_env": "", "trust_tier": 1,
    }  # fmt: skip
    return client.post(
        "/api/v1/sources", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


def test_rest_answers_400_naming_the_mapping_when_a_predicate_is_not_upper_snake(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    config = {"path": str(tmp_path / "cmdb.csv"), "mapping": {"runtime_host": "runs on"}}
    response = _post(client, tenant_a, config)
    assert response.status_code == 400
    assert "mapping maps 'runtime_host'" in response.json()["detail"]


def test_rest_stores_no_source_when_the_mapping_is_bad(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    _post(client, tenant_a, {"path": str(tmp_path / "cmdb.csv"), "mapping": {"host": 7}})
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Source.objects.exists()


def test_rest_creates_the_source_when_the_mapping_keeps_the_rules(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    config = {"path": str(tmp_path / "cmdb.csv"), "mapping": {"runtime_host": "RUNS_ON"}}
    response = _post(client, tenant_a, config)
    assert response.status_code == 201, response.content
    assert response.json()["config"] == config
