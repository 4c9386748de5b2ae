"""Celery tasks: thin, keyword-only, primitive arguments."""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.utils import timezone

from curation import bootstrap
from curation.models import Source
from curation.services.ingest import IngestReport, source_ingest, source_run_finished
from curation.services.outbox import outbox_process
from tenants import rls
from tenants.selectors import principal_system

logger = logging.getLogger(__name__)
OUTBOX_BATCHES_PER_RUN = 20


def ingest_now(*, source_id: int, group_id: str) -> IngestReport:
    """Run one source's ingestion in this process (the task body, also used by `ingest`)."""
    principal = principal_system("ingest", group_ids=[group_id])
    with rls.tenant_context(principal):
        source = Source.objects.get(pk=source_id)
    try:
        pipeline = bootstrap.providers().pipeline_for(source)
    except ValueError as error:  # unknown kind, missing secret, bad config
        report = IngestReport(source_id=source_id, error=str(error))
        with rls.tenant_context(principal):
            source_run_finished(source_id=source_id, report=report)
        return report
    return source_ingest(source_id=source_id, principal=principal, pipeline=pipeline)


@shared_task(name="curation.ingest_source", acks_late=True)
def ingest_source(*, source_id: int, group_id: str) -> dict[str, object]:
    """Ingest one source from its cursor."""
    report = ingest_now(source_id=source_id, group_id=group_id)
    return {
        "status": report.status,
        "new": report.new,
        "unchanged": report.unchanged,
        "failed": report.failed,
        "claims": dict(report.claims),
        "error": report.error,
    }


@shared_task(name="curation.schedule_sources")
def schedule_sources() -> int:
    """Enqueue every enabled source whose schedule is due (beat runs this every minute)."""
    now = timezone.now()
    with rls.tenant_context(principal_system("scheduler")):
        due = [
            (source.pk, source.group_id)
            for source in Source.objects.filter(enabled=True, schedule_seconds__isnull=False)
            if source.last_run_at is None
            or source.last_run_at + dt.timedelta(seconds=source.schedule_seconds or 0) <= now
        ]
    for source_id, group_id in due:
        ingest_source.delay(source_id=source_id, group_id=group_id)
    return len(due)


@shared_task(name="curation.process_outbox")
def process_outbox() -> dict[str, int]:
    """Project published claims into the graph; batches until the due queue is empty."""
    providers = bootstrap.providers()
    handlers, prepare = providers.outbox_handlers(), providers.outbox_prepare()
    totals: dict[str, int] = {}
    for _ in range(OUTBOX_BATCHES_PER_RUN):
        with rls.tenant_context(principal_system("outbox")):
            counts = outbox_process(handlers=handlers, prepare=prepare)
        for outcome, count in counts.items():
            totals[outcome] = totals.get(outcome, 0) + count
        if not counts:
            break
    return totals
