"""A reprocessing run whose worker message was lost is worked again, not left "running".

The run is started as the API starts one, but its message never reaches a worker (a
broker restart, a worker killed before it took it). The sweep `curation.resume_reprocessing`
finds it across every group once nobody has advanced it for
VERA_REPROCESS__STALE_AFTER_S, sends it once, and a real ingest-lane worker finishes it.
A run that is moving, or already sent by a sweep, is left alone.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from curation.models import Reprocessing, Source
from curation.tasks import resume_reprocessing
from curation.usecases import reprocess_begin
from tenants import rls
from tenants.selectors import principal_system
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant
from tests.support.workers import celery_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "ledger.md": "# Ledger\n\nThe ledger-db runs on k8s-prod-2.\n",
}
STALE = dt.timedelta(seconds=settings.VERA_REPROCESS__STALE_AFTER_S + 60)


def _started(tenant: Tenant, root: Path, *, idle: dt.timedelta) -> int:
    """A run started as the API starts one, whose message never reached a worker, last
    advanced `idle` ago; its id."""
    source_id = ingest_markdown(tenant, root, DOCS)
    admin = tenant.principal(tenant.admin)
    with rls.tenant_context(admin):
        source = Source.objects.get(pk=source_id)
        run = reprocess_begin(actor=admin, source=source, everything=True, reason="rules")
        Reprocessing.objects.filter(pk=run.pk).update(updated_at=timezone.now() - idle)
    return run.pk


def _run(tenant: Tenant, run_id: int) -> Reprocessing:
    group_id = tenant.workspace.group_id
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        return Reprocessing.objects.get(pk=run_id)


def test_a_run_nobody_advanced_is_sent_again_once_and_a_worker_finishes_it(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    lost = _started(tenant_a, tmp_path / "a", idle=STALE)
    moving = _started(tenant_b, tmp_path / "b", idle=dt.timedelta(seconds=30))

    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue="ingest"
    ):
        assert resume_reprocessing() == [lost]  # found in tenant a's group, not b's
        assert resume_reprocessing() == []  # sent once: the sweep reclaimed it
        deadline = time.monotonic() + 60
        while _run(tenant_a, lost).status == Reprocessing.Status.RUNNING:
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)

    run = _run(tenant_a, lost)
    assert (run.status, run.counts["documents"], run.counts["resumed"]) == ("finished", 2, 1)
    untouched = _run(tenant_b, moving)
    assert (untouched.status, untouched.counts.get("resumed")) == ("running", None)
