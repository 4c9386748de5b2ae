"""Lanes benchmark: how long a reviewer's approval takes to become searchable during a bulk ingest.

    .venv/bin/python -m bench.lanes [--docs 5183] [--approvals 30] [--every 4]
                                    [--embedder minilm|hashing]

Real processes, as `make run` starts them: a Celery worker per lane (ingest,
projection, interactive) and Celery beat, on the test-profile servers and a fresh
`vera_bench_lanes` database. A tier-1 source of SciFact abstracts (5,183 by default)
is ingested by the ingest lane while beat drives the bulk projection lane; every
`--every` seconds a tier-3 claim is approved, and the time until its search document
is published is measured (polling every 20 ms). Prints p50/p95/max latency and the
bulk backlog seen at each approval; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import bench_workspace, child_process, markdown_source, setup_django
from bench.ingest import write_corpus


def _review_docs(root: Path, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (root / f"runbook-{n}.md").write_text(
            f"# Runbook {n}\n\nThe review-svc-{n} runs on cluster-{n}.\n", encoding="utf-8"
        )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=5183)
    parser.add_argument("--approvals", type=int, default=30)
    parser.add_argument("--every", type=float, default=4.0, help="seconds between approvals")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    args = parser.parse_args()
    os.environ["VERA_BENCH__DB"] = os.environ.get("VERA_BENCH__DB", "vera_bench_lanes")
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    os.environ.setdefault("VERA_SOURCES__FILE_ROOTS", tempfile.gettempdir())
    setup_django()
    # Its own broker database: the beat and worker messages of a bench run must never
    # reach the test suite's workers on the same Redis.
    from django.conf import settings

    broker = re.sub(r"(/\d+)?$", "/7", settings.CELERY_BROKER_URL, count=1)
    os.environ["CELERY_BROKER_URL"] = os.environ["CELERY_RESULT_BACKEND"] = broker
    from vera.celery import app

    app.conf.broker_url = app.conf.result_backend = broker
    import dj_database_url
    from django.db import connections
    from django.db.models import Count

    from curation.domain.outbox import Consumer, Priority
    from curation.domain.tiers import ClaimStatus
    from curation.models import Claim, Episode, OutboxJob
    from curation.tasks import ingest_source
    from curation.usecases import ingest_now, review_approve
    from retrieval.models import SearchDocument
    from tenants import rls

    work = Path(tempfile.gettempdir()) / "vera-bench-lanes"
    corpus, runbooks = work / "docs", work / "runbooks"
    total = write_corpus(corpus, docs=args.docs, scifact_only=True)
    _review_docs(runbooks, args.approvals)
    workspace, principal = bench_workspace("Lanes Org", "Lanes WS")
    bulk = markdown_source(principal, workspace.group_id, corpus, name="scifact")
    tier3 = markdown_source(principal, workspace.group_id, runbooks, name="runbooks", tier=3)
    ingest_now(source_id=tier3, group_id=workspace.group_id)
    with rls.tenant_context(principal):
        pending = list(
            Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW, predicate="RUNS_ON")
            .order_by("pk")
            .values_list("pk", "version")
        )

    app = dj_database_url.parse(os.environ["DATABASE_URL"])
    name = connections["default"].settings_dict["NAME"]
    env = {**os.environ, "DATABASE_URL": f"postgres://{app['USER']}:{app['PASSWORD']}"
           f"@{app['HOST']}:{app['PORT']}/{name}"}  # fmt: skip
    env.pop("DATABASE_OWNER_URL", None)
    celery = [sys.executable, "-m", "celery", "-A", "vera"]
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    latencies: list[float] = []
    backlogs: list[int] = []
    with contextlib.ExitStack() as stack:
        for lane in ("ingest", "projection", "interactive"):
            stack.enter_context(child_process(
                [*celery, "worker", "-l", "info", "-Q", lane, "-n", f"bench-{lane}@%h",
                 "--concurrency", "1", "--without-gossip", "--without-mingle"],
                env, logs / f"{lane}.log",
            ))  # fmt: skip
        stack.enter_context(child_process(
            [*celery, "beat", "-l", "info", "-s", str(work / "beat-schedule")], env,
            logs / "beat.log",
        ))  # fmt: skip
        ingest_source.delay(source_id=bulk, group_id=workspace.group_id)
        started = time.monotonic()
        time.sleep(args.every * 2)  # let the bulk lanes fill up first
        for claim_id, version in pending[: args.approvals]:
            with rls.tenant_context(principal):
                backlog = OutboxJob.objects.filter(
                    consumer=Consumer.INDEX, status="pending", priority=Priority.BULK
                ).count()
                decided = time.monotonic()
                review_approve(actor=principal, claim_id=claim_id, version=version)
            while time.monotonic() - decided < 120:
                with rls.tenant_context(principal):
                    if SearchDocument.objects.filter(
                        claim_id=claim_id, status="published"
                    ).exists():
                        break
                time.sleep(0.02)
            latency = time.monotonic() - decided
            latencies.append(latency)
            backlogs.append(backlog)
            print(f"approval #{claim_id:<6} searchable after {latency:6.2f} s  "
                  f"(bulk index backlog {backlog})", flush=True)  # fmt: skip
            time.sleep(max(0.0, args.every - latency))
        elapsed = time.monotonic() - started
        with rls.tenant_context(principal):
            episodes = Episode.objects.filter(source_id=bulk).count()
            done = dict(
                OutboxJob.objects.filter(status="done", priority=Priority.BULK)
                .values("consumer")
                .annotate(n=Count("pk"))
                .values_list("consumer", "n")
            )
    print(f"embedder             {args.embedder}")
    print(f"bulk corpus          {total} documents; {episodes} ingested in {elapsed:.0f} s; "
          f"bulk jobs done: index {done.get('index', 0)}, "
          f"graph {done.get('graph', 0)}")  # fmt: skip
    median = statistics.median(backlogs)
    print(f"approvals            {len(latencies)}; bulk index backlog at approval: "
          f"min {min(backlogs)}, median {median:.0f}, max {max(backlogs)}")  # fmt: skip
    print(f"approval->searchable p50 {_percentile(latencies, 0.5):.2f} s  "
          f"p95 {_percentile(latencies, 0.95):.2f} s  max {max(latencies):.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
