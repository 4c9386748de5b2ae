"""The local embedders side by side: quality in two languages, query latency, passage speed.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.embedders [--embedders minilm,e5] [--datasets scifact,xquad]
                                            [--companions minilm+e5] [--reuse] [--queries N]
                                            [--speed-texts 40]

For each embedder and dataset a workspace of the bench database (`vera_bench_embedders`)
holds the corpus, ingested through the real pipeline (Markdown connector, episodes,
extraction, tier-1 publication, outbox, index) with that embedder; `--reuse` keeps the
workspaces an earlier run built. Every query then runs stage 1 exactly as search does
(`stage1_lists` with the query-role embedder, then `fuse`) and its hits are mapped to
the documents they cite:

- SciFact train (809 English claims over 5,183 abstracts): full text, dense, fused;
- XQuAD vi dev: Vietnamese questions over the Vietnamese paragraphs (full text, dense,
  fused) and the parallel English questions over the same paragraphs (dense, fused).

"search" is the whole read path as the API runs it (`pipeline.search`: understanding,
a time stated in the question, stage 1, the blend); "fused" is what stage 1 hands it
(weighted RRF with the configured base weights and
the weak-list rule of `retrieval.domain.fusion`); "rrf" is plain RRF of both lists.

`--companions A+B`: the workspace of A is also searched with B as its companion model
(`embedding_companion`, then `index_catch_up` gives every document B's vector, as the
beat task does), and its queries run through the offered models' catalog, so stage 1
has three lists (full text, A's vectors, B's). B's vectors of the same texts are first
copied into the embedding cache from B's own workspace when it exists (B is
deterministic, and re-embedding SciFact with e5 takes well over an hour here); the
catch-up then reads them through the real cache. Column "A+B".
Speed: the p50 of embedding one uncached query, and passage throughput on SciFact
abstracts (the adapter alone, no cache). Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import ROOT, bench_workspace, drain_outbox, markdown_source, setup_django
from bench.search import documents, ndcg_at_10

EVAL = ROOT.parent / "shared" / "eval"
DATASETS = {
    # name: (folder, corpus file, [(label, queries file, qrels file, lists)])
    "scifact": (
        "scifact", "corpus.jsonl",
        [("SciFact en>en", "queries.jsonl", "qrels/train.tsv", ("fulltext", "vector"))],
    ),
    "xquad": (
        "xquad_vi_dev", "corpus.jsonl",
        [
            ("XQuAD vi>vi", "queries.jsonl", "qrels/dev.tsv", ("fulltext", "vector")),
            ("XQuAD en>vi", "queries_en.jsonl", "qrels/dev.tsv", ("vector",)),
        ],
    ),
}  # fmt: skip


def _workspace_name(dataset: str, embedder: str) -> str:
    return f"{dataset}/{embedder}"


def _ingest(dataset: str, embedder: str) -> tuple[str, float]:
    """The workspace holding `dataset` indexed by `embedder`, built when missing."""
    from django.test import override_settings

    from curation.usecases import ingest_now
    from tenants.models import Scope

    name = _workspace_name(dataset, embedder)
    existing = Scope.objects.filter(name=name).first()
    if existing is not None:
        return existing.group_id, 0.0
    folder_name, corpus_file, _ = DATASETS[dataset]
    folder = Path(tempfile.gettempdir()) / f"vera-bench-{folder_name}"
    folder.mkdir(exist_ok=True)
    with (EVAL / folder_name / corpus_file).open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            (folder / f"{row['_id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n")
    workspace, principal = bench_workspace("Embedders Org", name)
    started = time.perf_counter()
    with override_settings(VERA_EMBEDDER__PROVIDER=embedder):
        source_id = markdown_source(principal, workspace.group_id, folder, name=name)
        ingest_now(source_id=source_id, group_id=workspace.group_id)
        drain_outbox()
    return workspace.group_id, time.perf_counter() - started


def _qrels(path: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    with path.open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            out[row["query-id"]].add(row["corpus-id"])
    return out


def _companion(dataset: str, primary: str, companion: str) -> str:
    """The workspace of `dataset` on `primary`, searched with `companion` too (set up here)."""
    from django.db.models import F

    from retrieval.models import SearchDocument
    from retrieval.usecases import embedding_companion, index_catch_up, offered_models
    from tenants import rls
    from tenants.models import Scope
    from tenants.selectors import principal_system

    group_id, _ = _ingest(dataset, primary)
    catalog = offered_models()
    cached: Any = catalog.passage(companion)  # the CachedEmbedder: its keys and its Redis
    donor = Scope.objects.filter(name=_workspace_name(dataset, companion)).first()
    if donor is not None:  # prime the cache with the companion's vectors of the same texts
        with rls.tenant_context(principal_system("bench", group_ids=[donor.group_id])):
            rows = SearchDocument.objects.filter(embedding_model=cached.model).values_list(
                "text", F("embedding")
            )
            codec = struct.Struct(f"<{cached.dimension}f")
            with cached._redis.pipeline(transaction=False) as pipe:
                for text, vector in rows:
                    pipe.set(cached.key(text), codec.pack(*vector), ex=7 * 24 * 3600)
                pipe.execute()
    principal = principal_system("bench", group_ids=[group_id])
    started = time.perf_counter()
    with rls.tenant_context(principal):
        embedding_companion(
            actor=principal, group_id=group_id, provider=companion, reason="bench.embedders"
        )
        while index_catch_up(group_id=group_id):
            pass
    print(
        f"{dataset}/{primary}+{companion}: second vectors in {time.perf_counter() - started:.0f} s"
    )
    return group_id


def _evaluate(
    group_id: str, folder: str, queries_file: str, qrels_file: str, limit: int,
    embedder: object = None,
) -> dict[str, float]:  # fmt: skip
    """nDCG@10 per list and fused, over the dataset's judged queries, as search ranks
    (with `embedder`, e.g. the catalog of offered models; else the configured one)."""
    from django.utils import timezone

    from curation.models import Evidence
    from retrieval.domain import ranking
    from retrieval.domain.query import Query
    from retrieval.services.search import fuse, pipeline, stage1_lists
    from tenants import rls
    from tenants.selectors import principal_system
    from vera import wiring

    qrels = _qrels(EVAL / folder / qrels_file)
    rows = [json.loads(line) for line in (EVAL / folder / queries_file).open(encoding="utf-8")]
    queries = [q for q in rows if q["_id"] in qrels][:limit]
    embedder = embedder or wiring.query_embedder()
    scores: dict[str, list[float]] = defaultdict(list)
    weakened = 0
    with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
        doc_of = {
            claim_id: external_id.removesuffix(".md")
            for claim_id, external_id in Evidence.objects.values_list(
                "claim_id", "episode__external_id"
            )
        }
        for q in queries:
            query = Query(text=q["text"], k=10)
            lists = stage1_lists(query, embedder=embedder)
            fused, chosen = fuse(query, lists, embedder=embedder, base=wiring.fusion_weights())
            weakened += chosen.reason is not None
            plain = ranking.rrf(list(lists.rankings.values()), k=ranking.RRF_K)
            methods = {
                **lists.rankings,
                "rrf": sorted(plain, key=lambda c: (-plain[c], c)),
                "fused": sorted(fused, key=lambda c: (-fused[c], c)),
                # The whole read path as the API runs it: understanding (a time in the
                # question, the relation asked), stage 1, the blend.
                "search": [hit.claim_id for hit in pipeline.search(
                    query=query, now=timezone.now(), record=False, embedder=embedder,
                    reranking=wiring.reranking(), fusion=wiring.fusion_weights(),
                ).hits],
            }  # fmt: skip
            for name, ids in methods.items():
                scores[name].append(ndcg_at_10(documents(ids, doc_of), qrels[q["_id"]]))
    out = {name: sum(values) / len(values) for name, values in scores.items()}
    out["queries"] = len(queries)
    out["weakened"] = weakened
    return out


def _speed(provider: str, texts: int) -> tuple[float, float]:
    """(query-embedding p50 in ms, abstracts per second), the adapter alone, no cache."""
    from django.test import override_settings

    from vera import wiring

    with override_settings(VERA_EMBEDDER__PROVIDER=provider):
        passage = getattr(wiring.embedder(), "inner", wiring.embedder())
        query = getattr(wiring.query_embedder(), "inner", wiring.query_embedder())
    passage.embed(["warm-up"])
    questions = [
        json.loads(line)["text"]
        for line in (EVAL / "scifact" / "queries.jsonl").open(encoding="utf-8")
    ][:50]
    latencies = []
    for text in questions:
        started = time.perf_counter()
        query.embed([text])
        latencies.append((time.perf_counter() - started) * 1000)
    abstracts = []
    with (EVAL / "scifact" / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            abstracts.append(f"{row['title']}\n\n{row['text']}")
            if len(abstracts) == texts:
                break
    started = time.perf_counter()
    passage.embed(abstracts)
    return statistics.median(latencies), len(abstracts) / (time.perf_counter() - started)


def _companion_rows(
    pair: str, datasets: list[str], limit: int, table: dict[str, dict[str, str]]
) -> None:
    """The quality rows of workspaces on A searched with B as companion (column "A+B")."""
    from django.test import override_settings

    primary, companion = pair.split("+")
    for dataset in datasets:
        with override_settings(VERA_EMBEDDER__PROVIDER=primary, VERA_EMBEDDER__CHOICES=[companion]):
            from vera import wiring

            group_id = _companion(dataset, primary, companion)
            folder, _, query_sets = DATASETS[dataset]
            for label, queries_file, qrels_file, lists in query_sets:
                got = _evaluate(
                    group_id, folder, queries_file, qrels_file, limit,
                    embedder=wiring.embedder_catalog(),
                )  # fmt: skip
                for name in (*lists, "rrf", "fused", "search"):
                    if name in got:
                        table[f"{label} {name}"][pair] = f"{got[name]:.4f}"
                for name in [name for name in got if name.startswith("companion@")]:
                    table[f"{label} second model's vector"][pair] = f"{got[name]:.4f}"
                table[f"{label} weakened/queries"][pair] = (
                    f"{got['weakened']:.0f}/{got['queries']:.0f}"
                )
                print(f"  {label} ({pair}): {got}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedders", default="minilm,e5")
    parser.add_argument("--datasets", default="scifact,xquad")
    parser.add_argument("--queries", type=int, default=10_000, help="at most this many per set")
    parser.add_argument("--speed-texts", type=int, default=40, help="abstracts for docs/s")
    parser.add_argument("--companions", default="minilm+e5", help="A+B pairs, comma-separated")
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's workspaces")
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_embedders")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_embedders")
    setup_django(fresh=not args.reuse)
    from django.test import override_settings

    embedders = [name.strip() for name in args.embedders.split(",") if name.strip()]
    datasets = [name.strip() for name in args.datasets.split(",") if name.strip()]
    table: dict[str, dict[str, str]] = defaultdict(dict)
    for embedder in embedders:
        for dataset in datasets:
            group_id, seconds = _ingest(dataset, embedder)
            print(f"{dataset}/{embedder}: indexed in {seconds:.0f} s", flush=True)
            folder, _, query_sets = DATASETS[dataset]
            with override_settings(VERA_EMBEDDER__PROVIDER=embedder):
                for label, queries_file, qrels_file, lists in query_sets:
                    got = _evaluate(group_id, folder, queries_file, qrels_file, args.queries)
                    for name in (*lists, "rrf", "fused", "search"):
                        if name in got:
                            table[f"{label} {name}"][embedder] = f"{got[name]:.4f}"
                    table[f"{label} weakened/queries"][embedder] = (
                        f"{got['weakened']:.0f}/{got['queries']:.0f}"
                    )
                    print(f"  {label}: {got}", flush=True)
        p50, rate = _speed(embedder, args.speed_texts)
        table["query embedding p50 (ms)"][embedder] = f"{p50:.1f}"
        table["passages/s (abstracts)"][embedder] = f"{rate:.2f}"
    for pair in [name.strip() for name in args.companions.split(",") if name.strip()]:
        _companion_rows(pair, datasets, args.queries, table)
        embedders.append(pair)
    print()
    print(f"{'nDCG@10 / speed':<34}" + "".join(f"{name:>12}" for name in embedders))
    for row, values in table.items():
        print(f"{row:<34}" + "".join(f"{values.get(name, '-'):>12}" for name in embedders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
