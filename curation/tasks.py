"""Celery tasks: thin, keyword-only, primitive arguments; each runs a use case
(`curation.usecases`), as the commands and benchmarks do."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.jobs import task
from curation.domain.outbox import CONSUMERS, Consumer, Lane, Priority
from curation.models import Reprocessing, Source
from curation.selectors import reprocessings_stale, sources_due
from curation.usecases import (
    RunRequest,
    ingest_now,
    ingest_pressure,
    outbox_drain,
    reprocess_begin,
    reprocess_now,
    reprocess_reclaim,
    run_resend_before,
    source_run_request,
    source_run_scheduled,
)
from tenants import rls
from tenants.domain.access import Principal
from tenants.selectors import principal_system

logger = logging.getLogger(__name__)
OUTBOX_BATCHES_PER_RUN = 20


@task(name="curation.ingest_source", acks_late=True)
def ingest_source(
    *, source_id: int, group_id: str, requested_at: str | None = None
) -> dict[str, object]:
    """Ingest one source from its cursor: the run asked for at `requested_at` (ISO 8601,
    by the schedule or an admin), skipped if a run of the source is going or has ended
    since (a copy of the message, a redelivery)."""
    asked = dt.datetime.fromisoformat(requested_at) if requested_at else None
    report = ingest_now(source_id=source_id, group_id=group_id, requested_at=asked)
    if report.skipped:
        logger.info("ingestion of source %s skipped: %s", source_id, report.skipped)
    return {
        "status": report.status,
        "new": report.new,
        "unchanged": report.unchanged,
        "failed": report.failed,
        "claims": dict(report.claims),
        "error": report.error,
        "skipped": report.skipped,
    }


def ingest_enqueue(*, actor: Principal, source_id: int) -> RunRequest:
    """Ask for a run of a source now (`source_run_request`: its admins) and send it to a
    worker once the transaction commits; a request still waiting is answered, not sent
    again. The API and the admin's "Run now" call this."""
    with transaction.atomic():
        request = source_run_request(actor=actor, source_id=source_id)
        if request.sent:
            source_id, group_id = request.source.pk, request.source.group_id
            asked = request.requested_at.isoformat()
            transaction.on_commit(
                lambda: ingest_source.delay(
                    source_id=source_id, group_id=group_id, requested_at=asked
                )
            )
    return request


@task(name="curation.reprocess_source", acks_late=True)
def reprocess_source(*, run_id: int, group_id: str) -> dict[str, object]:
    """Work a reprocessing run (started by the API or the admin); a redelivered task
    resumes it from its last committed batch."""
    run = reprocess_now(run_id=run_id, group_id=group_id)
    return {"status": run.status, "counts": run.counts, "error": run.error}


def reprocess_enqueue(
    *, actor: Principal, source: Source, everything: bool = False, reason: str = ""
) -> tuple[Reprocessing, bool]:
    """Start reprocessing a source (`reprocess_start`: its admins) and send the run to a
    worker once the transaction commits; or join the run already going (sent when it
    started). True when this call started the run. The API and the admin start runs here.
    """
    going = (
        Reprocessing.objects.filter(source=source, status=Reprocessing.Status.RUNNING)
        .values_list("pk", flat=True)
        .first()
    )
    run = reprocess_begin(actor=actor, source=source, everything=everything, reason=reason)
    if run.pk == going:
        return run, False
    run_id, group_id = run.pk, run.group_id
    transaction.on_commit(lambda: reprocess_source.delay(run_id=run_id, group_id=group_id))
    return run, True


@task(name="curation.resume_reprocessing")
def resume_reprocessing() -> list[int]:
    """Every five minutes: send again the reprocessing runs still "running" that nobody
    has advanced for VERA_REPROCESS__STALE_AFTER_S (a worker killed, a message lost), so
    a run the portal shows as running is being worked. Found across every group by a
    system finder; each is reclaimed in its group's context, so one sweep sends it once.
    Two workers on one run take its batches in turn (each batch locks the run)."""
    before = timezone.now() - dt.timedelta(seconds=settings.VERA_REPROCESS__STALE_AFTER_S)
    resumed = []
    for run_id, group_id in reprocessings_stale(before=before):
        with rls.tenant_context(principal_system("reprocess", group_ids=[group_id])):
            if not reprocess_reclaim(run_id=run_id, before=before):
                continue
        reprocess_source.delay(run_id=run_id, group_id=group_id)
        logger.warning("reprocessing run %s had not moved since %s: sent again", run_id, before)
        resumed.append(run_id)
    return resumed


@task(name="curation.schedule_sources")
def schedule_sources() -> int:
    """Enqueue every enabled source whose schedule is due (beat runs this every minute).

    One system-finder query over every group's sources; each ingestion then runs in a
    tenant context of its own group only. With VERA_BACKPRESSURE__INGEST=defer, while
    the projection lane is degraded nothing is sent: the sources stay due and a later
    tick sends them once the lane has drained.
    """
    now = timezone.now()
    due = sources_due(now=now, resend_before=run_resend_before(now))
    deferring = settings.VERA_BACKPRESSURE__INGEST == "defer"
    if due and deferring and (reason := ingest_pressure(now=now)):
        logger.warning(
            "backpressure: %d due source(s) deferred to a later tick: %s", len(due), reason
        )
        return 0
    sent = 0
    for source_id, group_id in due:
        # Marked as asked for first, in the source's own group: a source whose run is
        # waiting or going is not sent again by the next tick.
        with rls.tenant_context(principal_system("schedule", group_ids=[group_id])):
            if not source_run_scheduled(source_id=source_id, now=now):
                continue
        ingest_source.delay(source_id=source_id, group_id=group_id, requested_at=now.isoformat())
        sent += 1
    return sent


@task(name="curation.process_outbox")
def process_outbox(*, consumer: str | None = None) -> dict[str, int]:
    """Bulk lane: run the due outbox jobs of one consumer (or each in turn), urgent first."""
    consumers = [Consumer(consumer)] if consumer else list(CONSUMERS)
    totals: dict[str, int] = {}
    for each in consumers:
        for outcome, count in outbox_drain(
            each, max_priority=Priority.MAINTENANCE, batches=OUTBOX_BATCHES_PER_RUN, limit=200
        ).items():
            totals[outcome] = totals.get(outcome, 0) + count
    return totals


@task(name="curation.process_urgent_outbox")
def process_urgent_outbox() -> dict[str, int]:
    """Interactive lane: project a reviewer's decision now, whatever bulk work is queued."""
    totals: dict[str, int] = {}
    # The index first: a decision is visible to search as soon as possible.
    for consumer in (Consumer.INDEX, Consumer.GRAPH):
        for outcome, count in outbox_drain(
            consumer, max_priority=Priority.INTERACTIVE, batches=5, limit=50
        ).items():
            totals[outcome] = totals.get(outcome, 0) + count
    return totals


def wake_interactive_lane(_: Priority) -> None:
    """Outbox notifier (installed at start-up): urgent work was committed, run it now."""
    process_urgent_outbox.apply_async(queue=Lane.INTERACTIVE.value)
