"""A real gunicorn serving VERA from the checkout (so with its gunicorn.conf.py) for tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.workers import ROOT


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def gunicorn(
    *,
    database_url: str,
    log: Path,
    workers: int = 1,
    extra_env: dict[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
) -> Iterator[str]:
    """gunicorn with `workers` sync workers on a free loopback port, as the app role;
    yields its base URL once /healthz answers (that probe is a request like any other)."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, **(extra_env or {})}
    env["DJANGO_SETTINGS_MODULE"] = "vera.settings.test"
    env.pop("DATABASE_OWNER_URL", None)
    args = [sys.executable, "-m", "gunicorn", "vera.wsgi", "-b", f"127.0.0.1:{port}",
            "-w", str(workers), *extra_args]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=2)  # noqa: S310 - loopback
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not start:\n{log.read_text()}")
                time.sleep(0.3)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
