"""A source asked to run over REST is run by a real ingest-lane worker, once.

The request commits, its message goes through the real broker to a `celery worker` on
the ingest queue (the app role, as deployed), and the source's progress says what the
worker did. A copy of the message (a redelivery, the schedule's and an admin's request
crossing) does nothing once the run has answered it, and a run that reaches a worker
while another session holds the source's run lock does nothing either.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client

from curation.models import Episode, Source
from curation.tasks import ingest_source
from tenants import rls
from tenants.domain.scopes import Role
from tests.integration.test_source_runs import run_going
from tests.support.ingest import write_files
from tests.support.tenancy import Tenant, markdown_source
from tests.support.workers import celery_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "ledger.md": "# Ledger\n\nThe ledger-db runs on k8s-prod-2.\n",
}


def _source(tenant: Tenant, source_id: int) -> Source:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.get(pk=source_id)


def test_a_run_asked_for_over_rest_is_run_by_a_worker_once(
    tenant_a: Tenant, tmp_path: Path, client: Client, app_database_url: str
) -> None:
    cache.clear()
    write_files(tmp_path / "docs", DOCS)
    source_id = markdown_source(tenant_a, tmp_path / "docs", tier=1, name="runbooks")
    group = tenant_a.workspace.group_id
    key = tenant_a.issue_key(owner=tenant_a.admin, role=Role.ADMIN).plaintext

    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue="ingest"
    ):
        response = client.post(
            f"/api/v1/sources/{source_id}/run", content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )  # fmt: skip
        assert response.status_code == 202, response.content
        asked = response.json()["requested_at"]
        deadline = time.monotonic() + 60
        while _source(tenant_a, source_id).last_run_status != "ok":
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)
        ran = _source(tenant_a, source_id)

        copy = ingest_source.delay(source_id=source_id, group_id=group, requested_at=asked)
        copied = copy.get(timeout=60)
        with run_going(app_database_url, source_id):
            crossing = ingest_source.delay(source_id=source_id, group_id=group).get(timeout=60)

    assert (ran.progress["state"], ran.progress["new"]) == ("finished", 2)
    assert copied["status"] == "skipped"
    assert str(copied["skipped"]).startswith("a run that ended at")
    assert (crossing["status"], crossing["skipped"]) == ("skipped", "a run of this source is going")
    after = _source(tenant_a, source_id)
    assert (after.last_run_at, after.progress) == (ran.last_run_at, ran.progress)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Episode.objects.filter(source_id=source_id).count() == 2
