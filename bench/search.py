"""Search quality on SciFact: full text, vector, fused (stage 1) and blended (stage 2).

    .venv/bin/python -m bench.search [--embedder minilm|hashing] [--queries 809]
                                     [--reuse [--reindex]] [--depth 50] [--postings N]

The 5,183 abstracts are ingested through the real pipeline (connector, episodes,
extraction, tier-1 publication, outbox, index); then every training query is run
and its hits are mapped back to the documents they cite. `--reuse` keeps the bench
database of an earlier run (no ingestion); `--reindex` then rebuilds the search index
from its claims (after a change to the index; unchanged texts are embedding-cache hits).
A query's judged documents (qrels) are the relevant ones. Prints nDCG@10, recall@10
and MRR per method side by side; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.common import ROOT, bench_workspace, drain_outbox, markdown_source, setup_django

EVAL = ROOT.parent / "shared" / "eval" / "scifact"


def ndcg_at_10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / ideal if ideal else 0.0


def recall_at_10(ranked: list[str], relevant: set[str]) -> float:
    return len(set(ranked[:10]) & relevant) / len(relevant) if relevant else 0.0


def mrr(ranked: list[str], relevant: set[str]) -> float:
    return next((1 / (i + 1) for i, doc in enumerate(ranked) if doc in relevant), 0.0)


def documents(claim_ids: list[int], doc_of: dict[int, str]) -> list[str]:
    """Hits -> the distinct documents they cite, in rank order."""
    seen: list[str] = []
    for claim_id in claim_ids:
        doc = doc_of.get(claim_id)
        if doc is not None and doc not in seen:
            seen.append(doc)
    return seen


def ingest_scifact() -> tuple[str, float]:
    """Ingest the corpus as one tier-1 Markdown source and index it; returns the group id."""
    from curation.usecases import ingest_now

    folder = Path(tempfile.gettempdir()) / "vera-scifact"
    folder.mkdir(exist_ok=True)
    with (EVAL / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            (folder / f"{row['_id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n")
    workspace, principal = bench_workspace("SciFact Org", "SciFact")
    source_id = markdown_source(principal, workspace.group_id, folder, name="scifact")
    started = time.perf_counter()
    report = ingest_now(source_id=source_id, group_id=workspace.group_id)
    drain_outbox()
    return workspace.group_id, time.perf_counter() - started if report else 0.0


def reuse_scifact(*, reindex: bool) -> tuple[str, float]:
    """The group of an earlier run's corpus, re-indexed when asked; (group id, seconds)."""
    from retrieval.usecases import index_rebuild
    from tenants import rls
    from tenants.models import Scope
    from tenants.selectors import principal_system

    group_id = Scope.objects.get(name="SciFact").group_id
    started = time.perf_counter()
    if reindex:
        with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
            count = index_rebuild()
        print(f"re-indexed       {count} claims")
    return group_id, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--queries", type=int, default=809)
    parser.add_argument("--depth", type=int, default=50, help="stage-1 depth of each list")
    parser.add_argument(
        "--postings", type=int, default=0, help="postings read per query term (0: the service's)"
    )
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's database")
    parser.add_argument("--reindex", action="store_true", help="with --reuse: rebuild the index")
    args = parser.parse_args()
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_scifact")
    setup_django(fresh=not args.reuse)
    from django.utils import timezone

    from curation.models import Evidence
    from retrieval.domain import ranking
    from retrieval.domain.query import Query
    from retrieval.services.search import search, stage1
    from retrieval.services.search import sql as search_service
    from retrieval.usecases import configured_embedder
    from tenants import rls
    from tenants.selectors import principal_system

    if args.postings:
        search_service.POSTINGS_PER_TERM = args.postings
    if args.reuse:
        group_id, ingest_s = reuse_scifact(reindex=args.reindex)
        print(f"reused corpus    {ingest_s:.0f} s")
    else:
        group_id, ingest_s = ingest_scifact()
        print(f"ingest + index   {ingest_s:.0f} s")
    qrels: dict[str, set[str]] = defaultdict(set)
    with (EVAL / "qrels" / "train.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]].add(row["corpus-id"])
    queries = [json.loads(line) for line in (EVAL / "queries.jsonl").open(encoding="utf-8")]
    queries = [q for q in queries if q["_id"] in qrels][: args.queries]
    embedder = configured_embedder()
    principal = principal_system("bench", group_ids=[group_id])
    scores: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    with rls.tenant_context(principal):
        doc_of = {
            claim_id: external_id.removesuffix(".md")
            for claim_id, external_id in Evidence.objects.values_list(
                "claim_id", "episode__external_id"
            )
        }
        started = time.perf_counter()
        for q in queries:
            query = Query(text=q["text"], k=10)
            rankings = stage1(query, embedder=embedder, depth=args.depth)
            fused = ranking.rrf(list(rankings.values()), k=1)
            fused_order = sorted(fused, key=lambda c: (-fused[c], c))
            blended = search(
                query=Query(text=q["text"], k=50), embedder=embedder,
                now=timezone.now(),
            )  # fmt: skip
            methods = {
                "full text": rankings["fulltext"],
                "vector": rankings["vector"],
                "fused (stage 1)": fused_order,
                "blended (stage 2)": [hit.claim_id for hit in blended.hits],
            }
            relevant = qrels[q["_id"]]
            for name, claim_ids in methods.items():
                docs = documents(claim_ids, doc_of)
                scores[name].append(
                    (ndcg_at_10(docs, relevant), recall_at_10(docs, relevant), mrr(docs, relevant))
                )
        elapsed = time.perf_counter() - started
    print(
        f"queries          {len(queries)} in {elapsed:.0f} s, embedder {embedder.model}, "
        f"{search_service.POSTINGS_PER_TERM} postings per term"
    )
    print(f"{'method':<20} {'nDCG@10':>8} {'R@10':>8} {'MRR':>8}")
    for name, rows in scores.items():
        n = len(rows)
        ndcg, recall, rr = (sum(row[i] for row in rows) / n for i in range(3))
        print(f"{name:<20} {ndcg:8.4f} {recall:8.4f} {rr:8.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
