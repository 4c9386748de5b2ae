"""The learning loop's schedule: real beat on the database schedule, a real maintenance worker.

Beat and the worker connect as the app role to the test database, as in production. They
get a Redis database of their own as broker: beat also sends the static entries of
CELERY_BEAT_SCHEDULE (outbox sweeps every 10 s to the projection and interactive lanes),
which must never reach the lane workers of another run sharing the test Redis.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.test import Client
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval.models import (
    CalibrationRun,
    EvaluationResult,
    EvaluationRun,
    LearningRun,
    WeightSet,
)
from retrieval.services.evaluation import golden_import_jsonl
from retrieval.tasks import calibrate_workspaces, evaluate_workspaces
from tenants import rls
from tenants.selectors import principal_system
from tests.support.tenancy import Tenant, markdown_source
from tests.support.workers import ROOT, celery_worker, terminate
from vera.celery import app

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

VOTES_PER_CLASS = 3
# The worker's guard: three votes of each kind suffice (the default 30 would need a
# corpus); candidates are kept, not activated, so an activation's evaluation run with
# trigger "schedule" cannot be mistaken for the scheduled one.
LEARNING_ENV = {
    "VERA_LEARNING__MIN_SAMPLES": str(VOTES_PER_CLASS),
    "VERA_LEARNING__AUTO_ACTIVATE": "false",
}
GOLDEN = [
    {"key": "billing", "query": "where does billing-api run", "expected_texts": ["K8S-PROD-1"]},
    {"key": "ledger", "query": "ledger-db double-entry books", "expected_episodes": ["ledger.md"]},
]
BROKER_LOCK = "vera:test-learning-schedule:broker-lock"
DEADLINE_S = 60


# --- a broker of this test's own ---------------------------------------------------------------


def _reset_broker_pools() -> None:
    """Drop the connection pools Celery caches for the old broker URL (as after a fork)."""
    # Celery has no public way to rebind a live app; this is what its own _after_fork does.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def own_broker() -> Iterator[str]:
    """A free Redis database (8-15, claimed with a lock key) as this test's broker URL;
    this process sends and pings through it too, and it is emptied before and after."""
    shared = app.conf.broker_url
    for number in range(8, 16):
        url = re.sub(r"(/\d+)?$", f"/{number}", shared, count=1)
        client = redis.Redis.from_url(url)
        if client.set(BROKER_LOCK, os.getpid(), nx=True, ex=900):
            break
        client.close()
    else:
        pytest.fail("no free Redis database among 8-15 for this test's broker")
    _reset_broker_pools()
    app.conf.broker_url = url
    try:
        _purge()
        yield url
        _purge()
    finally:
        _reset_broker_pools()
        app.conf.broker_url = shared
        client.delete(BROKER_LOCK)
        client.close()


def _purge() -> None:
    """Drop messages left in the lanes (a stale tick must not run in the next test)."""
    with app.connection_for_write() as connection:
        for queue in settings.VERA_WORKER__LANES:
            connection.default_channel.queue_purge(queue)


# --- a workspace with something to learn from ------------------------------------------------


def _vote(client: Client, *, hit_id: int, helpful: bool) -> None:
    response = client.post(
        "/api/v1/feedback", {"hit_id": hit_id, "helpful": helpful}, content_type="application/json"
    )
    assert response.status_code == 201, response.content


@pytest.fixture
def learning_workspace(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """Ingested docs, three searches each with its top hit voted up and its last one down,
    and two golden queries."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "billing.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    (docs / "ledger.md").write_text("# Ledger\n\nThe ledger-db stores the double-entry books.\n")
    (docs / "payments.md").write_text("# Payments\n\nThe payments-api runs on k8s-prod-9.\n")
    source_id = markdown_source(tenant_a, docs, tier=1)
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    process_outbox()
    client = Client()
    client.force_login(tenant_a.admin)
    for query in ("billing-api runs on", "ledger-db books", "payments-api runs on"):
        response = client.get("/api/v1/search", {"q": query, "k": 5})
        assert response.status_code == 200, response.content
        hits = response.json()["hits"]
        assert len(hits) >= 2, hits
        _vote(client, hit_id=hits[0]["id"], helpful=True)
        _vote(client, hit_id=hits[-1]["id"], helpful=False)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        report = golden_import_jsonl(
            group_id=tenant_a.workspace.group_id, lines=[json.dumps(row) for row in GOLDEN]
        )
    assert report.created == len(GOLDEN)
    return tenant_a


def _reading(tenant: Tenant) -> contextlib.AbstractContextManager[Any]:
    """Read under RLS as the learning jobs do: a system principal of this workspace."""
    group_id = tenant.workspace.group_id
    return rls.tenant_context(principal_system("test", group_ids=[group_id]))


# --- beat ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _beat(*, database_url: str, broker_url: str, folder: Path) -> Iterator[Path]:
    """`celery beat` on the database schedule (settings), waking at least every second;
    yields its log."""
    env = {**os.environ, "DATABASE_URL": database_url, "CELERY_BROKER_URL": broker_url}
    env.pop("DATABASE_OWNER_URL", None)
    log_path = folder / "beat.log"
    args = [sys.executable, "-m", "celery", "-A", "vera", "beat", "-l", "info",
            "--max-interval", "1", "-s", str(folder / "beat-schedule")]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield log_path
        finally:
            terminate(process)


def _every_two_seconds(*tasks: str) -> None:
    """A PeriodicTask row per task on a 2 s interval, in the maintenance lane."""
    every, _ = IntervalSchedule.objects.get_or_create(every=2, period=IntervalSchedule.SECONDS)
    for task in tasks:
        PeriodicTask.objects.create(
            name=f"test-{task}", task=task, interval=every, queue="maintenance"
        )


def _await[T](probe: Callable[[], T | None], *, what: str, logs: list[Path]) -> T:
    """Poll `probe` until it returns something, or fail after DEADLINE_S with the logs."""
    deadline = time.monotonic() + DEADLINE_S
    while (found := probe()) is None:
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs)
            pytest.fail(f"{what} within {DEADLINE_S} s\n{tails}")
        time.sleep(0.2)
    return found


def _scheduled(model: type[LearningRun], tenant: Tenant) -> Callable[[], Any]:
    def probe() -> Any:
        with _reading(tenant):
            return (
                model.objects.filter(  # type: ignore[attr-defined]
                    group_id=tenant.workspace.group_id,
                    trigger=LearningRun.Trigger.SCHEDULE,
                    run_key__startswith="task:",
                    finished_at__isnull=False,
                )
                .order_by("pk")
                .first()
            )

    return probe


def test_beat_runs_both_learning_jobs_when_their_database_rows_come_due(
    learning_workspace: Tenant, app_database_url: str, own_broker: str, tmp_path: Path
) -> None:
    tenant = learning_workspace
    _every_two_seconds("retrieval.calibrate_workspaces", "retrieval.evaluate_workspaces")
    worker_log = tmp_path / "worker.log"
    with celery_worker(
        database_url=app_database_url, log_path=worker_log, queue="maintenance",
        extra_env={**LEARNING_ENV, "CELERY_BROKER_URL": own_broker},
    ):  # fmt: skip
        with _beat(database_url=app_database_url, broker_url=own_broker, folder=tmp_path) as log:
            logs = [log, worker_log]
            calibration = _await(
                _scheduled(CalibrationRun, tenant), what="no scheduled calibration", logs=logs
            )
            evaluation = _await(
                _scheduled(EvaluationRun, tenant), what="no scheduled evaluation", logs=logs
            )
        beat_log = log.read_text()
    assert "DatabaseScheduler" in beat_log
    assert "Sending due task test-retrieval.calibrate_workspaces" in beat_log
    assert "Sending due task test-retrieval.evaluate_workspaces" in beat_log
    # The worker read the votes (its guard came from LEARNING_ENV) and stored a candidate.
    assert (calibration.status, calibration.helpful, calibration.unhelpful) == (
        CalibrationRun.Status.CANDIDATE, VOTES_PER_CLASS, VOTES_PER_CLASS,
    )  # fmt: skip
    assert calibration.candidate_id is not None
    assert (evaluation.status, evaluation.queries) == (EvaluationRun.Status.PASSED, len(GOLDEN))
    assert evaluation.hit_at_10 == 1.0, evaluation.message


# --- a re-delivered message ---------------------------------------------------------------------


def _deliver_twice(task: Any, worker_log: Path) -> tuple[str, dict[str, str], dict[str, str]]:
    """Send `task` twice with one task id, as a broker re-delivers an unacknowledged
    message; return the id and each delivery's result."""
    task_id = f"redelivered-{uuid.uuid4()}"
    first = task.apply_async(task_id=task_id).get(timeout=DEADLINE_S)
    app.AsyncResult(task_id).forget()  # so that the second result is the second delivery's
    second = task.apply_async(task_id=task_id).get(timeout=DEADLINE_S)
    # Both messages were executed by the worker, not one dropped by the broker.
    _await(
        lambda: worker_log.read_text().count(f"[{task_id}] succeeded") == 2 or None,
        what="two executions in the worker log",
        logs=[worker_log],
    )
    return task_id, first, second


@pytest.fixture
def maintenance_worker(app_database_url: str, own_broker: str, tmp_path: Path) -> Iterator[Path]:
    """A real maintenance-lane worker on this test's broker; yields its log."""
    log = tmp_path / "worker.log"
    with celery_worker(
        database_url=app_database_url, log_path=log, queue="maintenance",
        extra_env={**LEARNING_ENV, "CELERY_BROKER_URL": own_broker},
    ):  # fmt: skip
        yield log


def test_second_delivery_of_a_calibration_finds_its_run_when_the_task_id_repeats(
    learning_workspace: Tenant, maintenance_worker: Path
) -> None:
    group_id = learning_workspace.workspace.group_id
    task_id, first, second = _deliver_twice(calibrate_workspaces, maintenance_worker)
    assert list(first) == [group_id]
    assert first[group_id].startswith(f"{CalibrationRun.Status.CANDIDATE}: ")
    assert second == first
    with _reading(learning_workspace):
        runs = list(CalibrationRun.objects.filter(group_id=group_id))
        candidates = WeightSet.objects.filter(group_id=group_id).count()
    assert [run.run_key for run in runs] == [f"task:{task_id}"]
    assert candidates == 1  # the second delivery stored no second candidate


def test_second_delivery_of_an_evaluation_finds_its_run_when_the_task_id_repeats(
    learning_workspace: Tenant, maintenance_worker: Path
) -> None:
    group_id = learning_workspace.workspace.group_id
    task_id, first, second = _deliver_twice(evaluate_workspaces, maintenance_worker)
    assert list(first) == [group_id]
    assert first[group_id].startswith(f"{EvaluationRun.Status.PASSED}: ")
    assert second == first
    with _reading(learning_workspace):
        runs = list(EvaluationRun.objects.filter(group_id=group_id))
        results = EvaluationResult.objects.filter(group_id=group_id).count()
    assert [run.run_key for run in runs] == [f"task:{task_id}"]
    assert results == len(GOLDEN)  # one result per golden query, not two
