"""Search across the scopes a caller reads: the same fact published in an organisation
and in its workspace comes back once, citing both; `scope=` narrows to one scope the
caller reads (and what is under it); any other scope is a 404, never data."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tenants.domain.scopes import Role
from tenants.services.scopes import membership_grant
from tests.support.ingest import T0, drain_outbox, ingest_markdown, ingest_run, write_files
from tests.support.tenancy import PASSWORD, Tenant, create_source

pytestmark = pytest.mark.django_db

FACT = "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"


def _hits(client: Client, **params: str) -> tuple[int, dict]:
    response = client.get("/api/v1/search", {"q": "where does the billing-api run", **params})
    return response.status_code, response.json()


def test_a_fact_in_the_organisation_and_its_workspace_comes_back_once_citing_both(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    owner = get_user_model().objects.create_user(username="olga", password=PASSWORD)
    membership_grant(user_id=owner.pk, scope_id=tenant_a.org.pk, role=Role.OWNER)
    org = tenant_a.org.group_id
    write_files(tmp_path / "org", {"billing.md": FACT}, at=T0)
    source_id = create_source(
        tenant_a.principal(owner), group_id=org, kind="markdown", name="org-docs",
        config={"root": str(tmp_path / "org")}, tier=1,
    )  # fmt: skip
    ingest_run(source_id=source_id, group_id=org)
    drain_outbox()
    ingest_markdown(tenant_a, tmp_path / "ws", {"billing.md": FACT}, at=T0)
    client.force_login(owner)

    status, body = _hits(client)
    assert status == 200, body
    runs_on = [hit for hit in body["hits"] if hit["predicate"] == "RUNS_ON"]
    assert len(runs_on) == 1, [(h["claim_id"], h["scope"]) for h in runs_on]
    (hit,) = runs_on
    assert len(hit["also_claim_ids"]) == 1
    assert {c["source"] for c in hit["citations"]} == {"org-docs", "docs"}

    # Narrowed to the workspace: its own claim only, nothing merged.
    status, narrowed = _hits(client, scope=tenant_a.workspace.group_id)
    assert status == 200
    assert {h["scope"] for h in narrowed["hits"]} == {tenant_a.workspace.group_id}
    (ws_hit,) = [h for h in narrowed["hits"] if h["predicate"] == "RUNS_ON"]
    assert (ws_hit["also_claim_ids"], [c["source"] for c in ws_hit["citations"]]) == ([], ["docs"])
    # Narrowed to the organisation: it and what is under it.
    status, whole = _hits(client, scope=tenant_a.org.group_id)
    assert status == 200
    assert len([h for h in whole["hits"] if h["predicate"] == "RUNS_ON"]) == 1

    # Another tenant's scope, an unknown one, a malformed one: never data.
    assert _hits(client, scope=tenant_b.workspace.group_id)[0] == 404
    assert _hits(client, scope="w:" + "0" * 32)[0] == 404
    status, bad = _hits(client, scope="tenant-b")
    assert status == 400
    assert "scope" in bad
    # A workspace viewer reads the organisation's published facts too: once, citing both.
    viewer = Client()
    viewer.force_login(tenant_a.viewer)
    status, theirs = _hits(viewer)
    assert status == 200
    (seen,) = [h for h in theirs["hits"] if h["predicate"] == "RUNS_ON"]
    assert {c["source"] for c in seen["citations"]} == {"org-docs", "docs"}
    # Narrowed to the organisation: its facts alone, read-only (no hit id to vote on).
    status, above = _hits(viewer, scope=tenant_a.org.group_id)
    assert status == 200
    assert above["hits"]
    assert {h["scope"] for h in above["hits"]} == {tenant_a.org.group_id}
    assert all(h["id"] is None for h in above["hits"])
    # The other tenant's organisation stays out of reach.
    assert _hits(viewer, scope=tenant_b.org.group_id)[0] == 404
