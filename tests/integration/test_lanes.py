"""Lanes: a review decision is projected by the interactive lane while bulk work waits."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.db.models import Q

from curation.domain.outbox import Consumer, Priority
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, OutboxJob
from curation.services import review
from curation.services.outbox import outbox_backlog
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval.models import SearchDocument
from tenants import rls
from tests.support.tenancy import Tenant, markdown_source
from tests.support.workers import celery_worker
from vera.celery import app

BULK_JOBS = 3000
EARLIER = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # older than the decision: FIFO would lose


def _source(tenant: Tenant, root: Path, *, tier: int, name: str) -> int:
    source_id = markdown_source(tenant, root, tier=tier, name=name)
    ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    return source_id


def _bulk_backlog(tenant: Tenant, claim_ids: list[int]) -> None:
    """Thousands of bulk index jobs, as a large ingest leaves them."""
    jobs = [
        OutboxJob(
            group_id=tenant.workspace.group_id,
            consumer=Consumer.INDEX,
            priority=Priority.BULK,
            kind="claim.project",
            payload={"claim_id": claim_ids[n % len(claim_ids)]},
            available_at=EARLIER,
        )
        for n in range(BULK_JOBS)
    ]
    with rls.tenant_context(tenant.principal(tenant.admin)):
        OutboxJob.objects.bulk_create(jobs, batch_size=1000)


def _purge(*queues: str) -> None:
    """Drop messages other runs left in these queues (the test broker is shared)."""
    with app.connection_for_write() as connection:
        for queue in queues:
            connection.default_channel.queue_purge(queue)


def _pending_bulk(tenant: Tenant) -> int:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return OutboxJob.objects.filter(
            consumer=Consumer.INDEX, status=OutboxJob.Status.PENDING, priority=Priority.BULK
        ).count()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_approval_is_searchable_while_thousands_of_bulk_jobs_wait(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    bulk_root, review_root = tmp_path / "bulk", tmp_path / "review"
    bulk_root.mkdir()
    review_root.mkdir()
    for n in range(20):
        (bulk_root / f"svc{n}.md").write_text(f"# Svc {n}\n\nThe svc-{n} runs on node-{n}.\n")
    (review_root / "pay.md").write_text("# Payments\n\nThe payments-api runs on k8s-prod-9.\n")
    _source(tenant_a, bulk_root, tier=1, name="bulk")
    _source(tenant_a, review_root, tier=3, name="runbook")
    principal = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(principal):
        published = list(
            Claim.objects.filter(status=ClaimStatus.PUBLISHED).values_list("pk", flat=True)
        )
        pending = Claim.objects.get(predicate="RUNS_ON", status=ClaimStatus.PENDING_REVIEW)
    _bulk_backlog(tenant_a, published)
    # A sweep left on the broker by another run would drain the backlog this test measures.
    _purge("interactive", "projection")
    logs = tmp_path
    with (
        celery_worker(database_url=app_database_url, log_path=logs / "i.log", queue="interactive"),
        celery_worker(database_url=app_database_url, log_path=logs / "p.log", queue="projection"),
    ):
        # The bulk lane is busy with the backlog while the reviewer decides.
        process_outbox.apply_async(kwargs={"consumer": "index"})
        decided = time.monotonic()
        with rls.tenant_context(principal):
            review.review_approve(actor=principal, claim_id=pending.pk, version=pending.version)
        deadline = decided + 60
        while time.monotonic() < deadline:
            with rls.tenant_context(principal):
                indexed = SearchDocument.objects.filter(
                    claim_id=pending.pk, status=ClaimStatus.PUBLISHED
                ).exists()
            if indexed:
                break
            time.sleep(0.05)
        latency = time.monotonic() - decided
        waiting = _pending_bulk(tenant_a)
    print(f"approval searchable after {latency:.2f} s with {waiting} bulk index jobs waiting")
    assert indexed, f"not searchable after {latency:.1f} s:\n{(logs / 'i.log').read_text()[-3000:]}"
    # Most of the bulk work was still queued when the decision became searchable.
    assert waiting > BULK_JOBS // 2, f"only {waiting} bulk jobs were still waiting"
    with rls.tenant_context(principal):
        urgent = OutboxJob.objects.filter(priority=Priority.INTERACTIVE)
        assert urgent.filter(consumer=Consumer.INDEX, status=OutboxJob.Status.DONE).exists()


@pytest.mark.django_db
def test_urgent_jobs_are_taken_before_older_bulk_jobs(tenant_a: Tenant) -> None:
    from curation.services.outbox import outbox_enqueue, outbox_process

    seen: list[int] = []
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        for n in range(5):
            outbox_enqueue(group_id=tenant_a.workspace.group_id, kind="k", payload={"n": n},
                           consumers=(Consumer.GRAPH,))  # fmt: skip
        outbox_enqueue(group_id=tenant_a.workspace.group_id, kind="k", payload={"n": 99},
                       priority=Priority.INTERACTIVE, consumers=(Consumer.GRAPH,))  # fmt: skip
        outbox_process(
            consumer=Consumer.GRAPH,
            handlers={"k": lambda job: seen.append(job.payload["n"])},
            limit=2,
        )
    assert seen == [99, 0]


@pytest.mark.django_db
def test_each_change_is_one_job_per_consumer_with_its_own_progress(tenant_a: Tenant) -> None:
    from curation.services.outbox import outbox_enqueue, outbox_process

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        outbox_enqueue(group_id=tenant_a.workspace.group_id, kind="k", payload={})

        def broken(_: OutboxJob) -> None:
            raise ConnectionError("graph down")

        outbox_process(consumer=Consumer.GRAPH, handlers={"k": broken}, max_attempts=1)
        outbox_process(consumer=Consumer.INDEX, handlers={"k": lambda _: None})
        backlog = outbox_backlog()
        rows = dict(OutboxJob.objects.values_list("consumer", "status"))
    assert rows == {"graph": "dead", "index": "done"}
    assert backlog["graph"]["dead"] == 1
    assert backlog["index"] == {"pending": 0, "urgent": 0, "dead": 0, "oldest": None}


@pytest.mark.django_db
def test_the_interactive_lane_takes_only_urgent_jobs(tenant_a: Tenant) -> None:
    from curation.services.outbox import outbox_enqueue, outbox_process

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        outbox_enqueue(group_id=tenant_a.workspace.group_id, kind="k", payload={})
        done = outbox_process(
            consumer=Consumer.INDEX, handlers={"k": lambda _: None},
            max_priority=Priority.INTERACTIVE,
        )  # fmt: skip
        assert done == {}
        assert OutboxJob.objects.filter(~Q(status="pending")).count() == 0


def test_routes_put_each_task_in_its_lane() -> None:
    from django.conf import settings

    routes = settings.CELERY_TASK_ROUTES
    assert routes["curation.process_urgent_outbox"]["queue"] == "interactive"
    assert routes["curation.process_outbox"]["queue"] == "projection"
    assert routes["curation.ingest_source"]["queue"] == "ingest"
    assert routes["curation.schedule_sources"]["queue"] == "maintenance"
    assert {route["queue"] for route in routes.values()} <= set(settings.VERA_WORKER__LANES)
