"""How to fuse stage 1's two lists: weighted RRF and its alternatives on the same lists.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.fusion [--workspaces scifact/minilm,xquad/e5] [--queries N]

Reads the workspaces `bench.embedders` built (database `vera_bench_embedders`; run it
first). For every judged query of each workspace's query sets, stage 1 runs once as
search runs it (full text and the workspace's model's vectors, each its top `--depth`
with scores); then every fusion below ranks those same lists, and the documents their
claims cite are scored by nDCG@10:

- weighted RRF with k = 1 (the spec's shape) and the vector list's weight from 0.5 to 2;
- RRF with larger k (not the spec's; shown to see what k = 1 costs);
- RRF over documents (each list reduced to its documents' best ranks first);
- a convex mix of min-max-normalised scores, lexical share 0.3-0.7;
- "search": what search fuses by (`fuse`, with the configured weights and weak-list rule).

The defaults of `VERA_SEARCH__FUSION_WEIGHTS` come from this table. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from bench.common import setup_django
from bench.embedders import DATASETS, EVAL, _qrels
from bench.search import documents, ndcg_at_10

Scored = list[tuple[int, float]]


def rrf(lists: Sequence[Sequence[object]], weights: Sequence[float], k: int = 1) -> list[object]:
    scores: dict[object, float] = defaultdict(float)
    for items, weight in zip(lists, weights, strict=True):
        for rank, item in enumerate(items, 1):
            scores[item] += weight / (k + rank)
    return sorted(scores, key=lambda item: (-scores[item], str(item)))


def min_max(scored: Scored) -> dict[int, float]:
    if not scored:
        return {}
    low, high = min(s for _, s in scored), max(s for _, s in scored)
    return {c: (s - low) / (high - low) if high > low else 1.0 for c, s in scored}


def variants(doc_of: Mapping[int, str]) -> dict[str, Callable[[Scored, Scored], list[str]]]:
    """Each fusion, from (lexical, vector) scored claim lists to ranked documents."""

    def docs(ids: Sequence[object]) -> list[str]:
        return documents([int(str(i)) for i in ids], dict(doc_of))

    def ids(scored: Scored) -> list[int]:
        return [claim for claim, _ in scored]

    def convex(share: float) -> Callable[[Scored, Scored], list[str]]:
        def fuse(lexical: Scored, vector: Scored) -> list[str]:
            lex, vec = min_max(lexical), min_max(vector)
            mixed = {c: share * lex.get(c, 0) + (1 - share) * vec.get(c, 0) for c in {*lex, *vec}}
            return docs(sorted(mixed, key=lambda c: (-mixed[c], c)))

        return fuse

    out: dict[str, Callable[[Scored, Scored], list[str]]] = {
        "full text": lambda lexical, vector: docs(ids(lexical)),
        "vector": lambda lexical, vector: docs(ids(vector)),
    }
    for weight in (0.5, 0.8, 1.0, 1.2, 1.5, 2.0):
        out[f"rrf k=1 vector x{weight}"] = lambda lexical, vector, w=weight: docs(
            rrf([ids(lexical), ids(vector)], [1.0, w])
        )
    for k in (5, 60):
        out[f"rrf k={k}"] = lambda lexical, vector, k=k: docs(
            rrf([ids(lexical), ids(vector)], [1.0, 1.0], k)
        )
    out["rrf k=1 over documents"] = lambda lexical, vector: [
        str(d) for d in rrf([docs(ids(lexical)), docs(ids(vector))], [1.0, 1.0])
    ]
    for share in (0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"convex lexical {share}"] = convex(share)
    return out


def evaluate(workspace: str, depth: int, limit: int) -> dict[str, dict[str, float]]:
    """{query set label: {variant: mean nDCG@10}} for one bench.embedders workspace."""
    from curation.models import Evidence
    from retrieval.domain.query import Query
    from retrieval.services.search import fuse, sql, stage1_lists
    from tenants import rls
    from tenants.models import Scope
    from tenants.selectors import principal_system
    from vera import wiring

    dataset, _, provider = workspace.partition("/")
    folder, _, query_sets = DATASETS[dataset]
    group_id = Scope.objects.get(name=workspace).group_id
    embedder = wiring.provider_embedder(provider, "query")
    out: dict[str, dict[str, float]] = {}
    with rls.tenant_context(principal_system("bench", group_ids=[group_id])):
        doc_of = {
            claim: external.removesuffix(".md")
            for claim, external in Evidence.objects.values_list("claim_id", "episode__external_id")
        }
        fusions = variants(doc_of)
        for label, queries_file, qrels_file, _ in query_sets:
            qrels = _qrels(EVAL / folder / qrels_file)
            rows = [json.loads(line) for line in (EVAL / folder / queries_file).open()]
            queries = [q for q in rows if q["_id"] in qrels][:limit]
            scores: dict[str, list[float]] = defaultdict(list)
            for q in queries:
                query = Query(text=q["text"], k=10)
                where, params = sql.where_clause(query)
                lexical = sql.lexical_scores(query, where, params, depth)
                (vector_of_query,) = embedder.embed([q["text"]])
                vector = sql.vector(vector_of_query, where, params, depth, model=embedder.model)
                for name, fusion in fusions.items():
                    scores[name].append(ndcg_at_10(fusion(lexical, vector), qrels[q["_id"]]))
                lists = stage1_lists(query, embedder=embedder, depth=depth)
                fused, _ = fuse(query, lists, embedder=embedder, base=wiring.fusion_weights())
                ranked = documents(sorted(fused, key=lambda c: (-fused[c], c)), doc_of)
                scores["search"].append(ndcg_at_10(ranked, qrels[q["_id"]]))
            out[f"{label} ({len(queries)})"] = {n: sum(v) / len(v) for n, v in scores.items()}
            print(f"{workspace} {label}: {len(queries)} queries", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspaces", default="scifact/minilm,xquad/minilm,xquad/e5")
    parser.add_argument("--queries", type=int, default=10_000, help="at most this many per set")
    parser.add_argument("--depth", type=int, default=50, help="stage-1 depth of each list")
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_embedders")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_embedders")
    setup_django(fresh=False)
    columns: dict[str, dict[str, float]] = {}
    for workspace in filter(None, (w.strip() for w in args.workspaces.split(","))):
        for label, row in evaluate(workspace, args.depth, args.queries).items():
            columns[f"{workspace} {label}"] = row
    names = list(next(iter(columns.values()))) if columns else []
    print()
    print("nDCG@10 by fusion")
    for index, column in enumerate(columns):
        print(f"  [{chr(65 + index)}] {column}")
    print(f"{'fusion':<26}" + "".join(f"{chr(65 + i):>9}" for i in range(len(columns))))
    for name in names:
        print(f"{name:<26}" + "".join(f"{row[name]:9.4f}" for row in columns.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
