"""Search latency through the real HTTP API at 100,000 published claims.

    .venv/bin/python -m bench.search_latency [--claims 100000] [--requests 400]
        [--concurrency 1,8] [--embedder minilm] [--reuse] [--time-cap 120]
        [--as-of-requests 100] [--snapshot-requests 100]

Loads N published tier-1/2 claims of a synthetic operations corpus (bench/ops_corpus.py:
services, hosts, owners, dependencies, versions, runbook passages; ~7% with a
superseded revision; five sources; cited episodes) into its own database
(`vera_bench_latency`), indexes them with `index_claims`, then starts gunicorn
(2 workers x 4 threads, `vera.settings.local`, the app role) and sends
`GET /api/v1/search?q=...&k=10` with a viewer's API key over loopback.

Every measured query text is distinct and its cached embedding is deleted first, so
each request embeds its query; a last short run repeats queries ("cached embedding").
Then one client searches `as_of` three instants across the loaded history (900, 450 and
30 days ago), each with questions of its own, and a sealed knowledge snapshot of the
workspace (built first, or the last one with `--reuse`), searched at its instant and
as of 450 days ago. Per run it prints client wall time and
server time (the Server-Timing header: the whole Django stack, query embedding
included) at p50/p95/p99, requests/s and non-200 answers, then p50/p95 of each step
the search view reports there. The
goal is server p95 <= 50 ms with the local embedder; this asserts nothing about time.
`--reuse` keeps a loaded database and measures at once.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import logging
import math
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx

from bench.common import ROOT, setup_django

# `name;dur=ms` metrics: `app` (the middleware, the whole stack) and the view's own steps.
SERVER_TIMING = re.compile(r"([\w-]+);dur=([0-9.]+)")
WORKERS, THREADS = 2, 4
WARM_UP_PER_SLOT = 5
# The as_of instants, in days before now: early, middle and late in the loaded history.
AS_OF_DAYS_AGO = (900, 450, 30)


def nearest_rank(samples: Sequence[float], percent: float) -> float:
    """The nearest-rank percentile: the smallest sample with at least `percent`% at or below it."""
    if not samples:
        raise ValueError("no samples")
    if not 0 < percent <= 100:
        raise ValueError("percent must be in (0, 100]")
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


@dataclass(frozen=True)
class Sample:
    """One request as the client saw it."""

    client_ms: float
    server_ms: float | None
    status: int
    steps: dict[str, float] = field(default_factory=dict)
    hits: int = 0
    uncited: int = 0
    error: str = ""


@dataclass(frozen=True)
class Run:
    label: str
    samples: list[Sample]
    seconds: float


def _search(client: httpx.Client, query: str, extra: dict[str, str] | None = None) -> Sample:
    started = time.perf_counter()
    try:
        response = client.get("/api/v1/search", params={"q": query, "k": 10, **(extra or {})})
    except httpx.HTTPError as error:
        return Sample((time.perf_counter() - started) * 1000, None, 0, error=repr(error))
    client_ms = (time.perf_counter() - started) * 1000
    steps = {
        name: float(ms)
        for name, ms in SERVER_TIMING.findall(response.headers.get("server-timing", ""))
    }
    server_ms = steps.pop("app", None)
    if response.status_code != 200:
        error = f"{response.status_code}: {response.text[:300]}"
        return Sample(client_ms, server_ms, response.status_code, error=error)
    hits = response.json()["hits"]
    uncited = sum(1 for hit in hits if not hit["citations"])
    return Sample(client_ms, server_ms, 200, steps, hits=len(hits), uncited=uncited)


def measure(
    *,
    base: str,
    key: str,
    queries: Sequence[str],
    concurrency: int,
    cap_s: float,
    extra: dict[str, str] | None = None,
    label: str = "",
) -> Run:
    """Send `queries` with `concurrency` clients until they are done or `cap_s` has passed
    (each with the `extra` parameters: an `as_of`)."""
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for query in queries:
        todo.put(query)
    samples: list[Sample] = []
    deadline = time.monotonic() + cap_s
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30, limits=limits) as client:

        def loop() -> None:
            while time.monotonic() < deadline:
                try:
                    query = todo.get_nowait()
                except queue.Empty:
                    return
                samples.append(_search(client, query, extra))

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for future in [pool.submit(loop) for _ in range(concurrency)]:
                future.result()
        elapsed = time.perf_counter() - started
    return Run(label=label or f"concurrency {concurrency}", samples=samples, seconds=elapsed)


def _figures(values: list[float]) -> str:
    if not values:
        return f"{'-':>7} {'-':>7} {'-':>7}"
    return " ".join(f"{nearest_rank(values, p):7.1f}" for p in (50, 95, 99))


def report(runs: list[Run]) -> None:
    print(
        f"{'run':<26} {'n':>5} {'req/s':>7} | {'client ms p50':>13} {'p95':>7} {'p99':>7} | "
        f"{'server ms p50':>13} {'p95':>7} {'p99':>7} | {'non-200':>7} {'hits/q':>6}"
    )
    for run in runs:
        ok = [s for s in run.samples if s.status == 200]
        client = [s.client_ms for s in run.samples]
        server = [s.server_ms for s in run.samples if s.server_ms is not None]
        rps = len(run.samples) / run.seconds if run.seconds else 0.0
        hits = sum(s.hits for s in ok) / len(ok) if ok else 0.0
        print(
            f"{run.label:<26} {len(run.samples):>5} {rps:7.1f} | {_figures(client):>29} | "
            f"{_figures(server):>29} | {len(run.samples) - len(ok):>7} {hits:6.1f}"
        )
    for run in runs:
        names = dict.fromkeys(name for sample in run.samples for name in sample.steps)
        steps = (
            f"{name} {nearest_rank(values, 50):.1f}/{nearest_rank(values, 95):.1f}"
            for name in names
            if (values := [s.steps[name] for s in run.samples if name in s.steps])
        )
        print(f"{run.label + ' steps p50/p95 ms':<44} {', '.join(steps) or '-'}")
    for run in runs:
        failed = next((s for s in run.samples if s.error), None)
        if failed:
            print(f"first error ({run.label}): {failed.error}")
        uncited = sum(s.uncited for s in run.samples)
        if uncited:
            print(f"{run.label}: {uncited} hits without a citation")
    print("goal: server p95 <= 50 ms with the local embedder, query embedding included")


def forget_embeddings(texts: Sequence[str], *, embedder: object) -> int:
    """Delete these texts' shared (Redis) embedding cache entries; returns how many there were."""
    import redis
    from django.conf import settings

    key = getattr(embedder, "key", None)
    if key is None:  # an uncached embedder (hashing)
        return 0
    client = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])
    try:
        return sum(int(client.delete(*map(key, batch))) for batch in itertools.batched(texts, 500))
    finally:
        client.close()


# --- the server ---------------------------------------------------------------------------


def app_database_url() -> str:
    """The application role on the bench database (what setup_django left the ORM using)."""
    from django.db import connections

    db = connections["default"].settings_dict
    user, password = quote(db["USER"], safe=""), quote(db["PASSWORD"], safe="")
    return f"postgres://{user}:{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_healthy(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"gunicorn exited ({server.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)  # nothing to await: the server says nothing until it listens
    raise SystemExit(f"gunicorn did not become healthy:\n{log.read_text()[-3000:]}")


@contextmanager
def http_server(*, embedder: str, log: Path) -> Iterator[str]:
    """gunicorn serving VERA on a free loopback port as the app role; yields its base URL."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": app_database_url(),
        "DJANGO_SETTINGS_MODULE": "vera.settings.local",
        "DJANGO_DEBUG": "false",
        "VERA_EMBEDDER__PROVIDER": embedder,
    }
    command = [
        sys.executable, "-m", "gunicorn", "vera.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", str(WORKERS),
        "--worker-class", "gthread", "--threads", str(THREADS), "--log-level", "warning",
    ]  # fmt: skip
    with log.open("wb") as output:
        server = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
            command, cwd=ROOT, env=env, stdout=output, stderr=output
        )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_healthy(base, server, log)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# --- main ---------------------------------------------------------------------------------


def _levels(text: str) -> list[int]:
    levels = [int(part) for part in text.split(",") if part.strip()]
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of positive integers")
    return levels


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--claims", type=int, default=100_000, help="published claims")
    parser.add_argument("--requests", type=int, default=400, help="per concurrency level")
    parser.add_argument("--concurrency", type=_levels, default=[1, 8])
    parser.add_argument("--embedder", default="minilm", help="minilm | hashing | ...")
    parser.add_argument("--time-cap", type=float, default=120.0, help="seconds per level")
    parser.add_argument("--reuse", action="store_true", help="keep a loaded database")
    parser.add_argument(
        "--as-of-requests", type=int, default=100,
        help="per as_of instant (three across the history, one client); 0: none",
    )  # fmt: skip
    parser.add_argument(
        "--snapshot-requests", type=int, default=100,
        help="per snapshot search run (its instant, and as of 450 days ago); 0: none",
    )  # fmt: skip
    return parser.parse_args()


def _run_levels(
    base: str, key: str, questions: list[str], args: argparse.Namespace, snapshot: int | None
) -> list[Run]:
    runs = []
    for number, level in enumerate(args.concurrency):
        batch = questions[number * args.requests : (number + 1) * args.requests]
        runs.append(
            measure(base=base, key=key, queries=batch, concurrency=level, cap_s=args.time_cap)
        )
    # As of three instants across the corpus's history (three years of valid times), one
    # client, each with questions of its own (uncached, as the first run's were).
    start = len(args.concurrency) * args.requests
    for number, days in enumerate(AS_OF_DAYS_AGO):
        batch = questions[start + number * args.as_of_requests :][: args.as_of_requests]
        instant = (dt.datetime.now(dt.UTC) - dt.timedelta(days=days)).isoformat()
        runs.append(
            measure(base=base, key=key, queries=batch, concurrency=1, cap_s=args.time_cap,
                    extra={"as_of": instant}, label=f"as_of {days} days ago, c=1")
        )  # fmt: skip
    # The sealed snapshot, at its instant and as of the middle instant, one client each.
    start += len(AS_OF_DAYS_AGO) * args.as_of_requests
    middle = (dt.datetime.now(dt.UTC) - dt.timedelta(days=AS_OF_DAYS_AGO[1])).isoformat()
    for number, (extra, label) in enumerate(
        (({}, "snapshot, c=1"), ({"as_of": middle}, f"snapshot as_of {AS_OF_DAYS_AGO[1]} d, c=1"))
    ):
        if snapshot is None:
            break
        batch = questions[start + number * args.snapshot_requests :][: args.snapshot_requests]
        runs.append(
            measure(base=base, key=key, queries=batch, concurrency=1, cap_s=args.time_cap,
                    extra={"snapshot": str(snapshot), **extra}, label=label)
        )  # fmt: skip
    # The first run's questions again: their embeddings are cached now.
    again = questions[: max(1, args.requests // 4)]
    cached = measure(base=base, key=key, queries=again, concurrency=1, cap_s=args.time_cap)
    runs.append(Run("concurrency 1, cached emb.", cached.samples, cached.seconds))
    return runs


def main() -> int:
    args = _arguments()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_latency")
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    setup_django(fresh=not args.reuse)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    from bench.ops_load import ensure_loaded, sealed_snapshot, viewer_key
    from retrieval.usecases import configured_embedder

    embedder = configured_embedder()
    corpus = ensure_loaded(claims=args.claims, reuse=args.reuse, embedder=embedder)
    key = viewer_key()
    snapshot = sealed_snapshot(reuse=args.reuse) if args.snapshot_requests else None
    slots = WORKERS * THREADS
    questions = corpus.questions(seed=11)
    needed = slots * WARM_UP_PER_SLOT + args.requests * len(args.concurrency)
    needed += args.as_of_requests * len(AS_OF_DAYS_AGO) + args.snapshot_requests * 2
    if len(questions) < needed:
        raise SystemExit(f"only {len(questions)} distinct questions for {needed} requests")
    warm_up, measured = (
        questions[: slots * WARM_UP_PER_SLOT],
        questions[slots * WARM_UP_PER_SLOT : needed],
    )
    forgotten = forget_embeddings(questions[:needed], embedder=embedder)
    print(f"questions        {len(questions)} distinct; {forgotten} cached embeddings deleted")
    print(
        f"server           gunicorn {WORKERS} workers x {THREADS} threads, {embedder.model} "
        f"({embedder.dimension}), k=10, {args.claims} published claims",
        flush=True,
    )
    log = Path(tempfile.gettempdir()) / "vera-bench-latency-gunicorn.log"
    with http_server(embedder=args.embedder, log=log) as base:
        warm = measure(base=base, key=key, queries=warm_up, concurrency=slots, cap_s=300)
        print(f"warm-up          {len(warm.samples)} requests in {warm.seconds:.1f} s", flush=True)
        runs = _run_levels(base, key, measured, args, snapshot)
    report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
