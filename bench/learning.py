"""The learning loop on SciFact: vote on half the training claims, calibrate, test on the rest.

    .venv/bin/python -m bench.learning [--embedder minilm|hashing] [--reuse] [--keep]
                                       [--min-samples 30] [--split grouped|alternate]

The corpus is bench/search.py's: the 5,183 abstracts ingested through the real pipeline
into VERA_BENCH__DB (default `vera_bench_scifact`, shared with bench.search), or with
`--reuse` the corpus an earlier run left there (the embedder must be the one it was
indexed with); without `--reuse` the database is dropped and the corpus ingested again,
as bench.search does.

The 809 judged training claims are split in two halves (`split_queries`; by default
claims that share a judged abstract stay together, so the held-out half is not answered
by abstracts the learning half voted on). For each learning claim the real search runs
and is logged (record=True) as a system principal, and each of its top 10 hits gets a
vote through `feedback_record`: helpful when the hit cites an abstract judged relevant
to the claim, unhelpful otherwise. `calibration_run` turns the votes into candidate
weights. The held-out claims are imported as the golden set (`golden_import_beir`) and
evaluated with `evaluation_run`: (a) the default weights (v0, no active set), (b) the
calibrated candidate, (c) stage 1 alone, a set with relevance 1.0 and every other weight
0, and (d, e) relevance with each of the default's two other weights that can differ
between SciFact hits. Relevance is the batch min-max of the fused RRF score and the
ranker breaks ties by claim id (retrieval/domain/ranking.py `rank`), so (c) is the fused
order; the bench also ranks by the fused score directly and scores that the same way,
as a check.

Scores are the evaluator's: over the top 10 hits, a second hit citing the same abstract
gains nothing (bench.search instead cuts at 10 distinct abstracts; its figures differ).
Everything after the ingest happens in one transaction that is rolled back at the end
(`--keep` commits it), so the corpus stays as bench.search left it and every run starts
from zero votes. Prints the figures and timings; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import defaultdict
from typing import Any

from bench.common import setup_django
from bench.search import EVAL, ingest_scifact, reuse_scifact

METRICS = ("ndcg_at_10", "hit_at_10", "mrr", "hit_at_1")


def _judged() -> tuple[list[dict[str, str]], dict[str, set[str]]]:
    """The judged training claims in id order, and each one's relevant abstracts."""
    qrels: dict[str, set[str]] = defaultdict(set)
    with (EVAL / "qrels" / "train.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels[row["query-id"]].add(row["corpus-id"])
    with (EVAL / "queries.jsonl").open(encoding="utf-8") as handle:
        queries = [json.loads(line) for line in handle if line.strip()]
    judged = sorted((q for q in queries if q["_id"] in qrels), key=lambda q: int(q["_id"]))
    return judged, qrels


def _families(queries: list[dict[str, str]], qrels: dict[str, set[str]]) -> list[list[str]]:
    """Claims linked by a shared judged abstract (transitively), each family in id order."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for q in queries:
        for doc in qrels[q["_id"]]:
            parent[root(f"q{q['_id']}")] = root(f"d{doc}")
    families: dict[str, list[str]] = defaultdict(list)
    for q in queries:
        families[root(f"q{q['_id']}")].append(q["_id"])
    return sorted(families.values(), key=lambda ids: int(ids[0]))


def split_queries(
    mode: str,
) -> tuple[list[dict[str, str]], list[dict[str, str]], dict[str, set[str]]]:
    """(learning claims, held-out claims, judged abstracts per claim).

    `grouped`: SciFact writes several claims about one abstract (a finding and its
    negation...); claims that share a judged abstract go to the same half, family by
    family in id order into the smaller half, so no held-out claim is answered by an
    abstract the learning half voted on. `alternate`: every other claim in id order,
    which puts most such pairs on both sides (the votes then carry over).
    """
    judged, qrels = _judged()
    if mode == "alternate":
        return judged[0::2], judged[1::2], qrels
    by_id = {q["_id"]: q for q in judged}
    halves: tuple[list[dict[str, str]], list[dict[str, str]]] = ([], [])
    for family in _families(judged, qrels):
        smaller = halves[0] if len(halves[0]) <= len(halves[1]) else halves[1]
        smaller.extend(by_id[qid] for qid in family)
    return halves[0], halves[1], qrels


def shared(
    learning: list[dict[str, str]], held_out: list[dict[str, str]], qrels: dict[str, set[str]]
) -> int:
    """How many held-out claims share a judged abstract with a learning claim."""
    voted = {doc for q in learning for doc in qrels[q["_id"]]}
    return sum(1 for q in held_out if qrels[q["_id"]] & voted)


def vote(
    queries: list[dict[str, str]], qrels: dict[str, set[str]], doc_of: dict[int, tuple[str, ...]]
) -> tuple[int, int]:
    """Search each claim (logged) and vote on its top 10; (helpful, unhelpful) votes given."""
    from django.utils import timezone

    from retrieval.domain.query import Query
    from retrieval.usecases import feedback_record, live_search

    search = live_search()
    helpful = unhelpful = 0
    for q in queries:
        result = search(query=Query(text=q["text"], k=10), now=timezone.now(), record=True)
        relevant = {f"{doc}.md" for doc in qrels[q["_id"]]}
        for hit in result.hits:
            assert hit.hit_id is not None  # noqa: S101 - a recorded search logs every hit
            good = bool(relevant & set(doc_of.get(hit.claim_id, ())))
            feedback_record(hit_id=hit.hit_id, helpful=good, user_id=None)
            helpful += good
            unhelpful += not good
    return helpful, unhelpful


def stage1_direct(group_id: str, doc_of: dict[int, tuple[str, ...]]) -> dict[str, float]:
    """The golden set scored on the fused RRF order itself (stage 1, no blend): the check."""
    from retrieval.domain import ranking
    from retrieval.domain.evaluation import Expectation, ScoredHit, mean_scores, score
    from retrieval.domain.query import Query
    from retrieval.models import GoldenQuery
    from retrieval.services.search import stage1
    from retrieval.usecases import configured_embedder

    embedder = configured_embedder()
    scores = []
    for golden in GoldenQuery.objects.filter(group_id=group_id, enabled=True).order_by("key"):
        rankings = stage1(Query(text=golden.text, k=10), embedder=embedder)
        fused = ranking.rrf(list(rankings.values()))
        top = sorted(fused, key=lambda claim_id: (-fused[claim_id], claim_id))[:10]
        hits = [ScoredHit(claim_id=c, fact="", episodes=doc_of.get(c, ())) for c in top]
        scores.append(score(hits, Expectation(episodes=frozenset(golden.expected_episodes))))
    return mean_scores(scores)


def row(name: str, values: dict[str, float], seconds: float, extra: str = "") -> str:
    figures = " ".join(f"{values[metric]:8.4f}" for metric in METRICS)
    return f"{name:<42} {figures} {seconds:6.1f} s  {extra}"


def documents_by_claim() -> dict[int, tuple[str, ...]]:
    """Claim id -> the external ids (`<abstract id>.md`) of the episodes it cites."""
    from curation.models import Evidence

    doc_of: dict[int, tuple[str, ...]] = defaultdict(tuple)
    for claim_id, external_id in Evidence.objects.values_list("claim_id", "episode__external_id"):
        doc_of[claim_id] += (external_id,)
    return doc_of


def calibrate(principal: Any, group_id: str, min_samples: int, rate: float = 1.0) -> Any:
    """Run the calibration; print its outcome and each signal's weight and separation."""
    from django.utils import timezone

    from retrieval.domain.ranking import DEFAULT_WEIGHTS, SIGNALS
    from retrieval.usecases import calibration_run, weights_of

    started = time.perf_counter()
    run = calibration_run(
        actor=principal, group_id=group_id, now=timezone.now(), trigger="bench",
        min_samples_per_class=min_samples, learning_rate=rate,
    )  # fmt: skip
    print(
        f"calibration      {run.status}: {run.message} Samples: {run.helpful} helpful, "
        f"{run.unhelpful} unhelpful, {min_samples} needed per class "
        f"({time.perf_counter() - started:.1f} s)"
    )
    calibrated = weights_of(run.candidate).as_dict() if run.candidate else {}
    print(f"{'signal':<14} {'default':>8} {'calibrated':>11} {'separation':>12}")
    for name in SIGNALS:
        separation = run.separations.get(name)
        shown = f"{separation:+12.3g}" if separation is not None else f"{'-':>12}"
        weight = f"{calibrated[name]:11.4f}" if calibrated else f"{'-':>11}"
        print(f"{name:<14} {DEFAULT_WEIGHTS.as_dict()[name]:8.2f} {weight} {shown}")
    return run


def weight_sets(group_id: str, candidate: Any) -> list[tuple[str, int | None]]:
    """What to evaluate: the default, the candidate, stage 1 alone, two of the default's parts.

    Authority, verification and recency are the same for every SciFact hit, so they
    only add a constant to the default blend; relevance with the default's feedback
    (0.40 : 0.08) or confidence (0.40 : 0.10) alone shows which of the two moves it.
    """
    from retrieval.domain.ranking import SIGNALS, Weights
    from retrieval.models import WeightSet
    from retrieval.usecases import weight_set_create

    def manual(**weights: float) -> WeightSet:
        return weight_set_create(
            group_id=group_id,
            weights=Weights.from_mapping({**dict.fromkeys(SIGNALS, 0.0), **weights}),
            origin=WeightSet.Origin.MANUAL,
        )

    chosen: list[tuple[str, int | None]] = [("(a) default weights (v0)", None)]
    if candidate is not None:
        chosen.append((f"(b) calibrated (v{candidate.version})", candidate.pk))
    for name, weights in (
        ("(c) stage 1: relevance 1.0", {"relevance": 1.0}),
        ("(d) relevance .40 + feedback .08", {"relevance": 0.40, "feedback": 0.08}),
        ("(e) relevance .40 + confidence .10", {"relevance": 0.40, "confidence": 0.10}),
    ):
        weight_set = manual(**weights)
        chosen.append((f"{name} (v{weight_set.version})", weight_set.pk))
    return chosen


def evaluate(principal: Any, group_id: str, chosen: list[tuple[str, int | None]]) -> None:
    """One golden-set evaluation per weight set, printed as a row each."""
    from django.utils import timezone

    from retrieval.usecases import evaluation_run

    heading = " ".join(f"{metric:>8}" for metric in METRICS)
    print(f"{'weights':<42} {heading}    time  latency p50/p95")
    for name, weight_set_id in chosen:
        started = time.perf_counter()
        run = evaluation_run(
            actor=principal, group_id=group_id, now=timezone.now(), trigger="bench",
            weight_set_id=weight_set_id,
        )  # fmt: skip
        values = {metric: getattr(run, metric) for metric in METRICS}
        latency = f"{run.latency_p50_ms:.0f}/{run.latency_p95_ms:.0f} ms"
        print(row(name, values, time.perf_counter() - started, latency))


def activation(principal: Any, candidate: Any) -> str:
    """What the product does with the candidate: activate it unless the golden set (here
    the held-out half) scores it below what ranks now, the nightly job's rule."""
    from retrieval.usecases import NeedsConfirmation, weight_set_activate

    try:
        return str(weight_set_activate(actor=principal, weight_set_id=candidate.pk).message)
    except NeedsConfirmation as doubt:
        return f"refused: {doubt} The default keeps ranking."


def learn(group_id: str, args: argparse.Namespace) -> None:
    """Votes, calibration and the evaluations, printed as they finish."""
    from retrieval.usecases import golden_import_beir
    from tenants import rls
    from tenants.selectors import principal_system

    learning, held_out, qrels = split_queries(args.split)
    print(
        f"split ({args.split})  {len(learning) + len(held_out)} judged training claims: "
        f"{len(learning)} learn, {len(held_out)} held out, of which "
        f"{shared(learning, held_out, qrels)} share a judged abstract with a learning claim"
    )
    principal = principal_system("bench-learning", group_ids=[group_id])
    with rls.tenant_context(principal):
        doc_of = documents_by_claim()
        started = time.perf_counter()
        helpful, unhelpful = vote(learning, qrels, doc_of)
        print(
            f"votes            {len(learning)} searches, {helpful + unhelpful} votes on their "
            f"top 10: {helpful} helpful, {unhelpful} unhelpful "
            f"({time.perf_counter() - started:.0f} s)"
        )
        run = calibrate(principal, group_id, args.min_samples, args.rate)
        started = time.perf_counter()
        report = golden_import_beir(
            group_id=group_id, folder=EVAL, split="train", query_ids=[q["_id"] for q in held_out]
        )
        print(f"golden set       {report} ({time.perf_counter() - started:.1f} s)\n")
        evaluate(principal, group_id, weight_sets(group_id, run.candidate))
        started = time.perf_counter()
        direct = stage1_direct(group_id, doc_of)
        print(row("    check: fused RRF order scored here", direct, time.perf_counter() - started))
        if run.candidate is not None:
            print(f"\nactivation       {activation(principal, run.candidate)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's corpus")
    parser.add_argument("--keep", action="store_true", help="commit the votes and runs")
    parser.add_argument("--min-samples", type=int, default=30, help="per class, to calibrate")
    parser.add_argument(
        "--rate", type=float, default=1.0,
        help="learning rate: how far from the default weights towards the derived ones",
    )  # fmt: skip
    parser.add_argument(
        "--split", choices=("grouped", "alternate"), default="grouped",
        help="grouped: claims sharing a judged abstract stay in one half (default)",
    )  # fmt: skip
    args = parser.parse_args()
    os.environ["VERA_EMBEDDER__PROVIDER"] = args.embedder
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_scifact")
    setup_django(fresh=not args.reuse)
    from django.db import transaction

    from retrieval.models import GroupEmbedding
    from retrieval.usecases import configured_embedder
    from tenants import rls
    from tenants.selectors import principal_system

    if args.reuse:
        group_id, seconds = reuse_scifact(reindex=False)
        print(f"reused corpus    {os.environ['VERA_BENCH__DB']} ({seconds:.0f} s)")
    else:
        group_id, seconds = ingest_scifact()
        print(f"ingest + index   {seconds:.0f} s")
    embedder = configured_embedder()
    with rls.tenant_context(principal_system("bench-learning", group_ids=[group_id])):
        pin = GroupEmbedding.objects.get(group_id=group_id)
    if (pin.model, pin.dimension) != (embedder.model, embedder.dimension):
        print(f"the corpus is indexed with {pin.model}; run with that embedder, or without --reuse")
        return 2
    print(f"embedder         {embedder.model} ({embedder.dimension} dimensions)")
    started = time.perf_counter()
    with transaction.atomic():
        learn(group_id, args)
        transaction.set_rollback(not args.keep)
    kept = "committed" if args.keep else "rolled back: the corpus is as it was"
    print(f"\nlearning loop    {time.perf_counter() - started:.0f} s, {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
