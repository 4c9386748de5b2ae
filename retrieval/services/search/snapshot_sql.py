"""The search's SQL over a sealed knowledge snapshot instead of the live index.

The same five reads as `sql` (full text, term coverage, vectors, votes, documents),
over the snapshot's copies: BM25 from its own postings and corpus statistics, an exact
vector scan (deterministic, where an approximate index's answer could drift), and the
votes as they were when it was taken. The valid-time and caller filters are `sql`'s,
on the snapshot's documents (`d`, same columns). Row-level security still applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Value

from retrieval.domain import lexical
from retrieval.domain.understanding import FUNCTION_WORDS
from retrieval.models import SnapshotDocument
from retrieval.services.search.sql import LEXEMES, QUERY_WORDS, Candidate, vector_literal


@dataclass(frozen=True)
class SnapshotIndex:
    """A sealed snapshot as search's index: its id and its corpus size (BM25's N, avgdl)."""

    snapshot_id: int
    size: int  # documents with postings
    avg_len: float

    def fulltext(self, query: Any, where: str, params: list[Any], depth: int) -> list[int]:
        """BM25 over the snapshot's postings, every posting of the query's terms read."""
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
        with connection.cursor() as cursor:
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
        with connection.cursor() as cursor:
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
    ) -> list[int]:
        """`sql.understood` over the snapshot's documents."""
        relation = "AND d.predicate = ANY(%s)" if predicates else ""
        values: list[Any] = [self.snapshot_id, [name.casefold() for name in names]]
        if predicates:
            values.append(list(predicates))
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT d.claim_id FROM retrieval_snapshotdocument d
                WHERE d.snapshot_id = %s AND lower(d.subject_name) = ANY(%s) {relation}
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
        column = "d.companion" if companion else "d.embedding"
        # A companion vector has the companion model's dimension, which `dim` is.
        own = f"{column} IS NOT NULL" + (
            "" if companion else f" AND d.dimension = {dim} AND d.embedding_model = %s"
        )
        sql = f"""
            SELECT d.claim_id, {column}::vector({dim}) <=> %s::vector({dim}) AS distance
            FROM retrieval_snapshotdocument d
            WHERE d.snapshot_id = %s AND {own} AND {where}
            ORDER BY distance, d.claim_id
            LIMIT %s
        """  # noqa: S608 - dim is an int from a fixed set; values are parameters
        values = [literal, self.snapshot_id, *([] if companion else [model]), *params, depth]
        with connection.cursor() as cursor:
            cursor.execute(sql, values)
            return [(row[0], 1.0 - row[1]) for row in cursor.fetchall()]

    def votes(self, claim_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """(up, down) per claim as they were when the snapshot was taken."""
        rows = SnapshotDocument.objects.filter(
            snapshot_id=self.snapshot_id, claim_id__in=list(claim_ids)
        ).values_list("claim_id", "up", "down")
        return {claim_id: (up, down) for claim_id, up, down in rows if up or down}

    def documents(self, claim_ids: list[int], *, with_text: bool) -> dict[int, Candidate]:
        """The candidates' snapshot rows, as `sql.documents` gives the live ones."""
        rows = SnapshotDocument.objects.filter(
            snapshot_id=self.snapshot_id, claim_id__in=claim_ids
        ).values_list(*Candidate._fields[:-1], "text" if with_text else Value(""))
        return {row[0]: Candidate(*row) for row in rows}
