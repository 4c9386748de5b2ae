"""A real Celery worker process runs a task enqueued on the embedded Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.result import AsyncResult

from vera.celery import app
from vera.tasks import check_health

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def worker(app_database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`celery worker` in its own process, connected as the app role to the test database."""
    env = {**os.environ, "DATABASE_URL": app_database_url}
    env.pop("DATABASE_OWNER_URL", None)
    log = (tmp_path / "worker.log").open("wb")
    node = f"pytest-{os.getpid()}@localhost"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "vera",
            "worker",
            "-P",
            "solo",
            "-n",
            node,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "info",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[node], timeout=0.5):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the worker did not come up:\n" + (tmp_path / "worker.log").read_text())
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


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
    }
