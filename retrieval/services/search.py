"""The three-stage search: vector + full text fused by RRF, the six-signal blend, a reranker.

Row-level security restricts every statement to the caller's groups; nothing here
filters by tenant itself.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q

from curation.ports import Embedder
from retrieval.domain import ranking
from retrieval.models import INDEXED_DIMENSIONS, Feedback, SearchDocument, SearchHit

STAGE1_DEPTH = 50
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class Query:
    """A validated search request."""

    text: str
    k: int = 10
    as_of: dt.datetime | None = None
    predicate: str | None = None
    entity: str | None = None
    source: int | None = None
    tier: int | None = None


@dataclass(frozen=True)
class Hit:
    """One ranked, cited result."""

    hit_id: int
    claim_id: int
    score: float
    signals: dict[str, float]
    stage1: dict[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Result:
    query_id: uuid.UUID
    hits: list[Hit]


def _where(query: Query) -> tuple[str, list[Any]]:
    """The valid-time filter and the caller's filters, as SQL on `d`."""
    if query.as_of is None:
        clauses, params = ["d.status = 'published'"], []
    else:
        clauses = [
            "d.status IN ('published', 'superseded')",
            "d.valid_from <= %s",
            "(d.valid_to IS NULL OR d.valid_to > %s)",
        ]
        params = [query.as_of, query.as_of]
    for column, value in (
        ("d.predicate", query.predicate),
        ("d.source_id", query.source),
        ("d.tier", query.tier),
    ):
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    if query.entity:
        clauses.append("lower(d.subject_name) = lower(%s)")
        params.append(query.entity)
    return " AND ".join(clauses), params


def _fulltext(query: Query, where: str, params: list[Any], depth: int) -> list[int]:
    # The query's own words become an OR of quoted lexemes: nothing the caller types
    # is ever parsed as tsquery syntax.
    sql = f"""
        WITH q AS (
            SELECT to_tsquery('simple', string_agg(quote_literal(word), ' | ')) AS query
            FROM unnest(tsvector_to_array(to_tsvector('simple', %s))) AS word
        )
        SELECT d.claim_id FROM retrieval_searchdocument d, q
        WHERE d.tsv @@ q.query AND {where}
        ORDER BY ts_rank(d.tsv, q.query, 1) DESC, d.claim_id
        LIMIT %s
    """  # noqa: S608 - `where` is built from fixed fragments; values are parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [query.text, *params, depth])
        return [row[0] for row in cursor.fetchall()]


def _vector(vector: Sequence[float], where: str, params: list[Any], depth: int) -> list[int]:
    dim = len(vector)
    if dim not in INDEXED_DIMENSIONS:
        raise ValueError(f"no vector index for dimension {dim}")
    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    sql = f"""
        SELECT d.claim_id FROM retrieval_searchdocument d
        WHERE d.dimension = {dim} AND {where}
        ORDER BY d.embedding::vector({dim}) <=> %s::vector({dim}), d.claim_id
        LIMIT %s
    """  # noqa: S608 - dim is an int from a fixed set; values are parameters
    with connection.cursor() as cursor:
        # Keep scanning the HNSW graph until enough rows pass the filters.
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(sql, [*params, literal, depth])
        return [row[0] for row in cursor.fetchall()]


def _votes(claim_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    rows = (
        Feedback.objects.filter(claim_id__in=claim_ids)
        .values("claim_id")
        .annotate(up=Count("pk", filter=Q(helpful=True)), down=Count("pk", filter=Q(helpful=False)))
    )
    return {row["claim_id"]: (row["up"], row["down"]) for row in rows}


def stage1(
    query: Query, *, embedder: Embedder | None, depth: int = STAGE1_DEPTH
) -> dict[str, list[int]]:
    """The full-text and vector rankings (each its top `depth`) under the valid-time filter."""
    where, params = _where(query)
    rankings = {"fulltext": _fulltext(query, where, params, depth)}
    if embedder is not None:
        rankings["vector"] = _vector(embedder.embed([query.text])[0], where, params, depth)
    return rankings


@transaction.atomic
def search(
    *,
    query: Query,
    embedder: Embedder | None,
    weights: ranking.Weights,
    now: dt.datetime,
    user_id: int | None = None,
    half_life_s: float = ranking.HALF_LIFE_S,
) -> Result:
    """Rank, cite and log: every returned hit's signal vector is stored for calibration."""
    rankings = stage1(query, embedder=embedder)
    fused = ranking.rrf(list(rankings.values()), k=1)
    docs = {d.claim_id: d for d in SearchDocument.objects.filter(claim_id__in=list(fused))}
    votes = _votes(list(docs))
    facts = {
        claim_id: ranking.CandidateFacts(
            stage1=fused[claim_id],
            authority=doc.authority,
            verification=doc.verification,
            valid_from=doc.valid_from,
            invalidated=doc.status != "published" and query.as_of is None,
            up=votes.get(claim_id, (0, 0))[0],
            down=votes.get(claim_id, (0, 0))[1],
            confidence=doc.confidence,
        )
        for claim_id, doc in docs.items()
    }
    ranked = ranking.rank(facts, weights=weights, now=now, half_life_s=half_life_s)[: query.k]
    query_id = uuid.uuid4()
    logged = SearchHit.objects.bulk_create(
        SearchHit(
            group_id=docs[claim_id].group_id,
            query_id=query_id,
            query_text=query.text,
            claim_id=claim_id,
            rank=position,
            score=score,
            signals=signals.as_dict(),
            user_id=user_id,
        )
        for position, (claim_id, score, signals) in enumerate(ranked, start=1)
    )
    positions = {name: {cid: i for i, cid in enumerate(ids, 1)} for name, ids in rankings.items()}
    hits = [
        Hit(
            hit_id=row.pk,
            claim_id=row.claim_id,
            score=row.score,
            signals=row.signals,
            stage1={name: where.get(row.claim_id) for name, where in positions.items()},
        )
        for row in logged
    ]
    return Result(query_id=query_id, hits=hits)


@transaction.atomic
def feedback_record(*, hit_id: int, helpful: bool, user_id: int | None) -> Feedback:
    """A vote on a returned hit (one per user and hit; voting again changes the vote)."""
    hit = SearchHit.objects.get(pk=hit_id)
    vote, _ = Feedback.objects.update_or_create(
        hit=hit,
        user_id=user_id,
        defaults={"group_id": hit.group_id, "claim_id": hit.claim_id, "helpful": helpful},
    )
    return vote
