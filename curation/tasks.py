"""Celery tasks: thin, keyword-only, primitive arguments."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from opentelemetry import trace

from common.jobs import task
from curation import bootstrap
from curation.domain.outbox import CONSUMERS, Consumer, Lane, Priority
from curation.domain.sources import AGENT_KIND
from curation.models import Reprocessing, Source
from curation.selectors import outbox_due_groups, sources_due
from curation.services.backpressure import ingest_pressure
from curation.services.ingest import IngestReport, source_ingest, source_run_finished
from curation.services.outbox import BATCH_WRITE, outbox_process
from curation.services.reprocess import BATCH, BatchCallback, reprocess_run, reprocess_start
from tenants import rls
from tenants.domain.access import Principal
from tenants.selectors import principal_system

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer(__name__)
OUTBOX_BATCHES_PER_RUN = 20
# A bulk run hands the worker back after this long, so the other consumer's run (queued
# behind it on the projection lane) gets its turn; beat sends the next one.
OUTBOX_RUN_BUDGET_S = 60.0


def ingest_now(
    *,
    source_id: int,
    group_id: str,
    on_progress: Callable[[IngestReport], None] | None = None,
) -> IngestReport:
    """Run one source's ingestion in this process (the task body, also used by `ingest`)."""
    with _tracer.start_as_current_span(
        "vera.ingest.source",
        attributes={"vera.ingest.source_id": source_id, "vera.group_id": group_id},
    ):
        return _ingest(source_id=source_id, group_id=group_id, on_progress=on_progress)


def _ingest(
    *, source_id: int, group_id: str, on_progress: Callable[[IngestReport], None] | None
) -> IngestReport:
    principal = principal_system("ingest", group_ids=[group_id])
    with rls.tenant_context(principal):
        source = Source.objects.get(pk=source_id)
    if source.kind == AGENT_KIND:  # nothing to fetch: agents' proposals arrive by the API
        return IngestReport(source_id=source_id, error="the agents' source has no connector to run")
    try:
        adapters = bootstrap.providers().ingest_adapters_for(source)
    except ValueError as error:  # unknown kind, missing secret, bad config
        report = IngestReport(source_id=source_id, error=str(error))
        with rls.tenant_context(principal):
            source_run_finished(source_id=source_id, report=report)
        return report
    return source_ingest(
        source_id=source_id, actor=principal, adapters=adapters, on_progress=_paced(on_progress)
    )


def _paced(
    on_progress: Callable[[IngestReport], None] | None,
) -> Callable[[IngestReport], None] | None:
    """With VERA_BACKPRESSURE__INGEST=slow, a page callback that also pauses the run while
    the projection lane is degraded (one lane query a page), so the outbox can catch up."""
    if settings.VERA_BACKPRESSURE__INGEST != "slow":
        return on_progress

    def paced(report: IngestReport) -> None:
        if on_progress is not None:
            on_progress(report)
        if reason := ingest_pressure(now=timezone.now()):
            pause = settings.VERA_BACKPRESSURE__INGEST_PAUSE_S
            logger.info("ingestion of source %s pauses %d s: %s", report.source_id, pause, reason)
            time.sleep(pause)

    return paced


@task(name="curation.ingest_source", acks_late=True)
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


def reprocess_now(
    *, run_id: int, group_id: str, on_batch: BatchCallback | None = None, batch: int = BATCH
) -> Reprocessing:
    """Work one reprocessing run to its end in this process (the task body, also used by
    `reprocess`), reading through the source's extractors of today."""
    principal = principal_system("reprocess", group_ids=[group_id])
    with rls.tenant_context(principal):
        run = Reprocessing.objects.select_related("source").get(pk=run_id)
        adapters = bootstrap.providers().read_adapters_for(run.source)
    # Outside the context: each batch commits in a tenant context of its own.
    return reprocess_run(
        run_id=run_id, actor=principal, adapters=adapters, batch=batch, on_batch=on_batch
    )


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
    run = reprocess_start(
        actor=actor, source_id=source.pk, adapters=bootstrap.providers().read_adapters_for(source),
        everything=everything, reason=reason,
    )  # fmt: skip
    if run.pk == going:
        return run, False
    run_id, group_id = run.pk, run.group_id
    transaction.on_commit(lambda: reprocess_source.delay(run_id=run_id, group_id=group_id))
    return run, True


@task(name="curation.schedule_sources")
def schedule_sources() -> int:
    """Enqueue every enabled source whose schedule is due (beat runs this every minute).

    One system-finder query over every group's sources; each ingestion then runs in a
    tenant context of its own group only. With VERA_BACKPRESSURE__INGEST=defer, while
    the projection lane is degraded nothing is sent: the sources stay due and a later
    tick sends them once the lane has drained.
    """
    now = timezone.now()
    due = sources_due(now=now)
    deferring = settings.VERA_BACKPRESSURE__INGEST == "defer"
    if due and deferring and (reason := ingest_pressure(now=now)):
        logger.warning(
            "backpressure: %d due source(s) deferred to a later tick: %s", len(due), reason
        )
        return 0
    for source_id, group_id in due:
        ingest_source.delay(source_id=source_id, group_id=group_id)
    return len(due)


def _drain(
    consumer: Consumer, *, max_priority: Priority, batches: int, limit: int
) -> dict[str, int]:
    providers = bootstrap.providers()
    down = providers.outbox_available(consumer)
    if down:
        # Its jobs wait untouched (no attempt spent) and catch up when it returns.
        logger.warning("outbox consumer %s waits: its backend is down (%s)", consumer, down)
        return {"waiting": 1}
    handlers, prepare = providers.outbox_handlers(consumer), providers.outbox_prepare(consumer)
    batch = providers.outbox_batch(consumer)
    # The graph's batch holds no lock in Postgres (it reads claims, writes the graph,
    # marks its jobs done) and its statements cost mostly per call: it takes more at once.
    write_group = settings.VERA_OUTBOX__GRAPH_BATCH if consumer is Consumer.GRAPH else BATCH_WRITE
    totals: dict[str, int] = {}
    deadline = time.monotonic() + OUTBOX_RUN_BUDGET_S
    for _ in range(batches):
        # Each batch runs in a tenant context of only the groups that own its jobs (at
        # most `limit`), found by one query across every group: an idle tick costs that
        # query alone, whatever the number of workspaces, and a handler never sees a
        # group it has no job of. The same jobs as a claim over all groups, in the same
        # order (see `outbox_due_groups`); a batch that another worker's lease got to
        # first comes up short and the next batch takes what follows.
        groups = outbox_due_groups(
            consumer=consumer, max_priority=max_priority, now=timezone.now(), limit=limit
        )
        if not groups:
            break
        counts = outbox_process(
            consumer=consumer,
            handlers=handlers,
            prepare=prepare,
            batch=batch,
            max_priority=max_priority,
            limit=limit,
            principal=principal_system("outbox", group_ids=groups),
            lease=dt.timedelta(seconds=settings.VERA_OUTBOX__LEASE_S),
            group=write_group,
        )
        for outcome, count in counts.items():
            totals[outcome] = totals.get(outcome, 0) + count
        if not counts or time.monotonic() > deadline:
            break
    return totals


@task(name="curation.process_outbox")
def process_outbox(*, consumer: str | None = None) -> dict[str, int]:
    """Bulk lane: run the due outbox jobs of one consumer (or each in turn), urgent first."""
    consumers = [Consumer(consumer)] if consumer else list(CONSUMERS)
    totals: dict[str, int] = {}
    for each in consumers:
        for outcome, count in _drain(
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
        for outcome, count in _drain(
            consumer, max_priority=Priority.INTERACTIVE, batches=5, limit=50
        ).items():
            totals[outcome] = totals.get(outcome, 0) + count
    return totals


def wake_interactive_lane(_: Priority) -> None:
    """Outbox notifier (installed at start-up): urgent work was committed, run it now."""
    process_urgent_outbox.apply_async(queue=Lane.INTERACTIVE.value)
