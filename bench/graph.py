"""The graph read model at 100,000 published claims: projection, rebuild, `related` over HTTP.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.graph [--claims 100000] [--outbox 20000] [--requests 300]
                                        [--reuse]

Loads the synthetic operations corpus (bench/ops_corpus.py, as bench/search_latency:
~7% of facts with a superseded revision, five sources, cited episodes) into its own
database (`vera_bench_graph`) and graph (`vera_bench_graph` in the test-profile
FalkorDB), then prints:

- full rebuild: `graph_replay` of the workspace from Postgres (what `graph_rebuild --group`
  runs, its graph jobs paused meanwhile), seconds and edges/s;
- projection through the outbox: `--outbox` claims re-enqueued as graph jobs and drained
  by `process_outbox` (batched UNWIND writes), edges/s;
- `GET /api/v1/entities/{id}/related?hops=2` through gunicorn (2 workers x 4 threads)
  with a viewer's API key, for services picked at random: client p50/p95/p99.

Goals (issue "graph as a read model"): >= 2,000 edges/s projected, rebuild <= 60 s,
related p95 <= 50 ms. Asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bench.common import setup_django, timed
from bench.search_latency import http_server, nearest_rank

if TYPE_CHECKING:
    from curation.ports import GraphProjection
    from tenants.domain.access import Principal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--outbox", type=int, default=20_000, help="claims projected via jobs")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--reuse", action="store_true", help="keep a loaded database")
    parser.add_argument(
        "--reads-only", action="store_true", help="with --reuse: the graph as it is, `related` only"
    )
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_graph")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_graph")
    os.environ.setdefault("VERA_EMBEDDER__PROVIDER", "hashing")  # no index is read here
    setup_django(fresh=not args.reuse)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from django.utils import timezone

    from bench.ops_corpus import Corpus
    from bench.ops_load import WORKSPACE, load
    from curation.usecases import graph_projection
    from tenants.models import Scope
    from tenants.selectors import principal_system

    workspace = Scope.objects.filter(name=WORKSPACE).first()
    if workspace is None or not args.reuse:
        with timed() as took:
            workspace, _ = load(corpus=Corpus(size=args.claims, now=timezone.now()))
        print(f"load             {args.claims} published claims in {took[0]:.1f} s", flush=True)
    group_id = workspace.group_id
    principal = principal_system("bench", group_ids=[group_id])
    graph = graph_projection()
    if not (args.reuse and args.reads_only):
        _writes(graph, group_id, principal, args.outbox)
    _related(group_id, principal, args.requests)
    return 0


def _writes(graph: GraphProjection, group_id: str, principal: Principal, outbox: int) -> None:
    """Full rebuild, then `outbox` claims projected through graph jobs; prints both."""
    from django.utils import timezone

    from curation.domain.outbox import PROJECT_CLAIM, Consumer
    from curation.models import Claim, OutboxJob
    from curation.tasks import process_outbox
    from curation.usecases import PROJECTED, graph_replay
    from tenants import rls

    graph.clear()
    with rls.tenant_context(principal):
        edges = Claim.objects.filter(status__in=PROJECTED).count()
    with timed() as took:  # as an operator's `graph_rebuild --group`: its jobs paused meanwhile
        graph_replay(group_ids=[group_id])
    print(f"full rebuild     {edges} edges in {took[0]:.1f} s ({edges / took[0]:.0f} edges/s)")

    with rls.tenant_context(principal):
        ids = list(
            Claim.objects.filter(status__in=PROJECTED)
            .order_by("?")
            .values_list("pk", flat=True)[:outbox]
        )
        graph.remove_claims(ids)  # so the jobs write, not find
        now = timezone.now()
        OutboxJob.objects.bulk_create(
            OutboxJob(group_id=group_id, consumer=Consumer.GRAPH, kind=PROJECT_CLAIM,
                      payload={"claim_id": claim_id}, available_at=now)
            for claim_id in ids
        )  # fmt: skip
    with timed() as took:
        while process_outbox(consumer="graph"):
            pass
    rate = len(ids) / took[0]
    print(f"outbox           {len(ids)} edges in {took[0]:.1f} s ({rate:.0f} edges/s)")


def _related(group_id: str, principal: Principal, requests: int) -> None:
    """`related?hops=2` through gunicorn for `requests` random services; prints latencies."""
    from bench.ops_load import viewer_key
    from curation.models import Entity
    from tenants import rls

    with rls.tenant_context(principal):
        services = list(
            Entity.objects.filter(claims__predicate="RUNS_ON")
            .values_list("pk", flat=True)
            .distinct()[:5000]
        )
    targets = random.Random(7).choices(services, k=requests)  # noqa: S311 - a sample
    key = viewer_key()
    log = Path(tempfile.gettempdir()) / "vera-bench-graph-gunicorn.log"
    samples: list[float] = []
    server: list[float] = []  # the app's own time, from its Server-Timing header
    paths = 0
    headers = {"Authorization": f"Bearer {key}"}
    with (
        http_server(embedder="hashing", log=log) as base,
        httpx.Client(base_url=base, headers=headers) as client,
    ):
        for entity_id in targets[:20]:  # warm-up: connections, first queries
            client.get(f"/api/v1/entities/{entity_id}/related", params={"hops": 2})
        for entity_id in targets:
            started = time.perf_counter()
            response = client.get(f"/api/v1/entities/{entity_id}/related", params={"hops": 2})
            samples.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{response.status_code}: {response.text[:300]}")
            paths += len(response.json()["neighbours"])
            timing = response.headers.get("Server-Timing", "")
            if "app;dur=" in timing:
                server.append(float(timing.split("app;dur=")[1].split(",")[0]))
    print(
        f"related, 2 hops  {len(samples)} requests, {paths / len(samples):.1f} paths each: "
        f"p50 {nearest_rank(samples, 50):.1f} ms, p95 {nearest_rank(samples, 95):.1f} ms, "
        f"p99 {nearest_rank(samples, 99):.1f} ms"
    )
    if server:
        print(
            f"  of which in the app (Server-Timing): p50 {nearest_rank(server, 50):.1f} ms, "
            f"p95 {nearest_rank(server, 95):.1f} ms"
        )


if __name__ == "__main__":
    sys.exit(main())
