"""Rate limits of the REST API: counted in the real Redis, overridden per workspace in Postgres.

Each test gives its workspace a tiny limit through the scope's override (the server's
defaults are far above what the suite sends), so a few requests reach it.
"""

from __future__ import annotations

import logging
import socket

import pytest
import yaml
from django.test import Client

from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.selectors import rate_limit_scopes
from tenants.services.scopes import membership_grant
from tests.support.tenancy import Tenant
from vera import throttling

pytestmark = pytest.mark.django_db


def _bearer(tenant: Tenant, owner: str = "viewer") -> dict[str, str]:
    issued = tenant.issue_key(owner=getattr(tenant, owner))
    return {"HTTP_AUTHORIZATION": f"Bearer {issued.plaintext}"}


def _limit(tenant: Tenant, **limits: int) -> None:
    Scope.objects.filter(pk=tenant.workspace.pk).update(**limits)


def _searches(client: Client, key: dict[str, str], count: int) -> list[int]:
    return [client.get("/api/v1/search", {"q": "billing"}, **key).status_code for _ in range(count)]


def test_a_key_past_its_workspace_limit_is_429_with_retry_after(
    client: Client, tenant_a: Tenant
) -> None:
    _limit(tenant_a, search_limit=3)
    key = _bearer(tenant_a)
    assert _searches(client, key, 3) == [200, 200, 200]

    refused = client.get("/api/v1/search", {"q": "billing"}, **key)

    assert refused.status_code == 429
    # The window slides: the three requests weigh in until they are a minute old.
    assert 1 <= int(refused["Retry-After"]) <= 2 * 60
    assert refused.json()["detail"].startswith(
        "Search rate limit reached for this workspace: 3 per 60 s."
    )


def test_another_workspace_is_unaffected_while_one_is_refused(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    _limit(tenant_a, search_limit=2)
    key_a, key_b = _bearer(tenant_a), _bearer(tenant_b)
    assert _searches(client, key_a, 3) == [200, 200, 429]
    assert _searches(client, key_b, 5) == [200] * 5
    assert _searches(client, key_a, 1) == [429]  # still refused meanwhile


def test_a_workspace_limit_is_shared_by_its_keys(client: Client, tenant_a: Tenant) -> None:
    _limit(tenant_a, search_limit=3)
    viewer, reviewer = _bearer(tenant_a), _bearer(tenant_a, "reviewer")
    assert _searches(client, viewer, 2) == [200, 200]
    assert _searches(client, reviewer, 2) == [200, 429]


def test_a_per_principal_override_limits_each_key_on_its_own(
    client: Client, tenant_a: Tenant
) -> None:
    _limit(tenant_a, principal_search_limit=2)
    viewer, reviewer = _bearer(tenant_a), _bearer(tenant_a, "reviewer")
    assert _searches(client, viewer, 3) == [200, 200, 429]
    refused = client.get("/api/v1/search", {"q": "billing"}, **viewer)
    assert "for this API key: 2 per 60 s" in refused.json()["detail"]
    assert _searches(client, reviewer, 2) == [200, 200]


def test_writes_have_a_budget_apart_from_searches(client: Client, tenant_a: Tenant) -> None:
    _limit(tenant_a, write_limit=1)
    key = _bearer(tenant_a)
    vote = {"hit_id": 1, "helpful": True}
    # Counted before the view runs: a refused vote (no such hit) spends the budget too.
    first = client.post("/api/v1/feedback", vote, content_type="application/json", **key)
    second = client.post("/api/v1/feedback", vote, content_type="application/json", **key)
    assert (first.status_code, second.status_code) == (404, 429)
    assert second.json()["detail"].startswith("Write rate limit reached for this workspace")
    assert _searches(client, key, 2) == [200, 200]


def test_plain_reads_are_not_limited(client: Client, tenant_a: Tenant) -> None:
    _limit(tenant_a, search_limit=1, write_limit=1, principal_search_limit=1)
    key = _bearer(tenant_a)
    codes = {client.get("/api/v1/claims", **key).status_code for _ in range(3)}
    assert codes == {200}


def test_a_session_user_is_charged_to_the_workspace_they_belong_to(
    client: Client, tenant_a: Tenant
) -> None:
    _limit(tenant_a, search_limit=1)
    client.force_login(tenant_a.reviewer)
    assert _searches(client, {}, 2) == [200, 429]


def test_a_member_of_an_organisation_is_charged_to_it_not_to_each_workspace_below(
    tenant_a: Tenant,
) -> None:
    membership_grant(user_id=tenant_a.admin.pk, scope_id=tenant_a.org.pk, role=Role.ADMIN)
    scopes = rate_limit_scopes(tenant_a.principal(tenant_a.admin))
    assert [scope.group_id for scope in scopes] == [tenant_a.org.group_id]


def test_requests_pass_with_one_warning_when_the_counters_are_unreachable(
    client: Client, tenant_a: Tenant, settings, caplog: pytest.LogCaptureFixture, monkeypatch
) -> None:
    monkeypatch.setattr(throttling, "_last_warning", -throttling._WARN_EVERY_S)
    _limit(tenant_a, search_limit=1)
    key = _bearer(tenant_a)
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        settings.REDIS_URL = f"redis://127.0.0.1:{sock.getsockname()[1]}/0"
        with caplog.at_level(logging.WARNING, logger="vera.throttling"):
            assert _searches(client, key, 3) == [200, 200, 200]
    warnings = [r for r in caplog.records if "rate limits not enforced" in r.getMessage()]
    assert len(warnings) == 1


def test_the_schema_documents_the_429_of_limited_operations_only(
    client: Client, tenant_a: Tenant
) -> None:
    client.force_login(tenant_a.admin)
    paths = yaml.safe_load(client.get("/api/v1/schema").content)["paths"]
    limited = paths["/api/v1/search"]["get"]["responses"]["429"]
    assert limited["headers"]["Retry-After"]["schema"]["type"] == "integer"
    assert "429" in paths["/api/v1/feedback"]["post"]["responses"]
    assert "429" not in paths["/api/v1/claims"]["get"]["responses"]
