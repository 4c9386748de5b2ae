"""Real Celery worker processes for tests: one per lane, as `make run` and compose start them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vera.celery import app

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def celery_worker(
    *,
    database_url: str,
    log_path: Path,
    queue: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """`celery worker` (on `queue`, or the default one) in its own process, as the app role."""
    env = {**os.environ, "DATABASE_URL": database_url, **(extra_env or {})}
    env.pop("DATABASE_OWNER_URL", None)
    node = f"{queue or 'default'}-{os.getpid()}@localhost"
    args = [sys.executable, "-m", "celery", "-A", "vera", "worker", "-P", "solo", "-n", node,
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-l", "info"]  # fmt: skip
    if queue:
        args += ["-Q", queue]
    log = log_path.open("wb")
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[node], timeout=0.5):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the worker did not come up:\n{log_path.read_text()}")
        yield process
    finally:
        terminate(process)
        log.close()


def terminate(process: subprocess.Popen[bytes], *, timeout_s: float = 30) -> None:
    """Stop a process of the test's as a supervisor would: SIGTERM, then SIGKILL if it is
    still running after `timeout_s`."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
