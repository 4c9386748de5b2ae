"""The MCP server (`uvicorn vera.mcp.asgi:app`) in its own process, for tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.web import free_port
from tests.support.workers import ROOT


@dataclass(frozen=True)
class McpServer:
    """Where a running MCP server answers."""

    base: str

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"


@contextlib.contextmanager
def mcp_server(
    *, database_url: str, log: Path, extra_env: dict[str, str] | None = None
) -> Iterator[McpServer]:
    """uvicorn serving the MCP app on a free loopback port, as the app role; yields once
    its /healthz answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DATABASE_URL": database_url, "VERA_MCP__RESOURCE_URL": f"{base}/mcp"}
    env.update(extra_env or {})
    env["DJANGO_SETTINGS_MODULE"] = "vera.settings.test"
    env.pop("DATABASE_OWNER_URL", None)
    args = [sys.executable, "-m", "uvicorn", "vera.mcp.asgi:app", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", "warning"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)  # noqa: S310 - loopback
                break
            except urllib.error.HTTPError:
                break  # it answers (a 503 is an answer: the test says what it expects)
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the MCP server did not start:\n{log.read_text()}")
                time.sleep(0.3)
        yield McpServer(base=base)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
