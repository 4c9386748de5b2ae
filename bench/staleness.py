"""Stale citations: 200 facts superseded (and some retracted), read 10,000 times over HTTP.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.staleness [--facts 200] [--reads 10000]

Into its own database (`vera_bench_staleness`, hashing embedder), through the real
pipeline: 200 services each "run on" a first cluster (documents dated T0) and an
"owner"; a second run (documents dated T1) moves every service to another cluster, so
each first value is superseded; then a tenth of the owner facts are retracted through
`claim_retract`. The outbox is drained (index and graph).

Then `GET /api/v1/search` through gunicorn with a viewer's API key: `--reads` queries
"where does svc-N run" for random services. Every cited claim of every answer is looked
up in Postgres: a citation of a claim that is not published now is stale. Then, as of
a day after T0, each service's first cluster must be the value search cites. Prints the
counts and the latency. Asserts nothing about time; the stale count is the figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import (
    bench_workspace,
    drain_outbox,
    markdown_source,
    setup_django,
    workspace_viewer_key,
)
from bench.search_latency import http_server, nearest_rank

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T1 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def _write(folder: Path, facts: int, *, second: bool) -> None:
    at = (T1 if second else T0).timestamp()
    for n in range(facts):
        cluster = f"k8s-{'b' if second else 'a'}-{n:03d}"
        path = folder / f"svc-{n:03d}.md"
        path.write_text(
            f"# svc-{n:03d}\n\nThe svc-{n:03d} runs on {cluster}. "
            f"The svc-{n:03d} is owned by team-{n:03d}.\n",
            encoding="utf-8",
        )
        os.utime(path, (at, at))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--facts", type=int, default=200)
    parser.add_argument("--reads", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_staleness")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_staleness")
    os.environ.setdefault("VERA_EMBEDDER__PROVIDER", "hashing")
    setup_django(fresh=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from curation.models import Claim
    from curation.usecases import claim_retract, ingest_now
    from tenants import rls

    folder = Path(tempfile.mkdtemp(prefix="vera-bench-staleness-"))
    workspace, principal = bench_workspace("Staleness Org", "Staleness WS")
    group_id = workspace.group_id
    source_id = markdown_source(principal, group_id, folder, name="services")
    for second in (False, True):
        _write(folder, args.facts, second=second)
        ingest_now(source_id=source_id, group_id=group_id)
    with rls.tenant_context(principal):
        owners = list(
            Claim.objects.filter(predicate="OWNED_BY", status="published")
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        for claim_id in owners[::10]:
            claim_retract(actor=principal, claim_id=claim_id, reason="bench: wrong owner")
    drain_outbox()
    with rls.tenant_context(principal):
        status = dict(Claim.objects.values_list("pk", "status"))
        first = {
            subject: pk
            for pk, subject in Claim.objects.filter(
                predicate="RUNS_ON", object_entity__canonical_name__startswith="k8s-a-"
            ).values_list("pk", "subject__canonical_name")
        }
    counts = {s: sum(1 for v in status.values() if v == s) for s in set(status.values())}
    print(f"loaded            {args.facts} services; claims by status: {counts}")

    key = workspace_viewer_key(workspace.pk, prefix="stale")
    log = Path(tempfile.gettempdir()) / "vera-bench-staleness-gunicorn.log"
    rng = random.Random(11)  # noqa: S311 - a sample, not a secret
    latencies: list[float] = []
    cited = stale = 0
    stale_examples: list[tuple[int, str]] = []
    with (
        http_server(embedder="hashing", log=log) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client,
    ):
        for _ in range(args.reads):
            n = rng.randrange(args.facts)
            started = time.perf_counter()
            response = client.get("/api/v1/search", params={"q": f"where does svc-{n:03d} run"})
            latencies.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
            for hit in response.json()["hits"]:
                cited += 1
                if status.get(hit["claim_id"]) != "published":
                    stale += 1
                    stale_examples.append((hit["claim_id"], str(status.get(hit["claim_id"]))))
        as_of = (T0 + dt.timedelta(days=1)).isoformat()
        right = 0
        for n in range(args.facts):
            subject = f"svc-{n:03d}"
            response = client.get(
                "/api/v1/search", params={"q": f"where does {subject} run", "as_of": as_of}
            )
            response.raise_for_status()
            ids = [hit["claim_id"] for hit in response.json()["hits"]]
            right += first.get(subject) in ids
    print(
        f"now               {args.reads} searches, {cited} citations, {stale} stale "
        f"{stale_examples[:5]}; p50 {nearest_rank(latencies, 50):.1f} ms, "
        f"p95 {nearest_rank(latencies, 95):.1f} ms"
    )
    print(f"as of T0 + 1 day  {right} of {args.facts} services cite their first cluster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
