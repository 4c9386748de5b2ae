"""An ingest page and a reprocessing batch of one source take turns on the source's row.

An ingest page locks the source's row for its transaction (a retraction and an erasure
do too); a reprocessing batch takes the same lock before it reads which documents are
due. While a page of the source is being written, a batch waits, and then reads the
documents as the page left them: a revision the page superseded is not read again,
which could publish the old revision's values as new.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections, transaction

from curation.models import Reprocessing, Source
from curation.usecases import reprocess_begin, reprocess_now
from tenants import rls
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}


def _waiting_on_the_source_row(deadline_s: float = 20) -> bool:
    """Whether another session of this database is waiting for a row lock on
    curation_source (polled until the deadline)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            # Statistics views are a snapshot per transaction, and this one is long.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
                " AND query ILIKE %s",
                ['%FROM "curation_source"%FOR UPDATE%'],
            )
            row = cursor.fetchone()
        if row and row[0]:
            return True
        time.sleep(0.05)
    return False


def test_a_reprocessing_batch_waits_for_the_ingest_page_holding_the_source(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id = ingest_markdown(tenant_a, tmp_path, DOCS)
    admin = tenant_a.principal(tenant_a.admin)
    group = tenant_a.workspace.group_id
    with rls.tenant_context(admin):
        source = Source.objects.get(pk=source_id)
        run = reprocess_begin(actor=admin, source=source, everything=True, reason="rules")
    outcome: dict[str, Reprocessing] = {}

    def reprocess() -> None:
        try:
            outcome["run"] = reprocess_now(run_id=run.pk, group_id=group)
        finally:
            connections.close_all()

    worker = threading.Thread(target=reprocess)
    with transaction.atomic(), rls.tenant_context(admin):
        # What an ingest page holds while it writes.
        Source.objects.select_for_update().get(pk=source_id)
        worker.start()
        waited = _waiting_on_the_source_row()
        still_going = worker.is_alive()
    worker.join(timeout=60)

    assert (waited, still_going) == (True, True)
    assert (outcome["run"].status, outcome["run"].counts["documents"]) == ("finished", 1)
