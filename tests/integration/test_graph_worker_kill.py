"""A projection worker killed (SIGKILL) in the middle of its batches loses nothing.

A real Celery worker on the projection lane drains the graph's outbox jobs; it is
killed once some, not all, jobs are done; a new worker takes over once the dead one's
lease (shortened here to 3 s) has run out. Then every job is done exactly once in the
record, none is dead, and the graph equals a rebuild of the group from Postgres: the
writes of the interrupted batch, replayed, did no harm.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import time
from pathlib import Path

import pytest

from curation import bootstrap
from curation.domain.outbox import Consumer
from curation.models import OutboxJob
from curation.services.projection import graph_rebuild
from tenants import rls
from tenants.selectors import principal_system
from tests.support.ingest import drain_outbox, ingest_folder
from tests.support.tenancy import Tenant
from tests.support.workers import celery_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DOCS = 150
# Small write groups, so that many commits happen while the test watches for one.
WORKER_ENV = {
    "VERA_OUTBOX__LEASE_S": "3",
    "VERA_OUTBOX__GRAPH_BATCH": "20",
    "VERA_WORKER__WARM_EMBEDDER": "false",
}


def _counts(group_id: str) -> dict[str, int]:
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        jobs = OutboxJob.objects.filter(consumer=Consumer.GRAPH)
        return {
            status: jobs.filter(status=status).count()
            for status in (OutboxJob.Status.PENDING, OutboxJob.Status.DONE, OutboxJob.Status.DEAD)
        }


def _services() -> dict[str, str]:
    """DOCS services, each on a host, owned by a team and depending on the next."""
    return {
        f"svc{n}.md": f"# Service {n}\n\nThe svc-{n} runs on k8s-{n % 7}. The svc-{n} is owned "
        f"by team-{n % 5}. The svc-{n} depends on svc-{(n + 1) % DOCS}.\n"
        for n in range(DOCS)
    }


def test_a_worker_killed_mid_projection_loses_nothing_and_repeats_harmlessly(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    from curation.tasks import process_outbox as task

    group_id = tenant_a.workspace.group_id
    graph = bootstrap.providers().graph()
    graph.clear_group(group_id)
    ingest_folder(tenant_a, tmp_path, _services(), at=T0)
    drain_outbox(Consumer.INDEX)  # the graph's jobs are left to the workers
    total = _counts(group_id)[OutboxJob.Status.PENDING]
    assert total >= 3 * DOCS

    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "first.log", queue="projection",
        extra_env=WORKER_ENV,
    ) as first:  # fmt: skip
        task.apply_async(kwargs={"consumer": "graph"}, queue="projection")
        deadline = time.monotonic() + 120
        while not 0 < _counts(group_id)[OutboxJob.Status.DONE] < total:
            assert time.monotonic() < deadline, "the worker never got going"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
    interrupted = _counts(group_id)
    assert 0 < interrupted[OutboxJob.Status.DONE] < total  # killed part-way

    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "second.log", queue="projection",
        extra_env=WORKER_ENV,
    ):  # fmt: skip
        deadline = time.monotonic() + 120
        while _counts(group_id)[OutboxJob.Status.DONE] < total:
            assert time.monotonic() < deadline, _counts(group_id)
            task.apply_async(kwargs={"consumer": "graph"}, queue="projection").get(timeout=60)
            time.sleep(0.5)

    assert _counts(group_id) == {"pending": 0, "done": total, "dead": 0}
    projected = graph.dump(group_id)
    assert len(projected.edges) == total
    with rls.tenant_context(principal_system("test", group_ids=[group_id])):
        graph_rebuild(graph=graph, group_ids=[group_id])
    assert graph.dump(group_id) == projected
