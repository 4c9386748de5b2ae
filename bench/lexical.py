"""VERA's lexical list (BM25 in SQL) against an off-the-shelf BM25: SciFact and XQuAD vi.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.lexical [--datasets scifact,xquad] [--k1 K] [--b B]
                                          [--postings N[,N...]] [--reuse [--reindex]]
                                          [--queries N]

Each corpus is a workspace of the bench database (`vera_bench_lexical`), ingested
through the real pipeline (Markdown connector, episodes, extraction, tier-1
publication, outbox, index) with the hashing embedder: only the full-text list is
read. Ingesting SciFact takes the better part of an hour; `--reuse` keeps the
workspaces of an earlier run, and `--reindex` then rebuilds their index, as needed
after a change to k1 or b (the postings' impact order is computed at index time).

Per dataset it prints nDCG@10 (hits mapped to the documents they cite, as
bench/search.py) of:

- reference: exact BM25 (Lucene idf, lower-cased `\\w+` tokens: the scores bm25s
  gives) over whole documents ("title\\n\\ntext") at k1 0.9, b 0.4, the
  off-the-shelf setting the lexical half is compared with;
- passages: the same BM25 at VERA's k1/b over the very texts VERA indexes (one per
  claim: a document's passages, each with its title), ranked and mapped to documents
  as VERA's list is. It separates what VERA's SQL does (lexemes, postings cut) from
  what indexing passages rather than whole documents does;
- VERA@N: `sql.fulltext` as stage 1 calls it (depth 50) with N postings read per
  query term, and its mean milliseconds a query.

`--k1` and `--b` override the service's constants for the run (with `--reindex`, so
that the impact order matches); `--postings` lists the cuts to measure (0: every
posting; default: the service's). Asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from bench.common import ROOT, bench_workspace, drain_outbox, markdown_source, setup_django
from bench.search import documents, ndcg_at_10

EVAL = ROOT.parent / "shared" / "eval"
DATASETS = {"scifact": ("scifact", "qrels/train.tsv"), "xquad": ("xquad_vi_dev", "qrels/dev.tsv")}
REFERENCE_K1, REFERENCE_B = 0.9, 0.4  # bm25s as the issue ran it
DEPTH = 50  # stage 1's depth
WORDS = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The reference tokens: runs of word characters, lower-cased."""
    return WORDS.findall(text.lower())


class Okapi:
    """Exact BM25 over `words`, with the domain's formula (Lucene's idf): the reference."""

    def __init__(self, texts: Mapping[str, str], *, k1: float, b: float) -> None:
        from retrieval.domain import lexical

        self.lexical, self.k1, self.b = lexical, k1, b
        counts = {key: Counter(words(text)) for key, text in texts.items()}
        self.lengths = {key: sum(c.values()) for key, c in counts.items()}
        self.avg_len = sum(self.lengths.values()) / max(len(counts), 1)
        self.postings: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for key, c in counts.items():
            for term, tf in c.items():
                self.postings[term].append((key, tf))

    def rank(self, text: str, depth: int) -> list[str]:
        """The best `depth` keys for the query, best first (ties by key)."""
        scores: dict[str, float] = defaultdict(float)
        for term in set(words(text)):
            postings = self.postings.get(term, [])
            idf = self.lexical.idf(documents=len(self.lengths), df=len(postings))
            for key, tf in postings:
                scores[key] += idf * self.lexical.tf_part(
                    tf=tf, doc_len=self.lengths[key], avg_len=self.avg_len, k1=self.k1, b=self.b
                )
        return sorted(scores, key=lambda key: (-scores[key], key))[:depth]


def _corpus(folder: str) -> dict[str, tuple[str, str]]:
    """id -> (title, text)."""
    with (EVAL / folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return {row["_id"]: (row["title"], row["text"]) for row in rows}


def _queries(folder: str, qrels_file: str, limit: int) -> tuple[list[dict], dict[str, set[str]]]:
    qrels: dict[str, set[str]] = defaultdict(set)
    with (EVAL / folder / qrels_file).open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]].add(row["corpus-id"])
    with (EVAL / folder / "queries.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [q for q in rows if q["_id"] in qrels][:limit], qrels


def _workspace(dataset: str, *, reindex: bool) -> tuple[str, float]:
    """The workspace holding `dataset`, ingested when missing, else re-indexed if asked."""
    from curation.usecases import ingest_now
    from retrieval.usecases import index_rebuild
    from tenants import rls
    from tenants.models import Scope
    from tenants.selectors import principal_system

    name = f"lexical/{dataset}"
    started = time.perf_counter()
    existing = Scope.objects.filter(name=name).first()
    if existing is not None:
        if reindex:
            with rls.tenant_context(principal_system("bench", group_ids=[existing.group_id])):
                index_rebuild()
        return existing.group_id, time.perf_counter() - started
    folder = Path(tempfile.gettempdir()) / f"vera-bench-lexical-{dataset}"
    folder.mkdir(exist_ok=True)
    for doc_id, (title, text) in _corpus(DATASETS[dataset][0]).items():
        (folder / f"{doc_id}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    workspace, principal = bench_workspace("Lexical Org", name)
    source_id = markdown_source(principal, workspace.group_id, folder, name=name)
    ingest_now(source_id=source_id, group_id=workspace.group_id)
    drain_outbox()
    return workspace.group_id, time.perf_counter() - started


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _evaluate(
    dataset: str, group_id: str, *, k1: float, b: float, cuts: list[int | None], limit: int
) -> dict[str, float]:
    """nDCG@10 of the reference, the passages' BM25 and VERA's lexical list at each cut,
    and VERA's mean milliseconds per query at each cut."""
    from curation.models import Evidence
    from retrieval.domain.query import Query
    from retrieval.models import SearchDocument
    from retrieval.services.search import sql
    from tenants import rls
    from tenants.selectors import principal_system

    folder, qrels_file = DATASETS[dataset]
    queries, qrels = _queries(folder, qrels_file, limit)
    corpus = _corpus(folder)
    reference = Okapi(
        {key: f"{title}\n\n{text}" for key, (title, text) in corpus.items()},
        k1=REFERENCE_K1,
        b=REFERENCE_B,
    )
    rows: dict[str, list[float]] = defaultdict(list)
    with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
        doc_of = {
            claim_id: external_id.removesuffix(".md")
            for claim_id, external_id in Evidence.objects.values_list(
                "claim_id", "episode__external_id"
            )
        }
        texts = dict(
            SearchDocument.objects.filter(status="published").values_list("claim_id", "text")
        )
        passages = Okapi({str(claim_id): text for claim_id, text in texts.items()}, k1=k1, b=b)
        for q in queries:
            relevant = qrels[q["_id"]]
            rows["reference"].append(ndcg_at_10(reference.rank(q["text"], DEPTH), relevant))
            ranked = [int(key) for key in passages.rank(q["text"], DEPTH)]
            rows["passages"].append(ndcg_at_10(documents(ranked, doc_of), relevant))
            query = Query(text=q["text"], k=10)
            where, params = sql.where_clause(query)
            for cut in cuts:
                sql.POSTINGS_PER_TERM = cut
                started = time.perf_counter()
                lexical = sql.fulltext(query, where, params, DEPTH)
                rows[f"ms {cut}"].append((time.perf_counter() - started) * 1000)
                rows[f"vera {cut}"].append(ndcg_at_10(documents(lexical, doc_of), relevant))
    return {"queries": len(queries), "claims": len(texts)} | {
        name: _mean(values) for name, values in rows.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default="scifact,xquad")
    parser.add_argument("--k1", type=float, help="BM25 k1 (default: the service's)")
    parser.add_argument("--b", type=float, help="BM25 b (default: the service's)")
    parser.add_argument(
        "--postings",
        help="postings read per query term, comma-separated (0: all; default: the service's)",
    )
    parser.add_argument("--queries", type=int, default=10_000, help="at most this many per set")
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's workspaces")
    parser.add_argument("--reindex", action="store_true", help="with --reuse: rebuild the index")
    args = parser.parse_args()
    os.environ["VERA_EMBEDDER__PROVIDER"] = "hashing"
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_lexical")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_lexical")
    setup_django(fresh=not args.reuse)
    from retrieval.domain import lexical
    from retrieval.services.search import sql

    if args.k1 is not None:
        lexical.K1 = args.k1
    if args.b is not None:
        lexical.B = args.b
    cuts = (
        [int(n) or None for n in args.postings.split(",")]  # None: LIMIT NULL, every posting
        if args.postings
        else [sql.POSTINGS_PER_TERM]
    )
    print(f"k1 {lexical.K1}, b {lexical.B}", flush=True)
    results = {}
    for dataset in [name.strip() for name in args.datasets.split(",") if name.strip()]:
        group_id, seconds = _workspace(dataset, reindex=args.reindex)
        print(f"{dataset}: workspace ready in {seconds:.0f} s", flush=True)
        results[dataset] = _evaluate(
            dataset, group_id, k1=lexical.K1, b=lexical.B, cuts=cuts, limit=args.queries
        )
    labels = [f"VERA@{cut or 'all'}" for cut in cuts]
    print()
    print(f"nDCG@10 (VERA ms/query), k1 {lexical.K1}, b {lexical.B}")
    print(
        f"{'dataset':<10}{'queries':>8}{'claims':>8}"
        f"{f'reference {REFERENCE_K1}/{REFERENCE_B}':>18}{'passages':>10}"
        + "".join(f"{label:>18}" for label in labels)
    )
    for dataset, got in results.items():
        print(
            f"{dataset:<10}{got['queries']:>8.0f}{got['claims']:>8.0f}"
            f"{got['reference']:>18.4f}{got['passages']:>10.4f}"
            + "".join(f"{got[f'vera {cut}']:>10.4f} ({got[f'ms {cut}']:>4.1f})" for cut in cuts)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
