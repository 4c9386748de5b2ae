"""Retracting, then erasing, a source of 5,000 claims: times, and what remains.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.retraction [--claims 5000] [--reuse]

Ingests Markdown documents (five facts each, hashing embedder: the index is what is
measured, not a model) through the real pipeline into its own database
(`vera_bench_retraction`), projects them (outbox drained: index and FalkorDB), then
retracts the whole source through `source_retract` as its admin and prints:

- the retraction's transaction (claims withdrawn, superseded ones restored, outbox
  jobs written, audit) in seconds;
- the outbox drained after it (graph edges removed, index documents updated), seconds
  and jobs/s;
- then checks, and prints, that search finds none of the source's facts now and finds
  them as of before the retraction (sampled queries);
- then erases the same source: the Postgres transaction, the cleanup after it (graph,
  raw bytes, cached embeddings), and the residual scan's finding (must be nothing).

Before the retraction it takes a knowledge snapshot of the workspace and prints its
build (the repeatable-read copy and the seal), a seal verification, and search latency
against it beside the live index's; after the retraction the snapshot still answers as
before; after the erasure it finds none of the source (re-sealed without it).

Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import bench_workspace, drain_outbox, markdown_source, setup_django, timed

if TYPE_CHECKING:
    from retrieval.models import Snapshot
    from tenants.domain.access import Principal


def _documents(folder: Path, claims: int) -> list[str]:
    """Five facts per document; returns the services named, one per document."""
    names = []
    for n in range(max(claims // 5, 1)):
        service = f"svc-{n:05d}"
        names.append(service)
        (folder / f"{service}.md").write_text(
            f"# {service}\n\nThe {service} runs on k8s-{n % 17}. The {service} is owned by "
            f"team-{n % 23}. The {service} depends on db-{n % 31}. The {service} is written "
            f"in lang-{n % 7}. The {service} is deployed by pipeline-{n % 11}.\n",
            encoding="utf-8",
        )
    return names


def _snapshot(group_id: str, principal: Principal) -> Snapshot:
    """Take and build a snapshot of the workspace; print the build and a verification."""
    from retrieval.usecases import snapshot_build, snapshot_take, snapshot_verify
    from tenants import rls

    with rls.tenant_context(principal):
        taken = snapshot_take(actor=principal, group_id=group_id, name="bench")
    with timed() as took:
        built = snapshot_build(taken.pk, actor=principal)
    assert built is not None  # noqa: S101 - a bench's precondition
    print(f"snapshot          built and sealed in {took[0]:.2f} s: {built.counts}")
    with timed() as took, rls.tenant_context(principal):
        ok = snapshot_verify(built)
    print(f"snapshot          seal verified ({ok}) in {took[0] * 1000:.0f} ms")
    return built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--claims", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_retraction")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_retraction")
    os.environ.setdefault("VERA_EMBEDDER__PROVIDER", "hashing")
    setup_django(fresh=True)
    from django.utils import timezone

    from curation.models import Claim
    from curation.usecases import graph_projection, ingest_now, source_retract
    from retrieval.domain.query import Query
    from retrieval.usecases import live_search
    from tenants import rls

    graph_projection().clear()
    folder = Path(tempfile.mkdtemp(prefix="vera-bench-retraction-"))
    services = _documents(folder, args.claims)
    workspace, principal = bench_workspace("Retraction Org", "Retraction WS")
    group_id = workspace.group_id
    source_id = markdown_source(principal, group_id, folder, name="services")
    with timed() as took:
        report = ingest_now(source_id=source_id, group_id=group_id)
        drain_outbox()
    with rls.tenant_context(principal):
        published = Claim.objects.filter(status="published").count()
    print(f"ingested          {published} published claims in {took[0]:.1f} s ({report})")

    sample = random.Random(7).sample(services, min(args.queries, len(services)))  # noqa: S311
    before = timezone.now()

    def found(as_of: object = None) -> int:
        """How many sampled services search still finds a fact of."""
        hits = 0
        with rls.tenant_context(principal):
            search = live_search()
            for service in sample:
                result = search(query=Query(text=f"{service} runs on", k=5, as_of=as_of),
                                now=timezone.now())  # fmt: skip
                hits += bool(result.hits)
        return hits

    print(f"before            search finds {found()} of {len(sample)} sampled services")
    snapshot = _snapshot(group_id, principal)

    def found_in_snapshot() -> int:
        """How many sampled services the snapshot finds a fact of (and the p50 ms)."""
        from retrieval.usecases import snapshot_search

        hits, ms = 0, []
        with rls.tenant_context(principal):
            snapshot.refresh_from_db()
            for service in sample:
                with timed() as one:
                    result = snapshot_search(
                        snapshot=snapshot, query=Query(text=f"{service} runs on", k=5)
                    )
                ms.append(one[0] * 1000)
                hits += bool(result.hits)
        print(f"snapshot search   p50 {statistics.median(ms):.1f} ms, p95 "
              f"{sorted(ms)[int(0.95 * (len(ms) - 1))]:.1f} ms ({len(ms)} queries; the seal "
              "re-verified when the snapshot's generation has moved)")  # fmt: skip
        return hits

    with timed() as took:
        found()
    print(f"live search       {took[0] / len(sample) * 1000:.1f} ms a query on average")
    print(f"snapshot          finds {found_in_snapshot()} of {len(sample)}")
    with timed() as took, rls.tenant_context(principal):
        done = source_retract(actor=principal, source_id=source_id, reason="bench")
    print(
        f"retraction        {len(done.retracted)} claims withdrawn in {took[0]:.2f} s "
        f"(one transaction, outbox jobs included)"
    )
    with rls.tenant_context(principal):
        from curation.models import OutboxJob

        jobs = OutboxJob.objects.filter(status="pending").count()
    with timed() as took:
        drain_outbox()
    print(
        f"projection        {jobs} outbox jobs (index and graph) drained in {took[0]:.1f} s "
        f"({jobs / took[0]:.0f} jobs/s)"
    )
    edges = graph_projection().dump(group_id).edges
    print(f"after             graph edges of the group: {len(edges)}")
    print(f"after             search finds {found()} of {len(sample)} now, "
          f"{found(before)} as of before the retraction")  # fmt: skip
    print(f"after             the snapshot still finds {found_in_snapshot()} of {len(sample)}")

    # Then the same source erased: Postgres in one transaction, the cleanup after it.
    from retrieval.usecases import erase, erasure_cleanup_at_once, erasure_verify

    with timed() as took, rls.tenant_context(principal):
        tombstone = erase(
            actor=principal, kind="source", target_id=source_id, reason="bench", confirm=True
        )
    print(f"erasure           {tombstone.counts} in {took[0]:.2f} s (Postgres, one transaction)")
    with timed() as took:
        erasure_cleanup_at_once(tombstone.pk, group_id)
    print(f"cleanup           graph, raw bytes and caches in {took[0]:.2f} s")
    with rls.tenant_context(principal):
        snapshot.refresh_from_db()
    print(f"snapshot          {snapshot.status}, {snapshot.counts}; finds "
          f"{found_in_snapshot()} of {len(sample)}; notes: {snapshot.notes.strip()}")  # fmt: skip
    with timed() as took, rls.tenant_context(principal):
        residue = erasure_verify(tombstone)
    print(f"residual scan     {'nothing found' if residue.clean else residue.found} "
          f"in {took[0]:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
