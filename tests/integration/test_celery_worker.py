"""A real Celery worker process runs a task enqueued on the embedded Redis."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.result import AsyncResult

from tests.support.workers import celery_worker
from vera.celery import app
from vera.tasks import check_health

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(app_database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`celery worker` on the maintenance lane, connected as the app role to the test database."""
    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue="maintenance"
    ) as process:
        yield process


def test_worker_process_runs_an_enqueued_task(worker: subprocess.Popen[bytes]) -> None:
    assert app.conf.task_always_eager is False  # the task must cross the broker
    result = check_health.delay()
    assert isinstance(result, AsyncResult)
    report = result.get(timeout=60)
    assert result.state == "SUCCESS"
    assert {name: check["ok"] for name, check in report.items()} == {
        "postgres": True,
        "redis": True,
        "graph": True,
        "object_store": True,
    }
