"""The MCP server (`uvicorn vera.mcp.asgi:app`) in its own process, for tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.web import free_port
from tests.support.workers import ROOT, terminate


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
        terminate(process)


async def _session(
    server: McpServer, token: str | None, calls: list[tuple[str, dict[str, Any]]]
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:  # noqa: SIM117
        async with Client(streamable_http_client(server.url, http_client=http)) as client:
            tools = await client.list_tools()
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return {tool.name for tool in tools.tools}, results


def call(
    server: McpServer, token: str | None, *calls: tuple[str, dict[str, Any]]
) -> tuple[set[str], list[Any]]:
    """One session of the SDK's own client over Streamable HTTP with `token` as bearer:
    the names of the tools it lists, and each call's result, in order."""
    # On a thread of its own: a test driving Playwright's sync API already runs a loop here.
    with ThreadPoolExecutor(max_workers=1) as thread:
        found: tuple[set[str], list[Any]] = thread.submit(
            asyncio.run, _session(server, token, list(calls))
        ).result()
    return found
