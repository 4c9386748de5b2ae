"""The search's SQL over a sealed knowledge snapshot instead of the live index.

The same five reads as `sql` (full text, term coverage, vectors, votes, documents),
over the snapshot's copies: BM25 from its own postings and corpus statistics (each
term's best postings by impact, as live), the nearest of its vectors through the same
kind of HNSW index as live (ranked exactly when the index scan comes back short), and
the votes as they were when it was taken. The valid-time and caller filters are `sql`'s,
on the snapshot's documents (`d`, same columns). Row-level security still applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common.reads import read_connection
from retrieval.domain import lexical
from retrieval.domain.understanding import FUNCTION_WORDS
from retrieval.services.search.sql import (
    AS_OF,
    BEST_FORM,
    EXACT_DOCUMENTS,
    LEXEMES,
    NOW,
    QUERY_TERMS,
    QUERY_WORDS,
    TERM_SCORE,
    Candidate,
    Nearest,
    mean_vector,
    nearest,
    query_terms,
    understood_about,
    vector_literal,
)

# One term's best postings in the snapshot, as SQL on `w.term` (its id first): at the
# snapshot's instant or as of a time with no other filter, the covering indexes answer
# alone; otherwise the documents are joined for the filters. As `sql._postings` live.
_POSTINGS_NOW = """
    SELECT t.claim_id, t.tf, t.doc_len FROM retrieval_snapshotterm t
    WHERE t.snapshot_id = %s AND t.term = w.term AND t.published
    ORDER BY t.impact DESC
    LIMIT %s
"""
_POSTINGS_AS_OF = """
    SELECT t.claim_id, t.tf, t.doc_len FROM retrieval_snapshotterm t
    WHERE t.snapshot_id = %s AND t.term = w.term
        AND t.valid_from <= %s AND (t.valid_to IS NULL OR t.valid_to > %s)
    ORDER BY t.impact DESC
    LIMIT %s
"""
_POSTINGS_FILTERED = """
    SELECT t.claim_id, t.tf, t.doc_len
    FROM retrieval_snapshotterm t
    JOIN retrieval_snapshotdocument d ON d.snapshot_id = t.snapshot_id AND d.claim_id = t.claim_id
    WHERE t.snapshot_id = %s AND t.term = w.term AND {where}
    ORDER BY t.impact DESC
    LIMIT %s
"""


def _postings(where: str, params: list[Any]) -> tuple[str, list[Any]]:
    """The postings SQL for these filters, and the values it takes after the snapshot id."""
    if where == NOW:
        return _POSTINGS_NOW, []
    if where == AS_OF:
        return _POSTINGS_AS_OF, params
    return _POSTINGS_FILTERED.format(where=where), params


@dataclass(frozen=True)
class SnapshotIndex:
    """A sealed snapshot as search's index: its id and its corpus size (BM25's N, avgdl)."""

    snapshot_id: int
    size: int  # documents with postings
    avg_len: float
    # The postings each query term reads (its best by impact), as pinned when it was
    # sealed; None for a snapshot sealed before postings carried their impact.
    per_term: int | None = None
    # The weight of a query word's other forms (`lexical.VARIANT_WEIGHT` when it was
    # sealed); None for a snapshot sealed before they were read: its words as written.
    variant_weight: float | None = None

    def fulltext(self, query: Any, where: str, params: list[Any], depth: int) -> list[int]:
        """BM25 over the snapshot's postings: each term's best `per_term` that pass the
        filters find the candidates, scored exactly from all their postings (as
        `sql.lexical_scores` does live); every posting read when `per_term` is None."""
        if self.per_term is None:
            return self._fulltext_every_posting(query, where, params, depth)
        postings, filters = _postings(where, params)
        sql = f"""
            WITH {QUERY_TERMS},
            c AS (SELECT %s::float8 AS n, %s::float8 AS avg_len, %s::float8 AS k1,
                         %s::float8 AS b),
            w AS (
                SELECT s.term, q.origin,
                       q.weight * ln(1 + (c.n - s.df + 0.5) / (s.df + 0.5)) AS idf
                FROM retrieval_snapshottermstat s
                JOIN q ON q.term = s.term
                CROSS JOIN c
                WHERE s.snapshot_id = %s AND s.term = ANY ((SELECT terms FROM q_terms)::text[])
            ),
            candidates AS (
                SELECT x.claim_id FROM (
                    SELECT p.claim_id, {BEST_FORM.format(score=TERM_SCORE.format(t="p"))}
                    FROM w CROSS JOIN c CROSS JOIN LATERAL ({postings}) p
                    GROUP BY p.claim_id, w.origin
                ) x
                GROUP BY x.claim_id
                ORDER BY sum(x.score) DESC, x.claim_id
                LIMIT %s
            )
            SELECT x.claim_id, sum(x.score) AS score FROM (
                SELECT h.claim_id, {BEST_FORM.format(score=TERM_SCORE.format(t="t"))}
                FROM candidates h CROSS JOIN w CROSS JOIN c
                CROSS JOIN LATERAL (  -- one primary-key probe per candidate and term
                    SELECT t.tf, t.doc_len FROM retrieval_snapshotterm t
                    WHERE t.snapshot_id = %s AND t.term = w.term AND t.claim_id = h.claim_id
                    LIMIT 1
                ) t
                GROUP BY h.claim_id, w.origin
            ) x
            GROUP BY x.claim_id
            ORDER BY score DESC, x.claim_id
        """  # noqa: S608 - `where` is built from fixed fragments; values are parameters
        values = [
            *query_terms(query.text, self.variant_weight), self.size, self.avg_len or 1.0,
            lexical.K1, lexical.B, self.snapshot_id, self.snapshot_id, *filters,
            self.per_term, depth, self.snapshot_id,
        ]  # fmt: skip
        with read_connection().cursor() as cursor:
            cursor.execute(sql, values)
            return [row[0] for row in cursor.fetchall()]

    def _fulltext_every_posting(
        self, query: Any, where: str, params: list[Any], depth: int
    ) -> list[int]:
        """BM25 over every posting of the query's terms (a snapshot sealed before its
        postings carried their impact)."""
        sql = f"""
            WITH q AS (
                SELECT array_agg(DISTINCT word) AS terms FROM unnest({LEXEMES}) AS word
            ),
            w AS (
                SELECT s.term, ln(1 + (%s::float8 - s.df + 0.5) / (s.df + 0.5)) AS idf
                FROM (
                    SELECT term, count(*)::float8 AS df FROM retrieval_snapshotterm
                    WHERE snapshot_id = %s AND term = ANY ((SELECT terms FROM q)::text[])
                    GROUP BY term
                ) s
            )
            SELECT t.claim_id,
                   sum(w.idf * t.tf * (%s + 1) / (t.tf + %s * (1 - %s + %s * t.doc_len / %s)))
                       AS score
            FROM w
            JOIN retrieval_snapshotterm t ON t.snapshot_id = %s AND t.term = w.term
            JOIN retrieval_snapshotdocument d
                ON d.snapshot_id = t.snapshot_id AND d.claim_id = t.claim_id
            WHERE {where}
            GROUP BY t.claim_id
            ORDER BY score DESC, t.claim_id
            LIMIT %s
        """  # noqa: S608 - `where` is built from fixed fragments; values are parameters
        k1, b, avg = lexical.K1, lexical.B, self.avg_len or 1.0
        with read_connection().cursor() as cursor:
            cursor.execute(
                sql,
                [
                    query.text, lexical.PUNCTUATION, self.size, self.snapshot_id,
                    k1, k1, b, b, avg, self.snapshot_id, *params, depth,
                ],
            )  # fmt: skip
            return [row[0] for row in cursor.fetchall()]

    def term_coverage(self, text: str) -> float:
        """The share of the query's distinct lexemes that occur in the snapshot."""
        with read_connection().cursor() as cursor:
            cursor.execute(
                f"""
                SELECT count(*), count(*) FILTER (WHERE EXISTS (
                    SELECT 1 FROM retrieval_snapshotterm s
                    WHERE s.snapshot_id = %s AND s.term = q.word
                ))
                FROM ({QUERY_WORDS}) q
                """,  # noqa: S608 - a fixed fragment; values are parameters
                [self.snapshot_id, text, lexical.PUNCTUATION, sorted(FUNCTION_WORDS)],
            )
            terms, known = cursor.fetchone()
        return known / terms if terms else 1.0

    def understood(
        self,
        names: Sequence[str],
        predicates: Sequence[str],
        where: str,
        params: list[Any],
        depth: int,
        *,
        objects: Sequence[int] = (),
    ) -> list[int]:
        """`sql.understood` over the snapshot's documents."""
        about, named = understood_about(names, objects)
        relation = "AND d.predicate = ANY(%s)" if predicates else ""
        values: list[Any] = [self.snapshot_id, *named]
        if predicates:
            values.append(list(predicates))
        with read_connection().cursor() as cursor:
            cursor.execute(
                f"""
                SELECT d.claim_id FROM retrieval_snapshotdocument d
                WHERE d.snapshot_id = %s AND {about} {relation}
                    AND {where}
                ORDER BY d.authority DESC, d.valid_from DESC, d.claim_id
                LIMIT %s
                """,  # noqa: S608 - fixed fragments; values are parameters
                [*values, *params, depth],
            )
            return [row[0] for row in cursor.fetchall()]

    def vector(
        self,
        embedding: Sequence[float],
        where: str,
        params: list[Any],
        depth: int,
        *,
        model: str,
        companion: bool = False,
    ) -> list[tuple[int, float]]:
        """The nearest of the snapshot's documents by the pinned model's (or its
        companion's) vectors: an exact scan, the same answer every time."""
        dim, literal = vector_literal(embedding)
        # A companion vector has the companion model's dimension, which `dim` is; no
        # index holds the companion column, so it is ranked exactly.
        own = "d.companion IS NOT NULL" if companion else (
            f"d.dimension = {dim} AND d.embedding_model = %s"
        )  # fmt: skip
        where_nearest = Nearest(
            source="retrieval_snapshotdocument d",
            column="d.companion" if companion else "d.embedding",
            filters=f"d.snapshot_id = %s AND {own} AND {where}",
            values=[self.snapshot_id, *([] if companion else [model]), *params],
            dim=dim,
        )
        # A small snapshot is ranked exactly from the start, as a small workspace is live
        # (`sql.EXACT_DOCUMENTS`): the HNSW index holds every snapshot's documents.
        indexed = not companion and self.size > EXACT_DOCUMENTS
        return nearest(where_nearest, literal, depth, indexed=indexed)

    def centroid(
        self, claim_ids: Sequence[int], *, model: str, dim: int, companion: bool = False
    ) -> list[float] | None:
        """The mean of the claims' vectors in the snapshot, as `sql.centroid` live: by the
        pinned model, or (`companion`) the companion vectors it holds."""
        own = "d.companion IS NOT NULL" if companion else (
            f"d.dimension = {dim} AND d.embedding_model = %s"
        )  # fmt: skip
        column = "d.companion" if companion else "d.embedding"
        sql_text = f"""
            SELECT avg({column}::vector({dim}))::text FROM retrieval_snapshotdocument d
            WHERE d.snapshot_id = %s AND d.claim_id = ANY(%s) AND {own}
        """  # noqa: S608 - fixed fragments; `dim` is an int
        values = [self.snapshot_id, list(claim_ids), *([] if companion else [model])]
        return mean_vector(sql_text, values, dim)

    def votes(self, claim_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """(up, down) per claim as they were when the snapshot was taken."""
        with read_connection().cursor() as cursor:
            cursor.execute(_VOTES, [self.snapshot_id, list(claim_ids)])
            return {claim_id: (up, down) for claim_id, up, down in cursor.fetchall()}

    def documents(self, claim_ids: list[int], *, with_text: bool) -> dict[int, Candidate]:
        """The candidates' snapshot rows, as `sql.documents` gives the live ones."""
        with read_connection().cursor() as cursor:  # raw, as `sql.documents`
            cursor.execute(
                _DOCUMENTS_TEXT if with_text else _DOCUMENTS, [self.snapshot_id, claim_ids]
            )
            return {row[0]: Candidate(*row) for row in cursor.fetchall()}


_VOTES = """
    SELECT claim_id, up, down FROM retrieval_snapshotdocument
    WHERE snapshot_id = %s AND claim_id = ANY(%s) AND (up > 0 OR down > 0)
"""
_DOCUMENTS = f"""
    SELECT {", ".join(Candidate._fields[:-1])}, '' FROM retrieval_snapshotdocument
    WHERE snapshot_id = %s AND claim_id = ANY(%s)
"""  # noqa: S608 - fixed column names
_DOCUMENTS_TEXT = _DOCUMENTS.replace(", ''", ", text", 1)
