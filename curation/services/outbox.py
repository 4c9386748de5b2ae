"""The outbox worker: claim due jobs with SKIP LOCKED, run their handler, retry or bury."""

from __future__ import annotations

import datetime as dt
import logging
import random
from collections import Counter
from collections.abc import Callable, Mapping

from django.db import transaction
from django.utils import timezone

from curation.models import OutboxJob

logger = logging.getLogger(__name__)
Handler = Callable[[OutboxJob], None]
MAX_ATTEMPTS = 8
BACKOFF_BASE_S = 5.0
BACKOFF_CAP_S = 3600.0


def retry_delay(attempts: int, *, rng: random.Random | None = None) -> dt.timedelta:
    """Full-jitter exponential backoff: uniform(0, min(cap, base * 2**attempts))."""
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempts)
    return dt.timedelta(seconds=(rng or random).uniform(0, ceiling))


def _run(job: OutboxJob, handler: Handler | None, max_attempts: int) -> str:
    if handler is None:
        error = f"no handler for job kind {job.kind!r}"
    else:
        try:
            with transaction.atomic():
                handler(job)
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
            "outbox job %s (%s) dead after %s attempts: %s", job.pk, job.kind, job.attempts, error
        )
    else:
        job.available_at = timezone.now() + retry_delay(job.attempts)
    job.save(update_fields=["attempts", "last_error", "status", "available_at"])
    return "dead" if job.status == OutboxJob.Status.DEAD else "retry"


@transaction.atomic
def outbox_process(
    *,
    handlers: Mapping[str, Handler],
    limit: int = 200,
    max_attempts: int = MAX_ATTEMPTS,
    prepare: Callable[[list[OutboxJob]], None] | None = None,
) -> Counter[str]:
    """Run up to `limit` due jobs visible to the current tenant context; counts by outcome.

    Jobs are locked FOR UPDATE SKIP LOCKED, so several workers share the queue without
    running a job twice. `prepare` sees the whole batch first (e.g. to embed every text
    in one model call); a failure there only costs the batching, never a job.
    """
    jobs = list(
        OutboxJob.objects.select_for_update(skip_locked=True)
        .filter(status=OutboxJob.Status.PENDING, available_at__lte=timezone.now())
        .order_by("available_at", "pk")[:limit]
    )
    if prepare is not None and jobs:
        try:
            with transaction.atomic():
                prepare(jobs)
        except Exception:  # the jobs still run, one by one, and fail on their own
            logger.warning("outbox batch preparation failed", exc_info=True)
    return Counter(_run(job, handlers.get(job.kind), max_attempts) for job in jobs)


@transaction.atomic
def outbox_retry(*, job_ids: list[int]) -> int:
    """Give dead jobs another round (admin action)."""
    return OutboxJob.objects.filter(pk__in=job_ids, status=OutboxJob.Status.DEAD).update(
        status=OutboxJob.Status.PENDING, attempts=0, available_at=timezone.now(), last_error=""
    )
