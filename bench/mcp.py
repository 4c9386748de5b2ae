"""What MCP costs next to REST: the same questions through both, in one run.

    .venv/bin/python -m bench.mcp [--claims 10000] [--requests 200] [--reuse]

Loads (or, with `--reuse`, keeps) the synthetic operations corpus of `bench.search_latency`
in its own database (`vera_bench_mcp`), then starts gunicorn (the REST API, as
`bench.search_latency` does) and the MCP server (`uvicorn vera.mcp.asgi:app`), both as the
app role, and asks every question through both with one viewer's API key, one client at
a time: `GET /api/v1/search?q=...&k=10` and the `search` tool over one Streamable HTTP
session of the SDK's own client (and the same for `context`, when the server offers it).

Each question is asked once first (through REST), so both sides then find its embedding
cached and the difference is the transport's and the tool layer's, not the model's; the
two sides alternate which goes first, question by question. It prints client-side p50,
p95 and p99 per side and the difference at p50 (the goal: MCP adds <= 10 ms at p50). It
asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import ROOT, setup_django
from bench.search_latency import _free_port, app_database_url, http_server, nearest_rank


@contextmanager
def mcp_process(*, embedder: str, log: Path) -> Iterator[str]:
    """The MCP server on a free loopback port, as the app role; yields its /mcp URL."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ, "DATABASE_URL": app_database_url(), "DJANGO_SETTINGS_MODULE":
        "vera.settings.local", "DJANGO_DEBUG": "false", "VERA_EMBEDDER__PROVIDER": embedder,
        "VERA_MCP__RESOURCE_URL": f"{base}/mcp",
    }  # fmt: skip
    command = [sys.executable, "-m", "uvicorn", "vera.mcp.asgi:app", "--host", "127.0.0.1",
               "--port", str(port), "--log-level", "warning"]  # fmt: skip
    with log.open("wb") as output:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=output)  # noqa: S603
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the MCP server did not start:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.25)
        yield f"{base}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _figures(label: str, samples: Sequence[float]) -> str:
    p50, p95, p99 = (nearest_rank(samples, p) for p in (50, 95, 99))
    return f"{label:<22} {len(samples):>5} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f}"


async def _compare(
    *, rest: str, mcp: str, key: str, questions: Sequence[str], tools: Sequence[str]
) -> dict[str, tuple[list[float], list[float]]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    paths = {"search": "/api/v1/search", "context": "/api/v1/context"}
    found: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in tools}
    async with (
        httpx.AsyncClient(base_url=rest, headers=headers, timeout=60) as http,
        httpx2.AsyncClient(headers=headers, timeout=60) as transport,
        Client(streamable_http_client(mcp, http_client=transport)) as client,
    ):
        offered = {tool.name for tool in (await client.list_tools()).tools}

        async def timed(call: Callable[[], Awaitable[Any]]) -> float:
            started = time.perf_counter()
            result = await call()
            failed = (
                getattr(result, "is_error", False) or getattr(result, "status_code", 200) != 200
            )
            if failed:
                raise SystemExit(f"a request failed: {result}")
            return (time.perf_counter() - started) * 1000

        for name in tools:
            if name not in offered:
                print(f"{name:<22} not offered by this server: skipped")
                continue
            rest_ms, mcp_ms = found[name]
            for n, question in enumerate(questions):
                params: dict[str, Any] = {"q": question, "k": 10}
                arguments: dict[str, Any] = {"query": question, "k": 10}
                if name == "context":
                    params, arguments = {"q": question}, {"query": question}

                async def over_rest(p: dict[str, Any] = params, n_: str = name) -> Any:
                    return await http.get(paths[n_], params=p)

                async def over_mcp(a: dict[str, Any] = arguments, n_: str = name) -> Any:
                    return await client.call_tool(n_, a)

                await over_rest()  # the embedding is cached from here on, for both sides
                pair = [(rest_ms, over_rest), (mcp_ms, over_mcp)]
                for into, call in pair if n % 2 == 0 else pair[::-1]:
                    into.append(await timed(call))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--reuse", action="store_true", help="keep a loaded database")
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_mcp")
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    setup_django(fresh=not args.reuse)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    from bench.ops_load import ensure_loaded, viewer_key
    from retrieval.usecases import configured_embedder

    corpus = ensure_loaded(claims=args.claims, reuse=args.reuse, embedder=configured_embedder())
    key = viewer_key()
    questions = corpus.questions(seed=29)[: args.requests]
    logs = Path(tempfile.gettempdir())
    print(f"corpus           {args.claims} published claims; {len(questions)} questions, c=1")
    with (
        http_server(embedder=args.embedder, log=logs / "vera-bench-mcp-gunicorn.log") as rest,
        mcp_process(embedder=args.embedder, log=logs / "vera-bench-mcp-uvicorn.log") as mcp,
    ):
        found = asyncio.run(
            _compare(rest=rest, mcp=mcp, key=key, questions=questions, tools=("search", "context"))
        )
    print(f"{'run':<22} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, (rest_ms, mcp_ms) in found.items():
        if not rest_ms:
            continue
        print(_figures(f"{name} via REST", rest_ms))
        print(_figures(f"{name} via MCP", mcp_ms))
        added = nearest_rank(mcp_ms, 50) - nearest_rank(rest_ms, 50)
        print(f"{name:<22} MCP adds {added:+.1f} ms at p50 (goal: <= 10 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
