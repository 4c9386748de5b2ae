"""The three-stage search: vector + full text fused by RRF, the six-signal blend, a reranker.

Row-level security restricts every statement to the caller's groups; nothing here
filters by tenant itself.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import Value

from curation.ports import Embedder
from retrieval.domain import lexical, ranking
from retrieval.models import INDEXED_DIMENSIONS, Feedback, SearchDocument, SearchHit
from retrieval.ports import RerankerError, Reranking

logger = logging.getLogger(__name__)

STAGE1_DEPTH = 50
POSTINGS_PER_TERM = 500  # SciFact: fused nDCG@10 0.7144 at 500, 0.7126 at 1000 and at 300
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
    rerank: float | None = None  # the cross-encoder's score, when stage 3 read this hit


class Stage3(StrEnum):
    """What the optional cross-encoder did for a search."""

    OFF = "off"  # not configured
    APPLIED = "applied"
    UNAVAILABLE = "unavailable"  # configured but failed: the stage-2 order was returned


@dataclass(frozen=True)
class Result:
    """A search's hits, best first, with the id they were logged under."""

    query_id: uuid.UUID
    hits: list[Hit]
    stage3: Stage3 = Stage3.OFF
    timings: dict[str, float] = field(default_factory=dict)  # ms per step
    degraded: tuple[str, ...] = ()  # stage-1 halves that could not run ("vector")


_NOW = "d.status = 'published'"  # the valid-time filter "as of now"


def _where(query: Query) -> tuple[str, list[Any]]:
    """The valid-time filter and the caller's filters, as SQL on `d`."""
    if query.as_of is None:
        clauses, params = [_NOW], []
    else:
        clauses = [
            "d.status IN ('published', 'superseded', 'retracted')",
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


# One term's best postings, as SQL on `w.term`. Valid now and unfiltered, the covering
# partial index answers alone; otherwise the documents are joined for the filters.
_POSTINGS_NOW = """
    SELECT t.claim_id, t.tf, t.doc_len FROM retrieval_lexicalterm t
    WHERE t.term = w.term AND t.published
    ORDER BY t.impact DESC
    LIMIT %s
"""
_POSTINGS_FILTERED = """
    SELECT t.claim_id, t.tf, t.doc_len
    FROM retrieval_lexicalterm t JOIN retrieval_searchdocument d ON d.claim_id = t.claim_id
    WHERE t.term = w.term AND {where}
    ORDER BY t.impact DESC
    LIMIT %s
"""


def _postings(where: str, params: list[Any]) -> tuple[str, list[Any]]:
    """The postings SQL for these filters, and the values it takes."""
    if where == _NOW:
        return _POSTINGS_NOW, []
    return _POSTINGS_FILTERED.format(where=where), params


def lexical_scores(
    query: Query, where: str, params: list[Any], depth: int
) -> list[tuple[int, float]]:
    """BM25 over the caller's visible groups: (claim id, score), best first, at most `depth`.

    The query's own lexemes (the `simple` configuration, as the index was built) are
    looked up in the inverted index: nothing the caller types is parsed as tsquery
    syntax. Each term reads only the top `POSTINGS_PER_TERM` of its postings by impact
    that pass the filters; a term so common that its list runs longer carries an idf
    near zero, so what is cut off could barely move the ranking.
    """
    postings, filters = _postings(where, params)
    sql = f"""
        WITH q AS (
            SELECT array_agg(DISTINCT word) AS terms
            FROM unnest(tsvector_to_array(to_tsvector('simple', %s))) AS word
        ),
        corpus AS (
            SELECT sum(documents)::float8 AS n,
                   sum(tokens)::float8 / nullif(sum(documents), 0) AS avg_len
            FROM retrieval_lexicalcorpus
        ),
        weights AS (
            SELECT s.term, ln(1 + (c.n - s.df + 0.5) / (s.df + 0.5)) AS idf
            FROM (
                SELECT term, least(sum(df), (SELECT n FROM corpus))::float8 AS df
                FROM retrieval_lexicaltermstat WHERE term = ANY ((SELECT terms FROM q)::text[])
                GROUP BY term
            ) s, corpus c
        )
        SELECT p.claim_id,
               sum(w.idf * p.tf * (%s + 1) / (p.tf + %s * (1 - %s + %s * p.doc_len / c.avg_len)))
                   AS score
        FROM weights w CROSS JOIN corpus c CROSS JOIN LATERAL ({postings}) p
        GROUP BY p.claim_id
        ORDER BY score DESC, p.claim_id
        LIMIT %s
    """  # noqa: S608 - `postings` is one of two fixed fragments; values are parameters
    k1, b = lexical.K1, lexical.B
    with connection.cursor() as cursor:
        cursor.execute(sql, [query.text, k1, k1, b, b, *filters, POSTINGS_PER_TERM, depth])
        return [(row[0], row[1]) for row in cursor.fetchall()]


def _fulltext(query: Query, where: str, params: list[Any], depth: int) -> list[int]:
    return [claim_id for claim_id, _ in lexical_scores(query, where, params, depth)]


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
    """(up, down) per claim that has votes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT claim_id, count(*) FILTER (WHERE helpful), count(*) FILTER (WHERE NOT helpful)"
            " FROM retrieval_feedback WHERE claim_id = ANY(%s) GROUP BY claim_id",
            [list(claim_ids)],
        )
        return {claim_id: (up, down) for claim_id, up, down in cursor.fetchall()}


class Stopwatch:
    """Milliseconds per named step of one search (reported in its Server-Timing header)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000


def stage1(
    query: Query,
    *,
    embedder: Embedder | None,
    depth: int = STAGE1_DEPTH,
    watch: Stopwatch | None = None,
) -> dict[str, list[int]]:
    """The full-text and vector rankings (each its top `depth`) under the valid-time filter."""
    watch = watch or Stopwatch()
    where, params = _where(query)
    # The query is embedded while Postgres runs the lexical half: the model and the
    # database wait both release the GIL, so the two overlap instead of adding up.
    embedding = _embedding_pool().submit(embedder.embed, [query.text]) if embedder else None
    with watch.step("lexical"):
        rankings = {"fulltext": _fulltext(query, where, params, depth)}
    if embedding is not None:
        with watch.step("embed"):  # only the wait left after the lexical half
            vector = _query_vector(embedding)
        if vector is not None:
            with watch.step("vector"):
                rankings["vector"] = _vector(vector, where, params, depth)
    return rankings


def _query_vector(embedding: Future[list[list[float]]]) -> list[float] | None:
    """The query's vector, or None when the embedder failed: search answers by text alone."""
    try:
        return embedding.result()[0]
    except Exception as error:
        # A provider outage (its circuit open, retries spent) must not take search down;
        # the response says which half is missing. The class name only: no secrets.
        logger.warning("vector half skipped, the query embedding failed: %s", type(error).__name__)
        return None


_pools: dict[int, ThreadPoolExecutor] = {}


def _embedding_pool() -> ThreadPoolExecutor:
    """This process's threads for query embeddings (a forked worker makes its own)."""
    pid = os.getpid()
    if pid not in _pools:
        _pools[pid] = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vera-query-embed")
    return _pools[pid]


class Candidate(NamedTuple):
    """What ranking reads of a stage-1 candidate's index row (never its vector)."""

    claim_id: int
    group_id: str
    status: str
    authority: float
    verification: float
    confidence: float
    valid_from: dt.datetime
    text: str


def _documents(claim_ids: list[int], *, with_text: bool) -> dict[int, Candidate]:
    """The candidates' index rows, as plain tuples; their text only when stage 3 reads it."""
    rows = SearchDocument.objects.filter(claim_id__in=claim_ids).values_list(
        *Candidate._fields[:-1], "text" if with_text else Value("")
    )
    return {row[0]: Candidate(*row) for row in rows}


def _candidates(
    query: Query, fused: dict[int, float], docs: dict[int, Candidate]
) -> dict[int, ranking.CandidateFacts]:
    votes = _votes(list(docs))
    return {
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


def _stage3(
    query: Query,
    blended: list[tuple[int, float]],
    docs: dict[int, Candidate],
    reranking: Reranking,
) -> tuple[list[tuple[int, float]], dict[int, float], Stage3]:
    """Re-score the top N with the cross-encoder; on failure keep stage 2's order."""
    head = [claim_id for claim_id, _ in blended[: reranking.top_n]]
    try:
        scores = reranking.reranker.score(query.text, [docs[c].text for c in head])
    except RerankerError as error:
        # A search still answers when the reranker is down: stage 2 is a complete ranking.
        logger.warning("stage 3 skipped, stage-2 order returned: %s", error)
        return blended, {}, Stage3.UNAVAILABLE
    ce = dict(zip(head, scores, strict=True))
    return ranking.rerank(blended, ce, w=reranking.weight), ce, Stage3.APPLIED


# A request's transaction already wraps a search; a savepoint would only add round trips.
@transaction.atomic(savepoint=False)
def search(
    *,
    query: Query,
    embedder: Embedder | None,
    weights: ranking.Weights,
    now: dt.datetime,
    user_id: int | None = None,
    half_life_s: float = ranking.HALF_LIFE_S,
    reranking: Reranking | None = None,
) -> Result:
    """Rank, cite and log: every returned hit's signal vector is stored for calibration."""
    watch = Stopwatch()
    rankings = stage1(query, embedder=embedder, watch=watch)
    with watch.step("blend"):
        fused = ranking.rrf(list(rankings.values()), k=1)
        docs = _documents(list(fused), with_text=reranking is not None)
        ranked = ranking.rank(
            _candidates(query, fused, docs), weights=weights, now=now, half_life_s=half_life_s
        )
    signals = {claim_id: row_signals for claim_id, _, row_signals in ranked}
    final = [(claim_id, score) for claim_id, score, _ in ranked]
    ce: dict[int, float] = {}
    stage3 = Stage3.OFF
    if reranking is not None and final:
        with watch.step("rerank"):
            final, ce, stage3 = _stage3(query, final, docs, reranking)
    query_id = uuid.uuid4()
    with watch.step("log"):
        logged = _log(query, query_id, final, docs, signals, user_id)
    positions = {name: {cid: i for i, cid in enumerate(ids, 1)} for name, ids in rankings.items()}
    hits = [
        Hit(
            hit_id=row.pk,
            claim_id=row.claim_id,
            score=row.score,
            signals=row.signals,
            stage1={name: where.get(row.claim_id) for name, where in positions.items()},
            rerank=ce.get(row.claim_id),
        )
        for row in logged
    ]
    degraded = ("vector",) if embedder is not None and "vector" not in rankings else ()
    return Result(query_id=query_id, hits=hits, stage3=stage3, timings=watch.ms, degraded=degraded)


def _log(
    query: Query,
    query_id: uuid.UUID,
    final: list[tuple[int, float]],
    docs: dict[int, Candidate],
    signals: dict[int, ranking.Signals],
    user_id: int | None,
) -> list[SearchHit]:
    """Store each returned hit with the signal vector it was ranked by (for calibration)."""
    return SearchHit.objects.bulk_create(
        SearchHit(
            group_id=docs[claim_id].group_id,
            query_id=query_id,
            query_text=query.text,
            claim_id=claim_id,
            rank=position,
            score=score,
            signals=signals[claim_id].as_dict(),
            user_id=user_id,
        )
        for position, (claim_id, score) in enumerate(final[: query.k], start=1)
    )


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
