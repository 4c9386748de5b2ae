"""The transactional outbox: one job per consumer, claimed with SKIP LOCKED, retried or buried.

Each consumer (the graph, the search index) has its own jobs, so its own progress and
dead letters: one being down never stops the other. Jobs carry a priority; a consumer
takes its due jobs most urgent first, so a reviewer's decision overtakes a bulk ingest.

When tracing is on, a job keeps the W3C trace context of the transaction that wrote it,
and the worker's span of the job (or of its batch) links to it: a request's trace leads
to the work it caused, however late that work runs.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TypedDict

from django.db import transaction
from django.db.models import Count, Min, Q
from django.utils import timezone
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from curation.domain.outbox import CONSUMERS, UNBATCHED_KINDS, Consumer, Priority
from curation.models import OutboxJob, OutboxPause
from kernel.resilience import full_jitter_delay
from tenants import rls
from tenants.domain.access import Principal

logger = logging.getLogger(__name__)
Handler = Callable[[OutboxJob], None]
# Does for a list of jobs exactly what their handlers would do one by one, in one go
# (one transaction): e.g. one bulk index write for many claims.
BatchHandler = Callable[[list[OutboxJob]], None]


class JobFailed(Exception):
    """A handler's failure with something to record once the job's own work is rolled
    back: `record(final)` runs in the job's transaction after its savepoint is undone
    (so what it writes stays), told whether that was the job's last attempt."""

    def __init__(self, cause: Exception, record: Callable[[bool], None]) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.record = record


# Called after a transaction that enqueued urgent work commits: the composition root
# wakes the interactive lane's worker, which takes only urgent jobs.
Notifier = Callable[[Priority], None]
MAX_ATTEMPTS = 8
BACKOFF_BASE_S = 5.0
BACKOFF_CAP_S = 3600.0
# How long a leased batch is hidden from other workers: longer than any batch takes.
LEASE = dt.timedelta(minutes=10)
# Jobs a batch handler takes in one transaction (the default of `outbox_process`'s
# `group`): few enough that the locks it holds (the index's per-group statistics) are
# released in well under a second.
BATCH_WRITE = 50

_notifier: Notifier | None = None
_tracer = trace.get_tracer(__name__)
_propagator = TraceContextTextMapPropagator()


class LaneBacklog(TypedDict):
    """One consumer's queue: pending jobs (urgent ones among them), dead letters."""

    pending: int
    urgent: int
    dead: int
    oldest: dt.datetime | None  # creation time of the oldest pending job


def outbox_set_notifier(notifier: Notifier | None) -> None:
    """Install (or remove) what is told, after commit, that urgent work was enqueued."""
    global _notifier
    _notifier = notifier


def retry_delay(attempts: int, *, rng: random.Random | None = None) -> dt.timedelta:
    """How long a failed job waits: the shared full-jitter backoff, 5 s doubling to an hour."""
    seconds = full_jitter_delay(attempts, base_s=BACKOFF_BASE_S, cap_s=BACKOFF_CAP_S, rng=rng)
    return dt.timedelta(seconds=seconds)


def outbox_enqueue(
    *,
    group_id: str,
    kind: str,
    payload: dict[str, object],
    priority: Priority = Priority.BULK,
    consumers: tuple[Consumer, ...] = CONSUMERS,
) -> list[OutboxJob]:
    """Queue post-commit work in the caller's transaction, one job per consumer."""
    now = timezone.now()
    caused_by = _trace_context()
    jobs = OutboxJob.objects.bulk_create(
        [
            OutboxJob(
                group_id=group_id,
                consumer=consumer,
                priority=priority,
                kind=kind,
                payload=payload,
                available_at=now,
                trace_context=caused_by,
            )
            for consumer in consumers
        ]
    )
    _notify(priority)
    return jobs


def outbox_enqueue_many(
    *,
    group_id: str,
    kind: str,
    payloads: list[dict[str, object]],
    priority: Priority = Priority.BULK,
    consumers: tuple[Consumer, ...] = CONSUMERS,
) -> int:
    """`outbox_enqueue` for many payloads in one insert (a retraction of thousands)."""
    now, caused_by = timezone.now(), _trace_context()
    jobs = OutboxJob.objects.bulk_create(
        [
            OutboxJob(group_id=group_id, consumer=consumer, priority=priority, kind=kind,
                      payload=payload, available_at=now, trace_context=caused_by)
            for payload in payloads
            for consumer in consumers
        ],
        batch_size=2000,
    )  # fmt: skip
    if jobs:
        _notify(priority)
    return len(jobs)


def _trace_context() -> dict[str, str] | None:
    """The current span's W3C trace context; None when no span records (tracing off)."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier or None


def _links(jobs: Sequence[OutboxJob]) -> list[trace.Link]:
    """Links to the spans that wrote these jobs, each once."""
    causes: dict[tuple[int, int], trace.SpanContext] = {}
    for job in jobs:
        if job.trace_context:
            cause = trace.get_current_span(_propagator.extract(job.trace_context))
            context = cause.get_span_context()
            if context.is_valid:
                causes[context.trace_id, context.span_id] = context
    return [trace.Link(context) for context in causes.values()]


def _notify(priority: Priority) -> None:
    if _notifier is not None and priority <= Priority.INTERACTIVE:
        notify = _notifier
        # After commit, or the woken worker would not see the jobs yet; a repeated
        # wake-up only finds nothing to do.
        transaction.on_commit(lambda: notify(priority), robust=True)


def _run(job: OutboxJob, handler: Handler | None, max_attempts: int) -> str:
    with _tracer.start_as_current_span(
        "vera.outbox.job",
        links=_links([job]),
        attributes={
            "vera.outbox.consumer": job.consumer,
            "vera.outbox.kind": job.kind,
            "vera.outbox.job_id": job.pk,
            "vera.outbox.attempts": job.attempts,
            "vera.group_id": job.group_id,
        },
    ) as span:
        outcome = _attempt(job, handler, max_attempts)
        span.set_attribute("vera.outbox.outcome", outcome)
        return outcome


def _attempt(job: OutboxJob, handler: Handler | None, max_attempts: int) -> str:
    failed: JobFailed | None = None
    if handler is None:
        error = f"no handler for job kind {job.kind!r} of consumer {job.consumer!r}"
    else:
        try:
            with transaction.atomic():
                handler(job)
        except JobFailed as exc:
            error, failed = str(exc), exc
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        else:
            job.status = OutboxJob.Status.DONE
            job.done_at = timezone.now()
            job.save(update_fields=["status", "done_at"])
            return "done"
    job.attempts += 1
    job.last_error = error[:2000]
    if job.attempts >= max_attempts:
        job.status = OutboxJob.Status.DEAD
        logger.error(
            "outbox job %s (%s for %s) dead after %s attempts: %s",
            job.pk, job.kind, job.consumer, job.attempts, error,
        )  # fmt: skip
    else:
        job.available_at = timezone.now() + retry_delay(job.attempts)
    if failed is not None:
        _record_failure(job, failed)
    job.save(update_fields=["attempts", "last_error", "status", "available_at"])
    return "dead" if job.status == OutboxJob.Status.DEAD else "retry"


def _record_failure(job: OutboxJob, failed: JobFailed) -> None:
    """The handler's own record of its failure; its failing is logged, never lets the
    job go unrecorded."""
    try:
        with transaction.atomic():
            failed.record(job.status == OutboxJob.Status.DEAD)
    except Exception:
        logger.exception("recording the failure of outbox job %s (%s) failed", job.pk, job.kind)


def _context(principal: Principal | None) -> AbstractContextManager[object]:
    """A transaction of its own under `principal`, or a savepoint in the caller's context."""
    return rls.tenant_context(principal) if principal is not None else transaction.atomic()


def _claim(
    consumer: Consumer,
    limit: int,
    max_priority: Priority,
    principal: Principal | None,
    lease: dt.timedelta = LEASE,
) -> list[OutboxJob]:
    """Lease the most urgent due jobs: locked FOR UPDATE SKIP LOCKED, pushed `lease` ahead."""
    with _context(principal):
        paused = OutboxPause.objects.filter(consumer=consumer).values("group_id")
        jobs = list(
            OutboxJob.objects.select_for_update(skip_locked=True)
            .filter(
                consumer=consumer,
                status=OutboxJob.Status.PENDING,
                available_at__lte=timezone.now(),
                priority__lte=max_priority,
            )
            .exclude(group_id__in=paused)
            .order_by("priority", "available_at", "pk")[:limit]
        )
        leased_until = timezone.now() + lease
        OutboxJob.objects.filter(pk__in=[job.pk for job in jobs]).update(available_at=leased_until)
    return jobs


def _run_batch(jobs: list[OutboxJob], batch: BatchHandler, principal: Principal | None) -> bool:
    """Run `jobs` through `batch` and mark them done, all in one transaction; False if it failed.

    A failure rolls everything back (no job touched): the caller then runs the jobs one
    by one, so the job at fault fails alone, with its own reason.
    """
    now = timezone.now()
    try:
        with (
            _tracer.start_as_current_span(
                "vera.outbox.batch",
                links=_links(jobs),
                attributes={
                    "vera.outbox.consumer": jobs[0].consumer,
                    "vera.outbox.kinds": sorted({job.kind for job in jobs}),
                    "vera.outbox.jobs": len(jobs),
                    "vera.group_ids": sorted({job.group_id for job in jobs}),
                },
            ),
            _context(principal),
        ):
            batch(jobs)
            OutboxJob.objects.filter(pk__in=[job.pk for job in jobs]).update(
                status=OutboxJob.Status.DONE, done_at=now
            )
    except Exception:
        logger.warning("outbox batch of %s jobs failed; running them one by one", len(jobs),
                       exc_info=True)  # fmt: skip
        return False
    for job in jobs:
        job.status, job.done_at = OutboxJob.Status.DONE, now
    return True


def outbox_process(
    *,
    consumer: Consumer,
    handlers: Mapping[str, Handler],
    limit: int = 200,
    max_priority: Priority = Priority.MAINTENANCE,
    max_attempts: int = MAX_ATTEMPTS,
    prepare: Callable[[list[OutboxJob]], None] | None = None,
    batch: BatchHandler | None = None,
    principal: Principal | None = None,
    lease: dt.timedelta = LEASE,
    group: int = BATCH_WRITE,
) -> Counter[str]:
    """Run up to `limit` of the consumer's due jobs, most urgent first (priority, then age).

    The batch is leased in a short transaction (FOR UPDATE SKIP LOCKED, then its
    `available_at` moved LEASE ahead), so several workers (a bulk lane and an
    interactive one) share the queue without running a job twice, and a worker that
    dies only delays its batch by the lease. Each job then commits on its own, or with
    `batch` each group of at most `group` jobs (that have a handler) commits as
    one: either way a bulk batch never holds the index's locks for long, so an urgent
    job is not kept waiting behind it. A group whose batch handler fails is rolled
    back and run again job by job, so only the job at fault is retried or buried, with
    its own reason. With `principal`, each step is a transaction under that tenant
    context; without, each is a savepoint in the caller's (tests, shells).
    `max_priority` lets the interactive lane take only urgent jobs. `prepare` sees the
    whole batch first (e.g. to embed every text in one model call, outside any write);
    a failure there only costs the batching, never a job. `lease` is how long a worker
    that dies mid-batch keeps its jobs from the others.
    """
    jobs = _claim(consumer, limit, max_priority, principal, lease)
    if prepare is not None and jobs:
        try:
            with _context(principal):
                prepare(jobs)
        except Exception:  # the jobs still run, one by one, and fail on their own
            logger.warning("outbox batch preparation failed", exc_info=True)
    outcomes: Counter[str] = Counter()
    if batch is not None:
        handled = [job for job in jobs if job.kind in handlers and job.kind not in UNBATCHED_KINDS]
        for each in itertools.batched(handled, group):
            if _run_batch(list(each), batch, principal):
                outcomes["done"] += len(each)
    for job in jobs:
        if job.status == OutboxJob.Status.PENDING:  # not done by a batch
            with _context(principal):
                outcomes[_run(job, handlers.get(job.kind), max_attempts)] += 1
    return outcomes


@transaction.atomic
def outbox_retry(*, job_ids: list[int]) -> int:
    """Give dead jobs another round (admin action)."""
    return OutboxJob.objects.filter(pk__in=job_ids, status=OutboxJob.Status.DEAD).update(
        status=OutboxJob.Status.PENDING, attempts=0, available_at=timezone.now(), last_error=""
    )


def outbox_backlog() -> dict[str, LaneBacklog]:
    """Per consumer: pending jobs (interactive and bulk), the oldest one's time, dead letters."""
    rows = (
        OutboxJob.objects.exclude(status=OutboxJob.Status.DONE)
        .values("consumer")
        .annotate(
            pending=Count("pk", filter=Q(status=OutboxJob.Status.PENDING)),
            urgent=Count(
                "pk",
                filter=Q(status=OutboxJob.Status.PENDING, priority__lte=Priority.INTERACTIVE),
            ),
            dead=Count("pk", filter=Q(status=OutboxJob.Status.DEAD)),
            oldest=Min("created_at", filter=Q(status=OutboxJob.Status.PENDING)),
        )
    )
    backlog: dict[str, LaneBacklog] = {
        c.value: {"pending": 0, "urgent": 0, "dead": 0, "oldest": None} for c in CONSUMERS
    }
    for row in rows:
        backlog[row["consumer"]] = {
            "pending": row["pending"],
            "urgent": row["urgent"],
            "dead": row["dead"],
            "oldest": row["oldest"],
        }
    return backlog


@contextmanager
def outbox_paused(
    *,
    consumer: Consumer,
    group_ids: Sequence[str],
    reason: str,
    principal: Principal | None = None,
) -> Iterator[None]:
    """Hold off the consumer's jobs of these groups while the block runs, then let it
    catch up. With `principal` the pause is committed at once (so every worker sees it)
    and lifted in a transaction of its own; without, both are savepoints in the
    caller's transaction (tests, shells).

    A job leased just before the pause may still finish during the block; the caller
    replays what such jobs did (`done_at` after the block started), see
    `graph_rebuild_live`.
    """
    with _context(principal):
        for group_id in group_ids:
            OutboxPause.objects.get_or_create(
                consumer=consumer, group_id=group_id, defaults={"reason": reason[:200]}
            )
    try:
        yield
    finally:
        with _context(principal):
            OutboxPause.objects.filter(consumer=consumer, group_id__in=list(group_ids)).delete()
