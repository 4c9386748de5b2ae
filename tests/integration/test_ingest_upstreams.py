"""HTTP sources through the whole pipeline, and what an upstream failure costs."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Source
from curation.services.sources import source_create
from curation.usecases import ingest_now
from tenants import rls
from tests.support.fake_upstreams import TOKEN, FakeUpstreams, Fault, jira_issue
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def jira(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VERA_SOURCE_SECRET__TEST_JIRA", TOKEN)
    with FakeUpstreams() as upstream:
        upstream.jira_issues = [
            jira_issue(
                "OPS-1",
                summary="Move billing-api to the new cluster",
                updated="2026-03-01T10:00:00.000+0000",
                status={"name": "In Progress"},
                issuetype={"name": "Task"},
                assignee={"displayName": "Rita Ops"},
                description="The billing-api depends on ledger-db.",
            ),
            jira_issue(
                "OPS-2",
                summary="Rotate certificates",
                updated="2026-03-02T10:00:00.000+0000",
                issuetype={"name": "Task"},
            ),
        ]
        yield upstream


@pytest.fixture(autouse=True)
def _jira_secret_granted(settings: Any, tenant_a: Tenant) -> None:
    """The operator gave the Jira secret to tenant A's workspace alone."""
    settings.VERA_SOURCES__SECRET_SCOPES = {
        "VERA_SOURCE_SECRET__TEST_JIRA": [tenant_a.workspace.group_id]
    }


def _jira_source(tenant: Tenant, base_url: str) -> Source:
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        return source_create(
            actor=principal,
            group_id=tenant.workspace.group_id,
            name="jira",
            kind="jira",
            config={"base_url": base_url},
            token_env="VERA_SOURCE_SECRET__TEST_JIRA",
            trust_tier=2,
        )


def test_jira_issues_become_structured_and_free_text_claims(
    tenant_a: Tenant, jira: FakeUpstreams
) -> None:
    source = _jira_source(tenant_a, jira.base_url)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert (report.new, report.failed, report.error) == (2, 0, "")
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in jira.requests)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        predicates = set(
            Claim.objects.filter(status=ClaimStatus.PUBLISHED).values_list("predicate", flat=True)
        )
        assert {"ASSIGNED_TO", "HAS_STATUS", "DEPENDS_ON", "STATES"} <= predicates
        assert Claim.objects.get(predicate="ASSIGNED_TO").authority == 0.85
        assert Source.objects.get(pk=source.pk).cursor


def test_an_upstream_failure_fails_the_run_and_loses_nothing(
    tenant_a: Tenant, jira: FakeUpstreams, client: Client
) -> None:
    source = _jira_source(tenant_a, jira.base_url)
    ingest_now(source_id=source.pk, group_id=source.group_id)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        before = (
            Episode.objects.count(),
            Claim.objects.count(),
            Source.objects.get(pk=source.pk).cursor,
        )
    jira.fail_next(Fault.unauthorised())
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert "unauthorised" in report.error.lower() or "401" in report.error
    assert TOKEN not in report.error
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        after = (
            Episode.objects.count(),
            Claim.objects.count(),
            Source.objects.get(pk=source.pk).cursor,
        )
        failed = Source.objects.get(pk=source.pk)
    assert after == before
    assert (failed.last_run_status, failed.last_error) == ("failed", report.error)
    client.force_login(tenant_a.admin)
    listed = client.get("/api/v1/sources").json()["results"][0]
    assert listed["last_run_status"] == "failed"
    assert TOKEN not in str(listed)
