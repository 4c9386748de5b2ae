"""Golden sets: importing them, and evaluating a workspace's search against them.

`evaluation_run` sends every enabled golden query of one workspace through the real
search function (the configured embedder and reranker, the real SQL and ranker), as a
principal of that workspace only, with the active weight set or a given one. Nothing
it searches is logged as a hit, so evaluation never becomes feedback. The run records
hit@1/3/10, MRR and nDCG@10 overall and per query, latency, the embedder model and the
weight-set version; a mean below a configured floor marks it failed.

Imports: JSONL (one golden query per line) and the BEIR layout (`queries.jsonl`,
`qrels/<split>.tsv`, `corpus.jsonl`), whose judged documents are mapped to the
workspace's episodes by external id (`4983` matches an episode `4983` or `4983.md`).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from common.errors import PermissionDenied
from curation.models import Episode
from retrieval.domain.evaluation import (
    Expectation,
    Floors,
    QueryScore,
    ScoredHit,
    mean_scores,
    percentile,
    score,
)
from retrieval.domain.query import MAX_QUERY_CHARS, Query
from retrieval.domain.ranking import DEFAULT_CHOICE, WeightChoice
from retrieval.models import EvaluationResult, EvaluationRun, GoldenQuery, GroupEmbedding, WeightSet
from retrieval.ports import Search
from retrieval.selectors import search_result_cited, weights_active
from retrieval.services.calibration import RunInProgress, try_lock
from retrieval.services.weights import weights_of
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role

EVAL_K = 10


class InvalidGolden(ValueError):
    """A golden-set file that cannot be imported; the message names the line and field."""


# --- import ------------------------------------------------------------------------------


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    skipped: list[str] = field(default_factory=list)  # one sentence per skipped query

    def __str__(self) -> str:
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return f"{self.created} created, {self.updated} updated{skipped}"


def _expectation(key: str, claim_ids: Any, episodes: Any, texts: Any) -> Expectation:
    try:
        return Expectation(
            claim_ids=frozenset(int(v) for v in claim_ids or ()),
            episodes=frozenset(str(v) for v in episodes or ()),
            texts=tuple(str(v) for v in texts or ()),
        )
    except (TypeError, ValueError) as error:
        raise InvalidGolden(f"{key}: {error}") from None


def _save(group_id: str, key: str, text: str, expected: Expectation, as_of: Any) -> bool:
    """Create or update one golden query; True when created."""
    text = text.strip()
    if not text or len(text) > MAX_QUERY_CHARS:
        raise InvalidGolden(f"{key}: the query must have 1..{MAX_QUERY_CHARS} characters")
    when = None
    if as_of:
        when = parse_datetime(str(as_of))
        if when is None or when.tzinfo is None:
            raise InvalidGolden(f"{key}: as_of {as_of!r} is not an ISO 8601 time with a zone")
    _, created = GoldenQuery.objects.update_or_create(
        group_id=group_id,
        key=key,
        defaults={
            "text": text,
            "expected_claim_ids": sorted(expected.claim_ids),
            "expected_episodes": sorted(expected.episodes),
            "expected_texts": list(expected.texts),
            "as_of": when,
            "enabled": True,
        },
    )
    return created


@transaction.atomic
def golden_import_jsonl(*, group_id: str, lines: Iterable[str]) -> ImportReport:
    """Import `{"key", "query", "expected_claim_ids"?, "expected_episodes"?,
    "expected_texts"?, "as_of"?}` lines; all or nothing (a bad line names itself)."""
    report = ImportReport()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidGolden(f"line {number}: not JSON ({error.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("query"), str):
            raise InvalidGolden(f"line {number}: an object with a string 'query' is required")
        key = str(row.get("key") or f"line-{number}")
        expected = _expectation(
            f"line {number}", row.get("expected_claim_ids"), row.get("expected_episodes"),
            row.get("expected_texts"),
        )  # fmt: skip
        created = _save(group_id, key, row["query"], expected, row.get("as_of"))
        report.created += created
        report.updated += not created
    return report


def _episodes_by_document(group_id: str) -> dict[str, list[str]]:
    """Document id -> the workspace's episodes for it (external id, or its stem)."""
    found: dict[str, list[str]] = defaultdict(list)
    for external_id in Episode.objects.filter(group_id=group_id).values_list(
        "external_id", flat=True
    ):
        found[external_id].append(external_id)
        stem = PurePosixPath(external_id).stem
        if stem != external_id:
            found[stem].append(external_id)
    return found


@transaction.atomic
def golden_import_beir(
    *,
    group_id: str,
    folder: Path,
    split: str = "test",
    query_ids: Iterable[str] | None = None,
    limit: int | None = None,
) -> ImportReport:
    """Import a BEIR folder's judged queries, expected hits being their judged documents'
    episodes in this workspace. A query none of whose documents were ingested is skipped
    (and named in the report): it could never be answered."""
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file() or not (folder / "queries.jsonl").is_file():
        raise InvalidGolden(f"{folder} needs queries.jsonl and qrels/{split}.tsv (BEIR layout)")
    judged: dict[str, set[str]] = defaultdict(set)
    with qrels_path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row.get("score") or 1) > 0:
                judged[row["query-id"]].add(row["corpus-id"])
    wanted = set(query_ids) if query_ids is not None else None
    episodes = _episodes_by_document(group_id)
    report = ImportReport()
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            qid = str(row["_id"])
            if qid not in judged or (wanted is not None and qid not in wanted):
                continue
            if limit is not None and report.created + report.updated >= limit:
                break
            matched = {e for doc in judged[qid] for e in episodes.get(doc, ())}
            if not matched:
                report.skipped.append(f"query {qid}: none of its documents is an episode here")
                continue
            created = _save(group_id, f"beir:{qid}", row["text"], Expectation(
                episodes=frozenset(matched)), None)  # fmt: skip
            report.created += created
            report.updated += not created
    return report


# --- evaluation --------------------------------------------------------------------------


def _choice(group_id: str, weight_set: WeightSet | None) -> WeightChoice:
    if weight_set is not None:
        return WeightChoice(weights_of(weight_set), weight_set.version, weight_set.pk)
    return weights_active([group_id]).get(group_id, DEFAULT_CHOICE)


def _expected(golden: GoldenQuery) -> Expectation:
    return Expectation(
        claim_ids=frozenset(golden.expected_claim_ids),
        episodes=frozenset(golden.expected_episodes),
        texts=tuple(golden.expected_texts),
    )


def evaluation_run(
    *,
    actor: Principal,
    group_id: str,
    search: Search,
    now: dt.datetime,
    trigger: str,
    embedder_model: str = "",
    floors: Floors | None = None,
    weight_set_id: int | None = None,
    run_key: str = "",
) -> EvaluationRun:
    """Evaluate one workspace's golden set (see the module docstring); recorded once per
    `run_key`. Raises RunInProgress when an evaluation of the workspace is running.

    `embedder_model` is recorded with the run; by default the model the workspace is
    indexed with (its pin), which is what its searches use.
    """
    if not actor.can(Role.REVIEWER, group_id):
        raise PermissionDenied("evaluating needs the reviewer role in this workspace")
    # A principal of this workspace alone: evaluation can only ever read its own data.
    member = Principal(label=actor.label, user_id=actor.user_id, roles={group_id: Role.OWNER})
    floors = floors or Floors()
    try:
        with rls.tenant_context(member):
            if run_key and (done := _recorded(group_id, run_key)) is not None:
                return done
            if not try_lock("evaluation", group_id):
                raise RunInProgress(f"an evaluation of {group_id} is already running")
            weight_set = WeightSet.objects.get(pk=weight_set_id) if weight_set_id else None
            if weight_set is not None and weight_set.group_id != group_id:
                raise WeightSet.DoesNotExist(f"weight set {weight_set_id} is not {group_id}'s")
            choice = _choice(group_id, weight_set)
            return _evaluate(
                group_id=group_id, search=search, choice=choice, embedder_model=embedder_model,
                now=now, trigger=trigger, floors=floors, run_key=run_key,
            )  # fmt: skip
    except IntegrityError:
        with rls.tenant_context(member):
            done = _recorded(group_id, run_key) if run_key else None
        if done is None:
            raise
        return done


def _recorded(group_id: str, run_key: str) -> EvaluationRun | None:
    return EvaluationRun.objects.filter(group_id=group_id, run_key=run_key).first()


def _evaluate(
    *,
    group_id: str,
    search: Search,
    choice: WeightChoice,
    embedder_model: str,
    now: dt.datetime,
    trigger: str,
    floors: Floors,
    run_key: str,
) -> EvaluationRun:
    goldens = list(GoldenQuery.objects.filter(group_id=group_id, enabled=True).order_by("key"))
    if not embedder_model:
        pinned = GroupEmbedding.objects.filter(group_id=group_id).values_list("model", flat=True)
        embedder_model = pinned.first() or ""
    run = EvaluationRun(
        group_id=group_id, run_key=run_key, trigger=trigger, started_at=timezone.now(),
        weight_set_id=choice.set_id, weight_version=choice.version,
        embedder_model=embedder_model, queries=len(goldens),
        floors=dict(floors.minimums),
    )  # fmt: skip
    rows: list[tuple[GoldenQuery, QueryScore, list[int], float]] = []
    for golden in goldens:
        started = time.perf_counter()
        result = search(
            query=Query(text=golden.text, k=EVAL_K, as_of=golden.as_of),
            now=now,
            weights=choice,
            record=False,
        )
        elapsed_ms = (time.perf_counter() - started) * 1000
        cited = search_result_cited(result=result)
        hits = [
            ScoredHit(
                claim_id=hit.claim_id,
                fact=hit.fact,
                episodes=tuple(c.episode for c in hit.citations),
                snippets=tuple(c.snippet for c in hit.citations),
            )
            for hit in cited.hits
        ]
        rows.append(
            (golden, score(hits, _expected(golden)), [h.claim_id for h in hits], elapsed_ms)
        )
    means = mean_scores(row[1] for row in rows)
    latencies = [row[3] for row in rows]
    for name, value in means.items():
        setattr(run, name, value)
    run.latency_p50_ms = percentile(latencies, 50)
    run.latency_p95_ms = percentile(latencies, 95)
    run.failures = floors.failures(means) if rows else []
    if not rows:
        run.status = EvaluationRun.Status.EMPTY
        run.message = "The workspace has no enabled golden queries."
    elif run.failures:
        run.status = EvaluationRun.Status.FAILED
        run.message = "; ".join(run.failures)
    else:
        run.status = EvaluationRun.Status.PASSED
        run.message = f"nDCG@10 {means['ndcg_at_10']:.4f} over {len(rows)} queries"
    run.finished_at = timezone.now()
    run.save()
    EvaluationResult.objects.bulk_create(
        EvaluationResult(
            group_id=group_id,
            run=run,
            golden=golden,
            query_text=golden.text,
            first_rank=scored.first_rank,
            reciprocal_rank=scored.reciprocal_rank,
            ndcg_at_10=scored.ndcg_at_10,
            hit_at_10=scored.hit_at[10],
            claim_ids=claim_ids,
            latency_ms=elapsed,
        )
        for golden, scored, claim_ids, elapsed in rows
    )
    return run
