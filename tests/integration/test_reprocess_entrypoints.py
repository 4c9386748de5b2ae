"""Starting and following a reprocessing from the REST API and the Django admin.

A run is started through `reprocess_start` (admins of the source's scope) and sent to a
worker only once the request's transaction commits; its progress is read back at the
run's own URL. Other tenants' sources and runs are not there at all.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from curation.domain.sources import AGENT_KIND
from curation.models import Reprocessing, Source
from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import AuditEvent
from tests.support.ingest import ingest_markdown, ingest_org_handbook
from tests.support.tenancy import Tenant
from vera.celery import app

pytestmark = pytest.mark.django_db

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "team.md": "# Team\n\nThe billing-api is owned by payments-team.\n",
}
FACT = {"subject": "ledger-api", "predicate": "RUNS_ON", "object": "k8s-prod-7",
        "evidence": "The deploy manifest pins ledger-api to k8s-prod-7."}  # fmt: skip


@pytest.fixture(autouse=True)
def _fresh_counters() -> None:
    cache.clear()  # rate-limit and failed-authentication counters of earlier tests


@pytest.fixture
def source_id(tenant_a: Tenant, tmp_path: Path) -> int:
    return ingest_markdown(tenant_a, tmp_path, DOCS)


def _key(tenant: Tenant, role: Role) -> dict[str, str]:
    """Authorization for a key of the tenant's member with `role` (a contributor key is
    the reviewer's, capped)."""
    owner = {Role.ADMIN: tenant.admin, Role.VIEWER: tenant.viewer}.get(role, tenant.reviewer)
    return {"HTTP_AUTHORIZATION": f"Bearer {tenant.issue_key(owner=owner, role=role).plaintext}"}


def _reprocess(client: Client, key: dict[str, str], source: int, body: Any = None) -> Any:
    return client.post(
        f"/api/v1/sources/{source}/reprocess", {} if body is None else body,
        content_type="application/json", **key,
    )  # fmt: skip


def _runs(tenant: Tenant) -> list[Reprocessing]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(Reprocessing.objects.order_by("pk"))


def _as_a_worker(callbacks: list[Callable[[], object]]) -> None:
    """Run what the request left for after its commit, with Celery sending tasks to this
    process (eager) instead of the broker: the task body runs as a worker would run it."""
    before = {name: app.conf[name] for name in ("task_always_eager", "task_eager_propagates")}
    app.conf.update(task_always_eager=True, task_eager_propagates=True)
    try:
        for callback in callbacks:
            callback()
    finally:
        app.conf.update(before)


def test_an_admin_starts_a_run_queued_after_commit_and_follows_it_at_its_url(
    tenant_a: Tenant, source_id: int, client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    admin = _key(tenant_a, Role.ADMIN)
    with django_capture_on_commit_callbacks() as callbacks:
        response = _reprocess(client, admin, source_id, {"everything": True, "reason": "rules"})

    assert response.status_code == 202, response.content
    run = response.json()
    assert (run["status"], run["source"], run["total"], run["documents"]) == (
        "running", source_id, 2, 0,
    )  # fmt: skip
    assert (run["everything"], run["reason"], run["group_id"]) == (
        True, "rules", tenant_a.workspace.group_id,
    )  # fmt: skip
    assert run["url"] == f"http://testserver/api/v1/reprocessings/{run['id']}"
    assert len(callbacks) == 1  # sent to a worker only after the commit
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="source.reprocess")
    assert (event.target_id, event.data["run"]) == (str(source_id), run["id"])

    _as_a_worker(callbacks)
    progress = client.get(run["url"], **admin)

    assert progress.status_code == 200, progress.content
    done = progress.json()
    assert (done["id"], done["status"], done["documents"], done["total"]) == (
        run["id"], "finished", 2, 2,
    )  # fmt: skip
    assert done["counts"]["kept"] >= 2  # the same documents give the same claims
    assert done["failures"] == []
    assert done["finished_at"] is not None


def test_a_request_while_a_run_is_going_answers_that_run(
    tenant_a: Tenant, source_id: int, client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    admin = _key(tenant_a, Role.ADMIN)
    with django_capture_on_commit_callbacks() as callbacks:
        first = _reprocess(client, admin, source_id, {"everything": True})
        second = _reprocess(client, admin, source_id)

    assert (first.status_code, second.status_code) == (202, 200)
    assert second.json()["id"] == first.json()["id"]
    assert len(callbacks) == 1  # the run is sent once
    assert len(_runs(tenant_a)) == 1


@pytest.mark.parametrize("role", [Role.VIEWER, Role.CONTRIBUTOR, Role.REVIEWER])
def test_only_the_scopes_admins_may_reprocess(
    tenant_a: Tenant, source_id: int, client: Client, role: Role
) -> None:
    response = _reprocess(client, _key(tenant_a, role), source_id)

    assert response.status_code == 403
    assert "needs the admin role" in response.json()["detail"]
    assert _runs(tenant_a) == []


def test_a_run_is_followed_by_its_scopes_admins_only(
    tenant_a: Tenant, source_id: int, client: Client
) -> None:
    run = _reprocess(client, _key(tenant_a, Role.ADMIN), source_id).json()

    response = client.get(f"/api/v1/reprocessings/{run['id']}", **_key(tenant_a, Role.REVIEWER))

    assert response.status_code == 403
    assert "admins" in response.json()["detail"]


def test_another_tenants_source_and_run_are_not_found(
    tenant_a: Tenant, tenant_b: Tenant, source_id: int, client: Client
) -> None:
    run = _reprocess(client, _key(tenant_a, Role.ADMIN), source_id).json()
    other = _key(tenant_b, Role.ADMIN)

    assert _reprocess(client, other, source_id).status_code == 404
    assert client.get(f"/api/v1/reprocessings/{run['id']}", **other).status_code == 404
    assert _reprocess(client, other, 99999999999999999999).status_code == 404
    assert len(_runs(tenant_a)) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"everything": "maybe"}, "valid boolean"),
        ({"reason": "x" * 201}, "no more than 200 characters"),
        ({"everything": True, "scope": "w:other"}, "unknown field(s): scope"),
        ([{"everything": True}], "Expected a dictionary"),
    ],
)
def test_a_bad_body_is_a_400_with_a_message(
    tenant_a: Tenant, source_id: int, client: Client, body: Any, message: str
) -> None:
    response = _reprocess(client, _key(tenant_a, Role.ADMIN), source_id, body)

    assert response.status_code == 400
    assert message in str(response.json())
    assert _runs(tenant_a) == []


def test_the_agents_source_is_refused_with_why(tenant_a: Tenant, client: Client) -> None:
    proposed = client.post(
        "/api/v1/proposals", FACT, content_type="application/json",
        **_key(tenant_a, Role.CONTRIBUTOR),
    )  # fmt: skip
    assert proposed.status_code == 201, proposed.content
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        agents = Source.objects.get(kind=AGENT_KIND)

    response = _reprocess(client, _key(tenant_a, Role.ADMIN), agents.pk)

    assert response.status_code == 400
    assert "the agents' source has no extractor" in response.json()["detail"]
    assert _runs(tenant_a) == []


def test_an_organisations_source_a_workspace_admin_only_reads_is_refused(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    # Its published claims are readable from the workspace below; the source is not theirs.
    source_id = ingest_org_handbook(tenant_a, tmp_path)

    response = _reprocess(client, _key(tenant_a, Role.ADMIN), source_id)

    assert response.status_code == 403
    assert "needs the admin role" in response.json()["detail"]


# --- the Django admin ----------------------------------------------------------------------


@pytest.fixture
def staff(tenant_a: Tenant, client: Client) -> Tenant:
    tenant_a.admin.is_staff = tenant_a.admin.is_superuser = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)
    return tenant_a


def test_the_admin_action_starts_a_run_through_the_service_and_queues_it(
    staff: Tenant, source_id: int, client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(
            "/admin/curation/source/",
            {"action": "reprocess_selected", "_selected_action": [source_id]},
            follow=True,
        )

    assert response.status_code == 200
    [run] = _runs(staff)
    assert f"reprocessing run #{run.pk} started" in response.content.decode()
    assert (run.source_id, run.status, run.requested_by) == (
        source_id, Reprocessing.Status.RUNNING, "user:acme-admin",
    )  # fmt: skip
    assert len(callbacks) == 1
    with rls.tenant_context(staff.principal(staff.admin)):
        assert AuditEvent.objects.filter(
            action="source.reprocess", target_id=str(source_id)
        ).exists()
    page = client.get(f"/admin/curation/reprocessing/{run.pk}/change/").content.decode()
    assert f"0 / {run.total}" in page


def test_the_admin_action_names_a_refused_source_and_starts_the_others(
    staff: Tenant, source_id: int, client: Client
) -> None:
    proposed = client.post(
        "/api/v1/proposals", FACT, content_type="application/json",
        **_key(staff, Role.CONTRIBUTOR),
    )  # fmt: skip
    assert proposed.status_code == 201, proposed.content
    with rls.tenant_context(staff.principal(staff.admin)):
        agents = Source.objects.get(kind=AGENT_KIND)
    client.force_login(staff.admin)

    response = client.post(
        "/admin/curation/source/",
        {"action": "reprocess_selected", "_selected_action": [source_id, agents.pk]},
        follow=True,
    )

    html = response.content.decode()
    assert "the agents&#x27; source has no extractor" in html
    assert [run.source_id for run in _runs(staff)] == [source_id]
