"""An erasure whose object store is down says so, truthfully, until it is complete.

A real S3 API server (moto, over HTTP) is stopped as an outage would stop it. The
request's own cleanup and then the outbox worker's attempts fail; each failure is on
the tombstone (status, attempts, the store's error) as the admin and the API show it,
although each attempt's work is rolled back. When the job has used its attempts the
tombstone says "failed"; once the store is back and an admin retries the dead job, the
erasure completes and the residual scan finds nothing.
"""

from __future__ import annotations

import datetime as dt
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from curation.domain.outbox import ERASURE_CLEANUP
from curation.models import Episode, OutboxJob
from curation.services.outbox import MAX_ATTEMPTS, outbox_retry
from curation.tasks import process_outbox
from tenants import rls
from tenants.selectors import principal_system
from tests.support.ingest import ingest_markdown
from tests.support.s3_server import S3Server
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

DOCS = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}


def _tombstone(client: Client, pk: int) -> dict:
    response = client.get(f"/api/v1/tombstones/{pk}")
    assert response.status_code == 200, response.content
    return response.json()


def _job(tenant: Tenant) -> OutboxJob:
    group_id = tenant.workspace.group_id
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        return OutboxJob.objects.get(kind=ERASURE_CLEANUP)


def _due_now(tenant: Tenant, **fields: object) -> None:
    """The cleanup job visible at once (it waits a minute, or its backoff, otherwise)."""
    group_id = tenant.workspace.group_id
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        OutboxJob.objects.filter(kind=ERASURE_CLEANUP).update(
            available_at=timezone.now() - dt.timedelta(seconds=1), **fields
        )


def test_a_cleanup_the_store_refuses_says_so_until_it_completes(
    tenant_a: Tenant, tmp_path: Path, client: Client, s3_outage: S3Server, settings,
    django_capture_on_commit_callbacks,
) -> None:  # fmt: skip
    ingest_markdown(tenant_a, tmp_path, DOCS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        episode = Episode.objects.get(external_id="billing.md")
    client.force_login(tenant_a.admin)

    s3_outage.stop()
    with django_capture_on_commit_callbacks(execute=True):  # the request's own cleanup
        response = client.post(
            f"/api/v1/episodes/{episode.pk}/erase", {"reason": "a person's request",
            "confirm": True}, content_type="application/json",
        )  # fmt: skip
    assert response.status_code == 200, response.content
    pk = response.json()["id"]
    first = _tombstone(client, pk)
    assert (first["status"], first["attempts"]) == ("retrying", 1)
    assert "EndpointConnectionError" in first["last_error"]

    _due_now(tenant_a)  # the worker's attempt fails too, and says so
    process_outbox()
    second = _tombstone(client, pk)
    assert (second["status"], second["attempts"]) == ("retrying", 2)
    assert _job(tenant_a).status == OutboxJob.Status.PENDING

    _due_now(tenant_a, attempts=MAX_ATTEMPTS - 1)  # its last attempt
    process_outbox()
    last = _tombstone(client, pk)
    assert (last["status"], last["attempts"]) == ("failed", 3)
    assert "EndpointConnectionError" in last["last_error"]
    assert _job(tenant_a).status == OutboxJob.Status.DEAD

    s3_outage.start()  # moto keeps nothing across a restart: the bucket is made again
    s3_outage.client().create_bucket(Bucket=settings.VERA_OBJECT_STORE__BUCKET)
    job = _job(tenant_a)
    with rls.tenant_context(principal_system("test", group_ids=[job.group_id])):
        assert outbox_retry(job_ids=[job.pk]) == 1  # the admin's "Retry" action
    _due_now(tenant_a)
    process_outbox()
    done = _tombstone(client, pk)
    assert (done["status"], done["attempts"], done["last_error"]) == ("complete", 4, "")
    out = StringIO()
    call_command("erasure_verify", str(pk), stdout=out)
    assert "is complete" in out.getvalue()
