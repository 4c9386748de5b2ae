"""The search's SQL: the valid-time and caller filters, BM25 postings, the vector scan, votes.

Row-level security restricts every statement to the caller's groups; nothing here
filters by tenant itself.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from django.db import connection

from common.reads import read_connection
from curation.domain.validity import EVER_VALID, VALID_NOW
from retrieval.domain import lexical
from retrieval.domain.query import Query
from retrieval.domain.understanding import FUNCTION_WORDS
from retrieval.models import INDEXED_DIMENSIONS
from tenants import rls
from tenants.rls import GROUPS_SETTING

# The postings each query term reads (its best by impact) to find the candidates, which
# are then scored from all their postings (`lexical_scores`). SciFact train, k1 0.9,
# b 0.4 (bench/lexical.py): lexical nDCG@10 0.6629 at 200, 0.6624 at 500, 0.6625 at
# 1000 and with every posting read, which took 23 ms a query against 6.6 at 500 (one
# run) and grows with the corpus.
POSTINGS_PER_TERM = 500

# A query's lexemes, made as the index makes a document's (`SearchDocument.tsv`: the
# `simple` configuration over the text with ASCII punctuation as spaces); it takes the
# text, then `lexical.PUNCTUATION`.
LEXEMES = "tsvector_to_array(to_tsvector('simple', regexp_replace(%s, %s, ' ', 'g')))"

# curation.domain.validity.valid_at as SQL on `d` (tests/test_validity.py holds them
# together). The statuses are the domain's constants, never input.
NOW = f"d.status = '{VALID_NOW}'"
_EVER_VALID = ", ".join(f"'{status}'" for status in sorted(EVER_VALID))
_AS_OF = [
    f"d.status IN ({_EVER_VALID})",
    "d.valid_from <= %s",
    "(d.valid_to IS NULL OR d.valid_to > %s)",
]


# The key a document's subject is found by (`SearchDocument.subject_key`: its name in
# lower case, by the database's rules, so a name and its key always agree). A condition
# on the stored key with `=` may use its index under row-level security; one on
# `lower(d.subject_name)` may not (`lower()` is not leakproof).
SUBJECT_KEY = "lower(%s::text)"
SUBJECT_KEYS = "ARRAY(SELECT lower(n) FROM unnest(%s::text[]) n)"


def where_clause(query: Query) -> tuple[str, list[Any]]:
    """The valid-time filter and the caller's filters, as SQL on `d`, and their values."""
    params: list[Any]
    if query.as_of is None:
        clauses, params = [NOW], []
    else:
        clauses, params = list(_AS_OF), [query.as_of, query.as_of]
    for column, value in (
        ("d.predicate", query.predicate),
        ("d.source_id", query.source),
        ("d.tier", query.tier),
    ):
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    if query.entity:
        clauses.append(f"d.subject_key = {SUBJECT_KEY}")
        params.append(query.entity)
    return " AND ".join(clauses), params


# Every group the transaction's principal sees rows of (its own, and those whose published
# knowledge it reads), from the settings row-level security reads: a statement names them
# so that an index led by the group serves it. The policies stay the guard.
VISIBLE_GROUPS = "(SELECT DISTINCT g FROM unnest(vera_allowed_groups() || vera_read_groups()) g)"

# One term's best postings in one group, as SQL on `w.term` and `g.id` (each group's are
# the top of one range of an index led by the group). Valid now and unfiltered, the
# covering partial index answers alone; otherwise the documents are joined for the filters.
_POSTINGS_NOW = """
    SELECT t.claim_id, t.tf, t.doc_len, t.impact FROM retrieval_lexicalterm t
    WHERE t.group_id = g.id AND t.term = w.term AND t.published
    ORDER BY t.impact DESC
    LIMIT %s
"""
# As of a time, with no other filter: the postings alone again, each term's best that were
# valid then (every posting is of an indexed claim, and so of one valid at some time).
_POSTINGS_AS_OF = """
    SELECT t.claim_id, t.tf, t.doc_len, t.impact FROM retrieval_lexicalterm t
    WHERE t.group_id = g.id AND t.term = w.term
        AND t.valid_from <= %s AND (t.valid_to IS NULL OR t.valid_to > %s)
    ORDER BY t.impact DESC
    LIMIT %s
"""
AS_OF = " AND ".join(_AS_OF)
_POSTINGS_FILTERED = """
    SELECT t.claim_id, t.tf, t.doc_len, t.impact
    FROM retrieval_lexicalterm t JOIN retrieval_searchdocument d ON d.claim_id = t.claim_id
    WHERE t.group_id = g.id AND t.term = w.term AND {where}
    ORDER BY t.impact DESC
    LIMIT %s
"""
# A term's best postings over the visible groups: each group's best, then the best of
# those (what one scan in impact order over every group would read, in a cost that
# follows the caller's own postings, not every workspace's).
_POSTINGS_VISIBLE = f"""
    SELECT p.claim_id, p.tf, p.doc_len FROM {VISIBLE_GROUPS} AS g(id)
    CROSS JOIN LATERAL ({{postings}}) p
    ORDER BY p.impact DESC
    LIMIT %s
"""  # noqa: S608 - fixed fragments


def _postings(where: str, params: list[Any]) -> tuple[str, list[Any]]:
    """The postings SQL for these filters, and the values it takes."""
    if where == NOW:
        return _POSTINGS_NOW, []
    if where == AS_OF:
        return _POSTINGS_AS_OF, params
    return _POSTINGS_FILTERED.format(where=where), params


# One posting's BM25 term score, as SQL on the posting `{t}`, its term's weight `w`
# and the corpus `c` (which carries k1 and b).
TERM_SCORE = (
    "w.idf * {t}.tf * (c.k1 + 1) / ({t}.tf + c.k1 * (1 - c.b + c.b * {t}.doc_len / c.avg_len))"
)


def query_lexemes(text: str) -> list[str]:
    """The query's distinct lexemes, as the index makes a document's (`LEXEMES`), sorted."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT word FROM unnest({LEXEMES}) AS word ORDER BY word",  # noqa: S608
            [text, lexical.PUNCTUATION],
        )
        return [row[0] for row in cursor.fetchall()]


def query_terms(text: str, variant_weight: float | None) -> list[list[Any]]:
    """The query's terms as three parallel arrays for `QUERY_TERMS`: each term, the query
    word it stands for, and its weight (`lexical.query_terms_weighted`: the query's
    lexemes and, unless `variant_weight` is None, their other forms)."""
    rows = lexical.query_terms_weighted(query_lexemes(text), variant_weight=variant_weight)
    return [[row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows]]


# The query's terms (`query_terms`) as rows of `q`, and every term's array.
QUERY_TERMS = """
    q AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::float8[]) AS q(term, origin, weight)),
    q_terms AS (SELECT array_agg(term) AS terms FROM q)
"""

# A document's score: over the query's words, the best of each word's forms it holds
# (`lexical.bm25`), as SQL on scored rows `x(claim_id, origin, score)`.
BEST_FORM = "max({score}) AS score"


def lexical_scores(
    query: Query, where: str, params: list[Any], depth: int
) -> list[tuple[int, float]]:
    """BM25 over the caller's visible groups: (claim id, score), best first, at most `depth`.

    The query's own lexemes (`LEXEMES`, as the index made the documents'), and the other
    forms of its English words (`lexical.inflections`, weighing `lexical.VARIANT_WEIGHT`;
    a document counts its best form of each word), are looked up in the inverted index:
    nothing the caller types is parsed as tsquery syntax. Each term reads only the top
    `POSTINGS_PER_TERM` of its postings by impact that pass the filters, which finds the
    candidates; the best `depth` of them by that partial sum are then scored exactly,
    from all their postings of the query's terms (a lookup by primary key each). The cut
    alone left a candidate without what a term whose list runs longer gives it, and such
    a term is not negligible (SciFact: a term in 500 of 13,000 passages has an idf of
    3.3): nDCG@10 0.6569 against 0.6625 with every posting read (k1 0.9, b 0.4);
    rescored, 0.6624 at a fraction of the cost.
    """
    postings, filters = _postings(where, params)
    sql = f"""
        WITH {QUERY_TERMS},
        corpus AS (
            SELECT sum(documents)::float8 AS n,
                   sum(tokens)::float8 / nullif(sum(documents), 0) AS avg_len,
                   %s::float8 AS k1, %s::float8 AS b
            FROM retrieval_lexicalcorpus
        ),
        weights AS (
            SELECT s.term, q.origin, q.weight * ln(1 + (c.n - s.df + 0.5) / (s.df + 0.5)) AS idf
            FROM (
                SELECT term, least(sum(df), (SELECT n FROM corpus))::float8 AS df
                FROM retrieval_lexicaltermstat
                WHERE term = ANY ((SELECT terms FROM q_terms)::text[])
                GROUP BY term
            ) s
            JOIN q ON q.term = s.term
            CROSS JOIN corpus c
        ),
        candidates AS (
            SELECT x.claim_id FROM (
                SELECT p.claim_id, {BEST_FORM.format(score=TERM_SCORE.format(t="p"))}
                FROM weights w CROSS JOIN corpus c
                CROSS JOIN LATERAL ({_POSTINGS_VISIBLE.format(postings=postings)}) p
                GROUP BY p.claim_id, w.origin
            ) x
            GROUP BY x.claim_id
            ORDER BY sum(x.score) DESC, x.claim_id
            LIMIT %s
        )
        SELECT x.claim_id, sum(x.score) AS score FROM (
            SELECT h.claim_id, {BEST_FORM.format(score=TERM_SCORE.format(t="t"))}
            FROM candidates h CROSS JOIN weights w CROSS JOIN corpus c
            CROSS JOIN LATERAL (  -- one primary-key probe per candidate and term (LIMIT:
                SELECT t.tf, t.doc_len FROM retrieval_lexicalterm t  -- never whole lists)
                WHERE t.claim_id = h.claim_id AND t.term = w.term LIMIT 1
            ) t
            GROUP BY h.claim_id, w.origin
        ) x
        GROUP BY x.claim_id
        ORDER BY score DESC, x.claim_id
    """  # noqa: S608 - `postings` is one of two fixed fragments; values are parameters
    terms = query_terms(query.text, lexical.VARIANT_WEIGHT)
    with read_connection().cursor() as cursor:
        cursor.execute(
            sql,
            [
                *terms, lexical.K1, lexical.B,
                *filters, POSTINGS_PER_TERM, POSTINGS_PER_TERM, depth,
            ],
        )  # fmt: skip
        return [(row[0], row[1]) for row in cursor.fetchall()]


def fulltext(query: Query, where: str, params: list[Any], depth: int) -> list[int]:
    """The BM25 ranking's claim ids, best first."""
    return [claim_id for claim_id, _ in lexical_scores(query, where, params, depth)]


# The query's distinct lexemes less its function words ("what", "does": a fact store
# never holds them, and a plain question must not lose its lexical list for them).
QUERY_WORDS = f"""
    SELECT DISTINCT word FROM unnest({LEXEMES}) AS word WHERE word <> ALL(%s::text[])
"""  # noqa: S608 - a fixed fragment; values are parameters


def term_coverage(text: str) -> float:
    """The share of the query's distinct lexemes, function words aside, that occur in any
    document the caller sees.

    1.0 for a query without such lexemes. An English question over Vietnamese
    paragraphs knows few of its words (XQuAD: median 0.25 without function words), a
    query in the corpus's language most (SciFact, XQuAD vi: 0.75 or more for 99 in 100
    queries); a plain English question over English facts, all but none.
    """
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT count(*), count(*) FILTER (WHERE EXISTS (
                SELECT 1 FROM retrieval_lexicaltermstat s WHERE s.term = q.word AND s.df > 0
            ))
            FROM ({QUERY_WORDS}) q
            """,  # noqa: S608 - a fixed fragment; values are parameters
            [text, lexical.PUNCTUATION, sorted(FUNCTION_WORDS)],
        )
        terms, known = cursor.fetchone()
    return known / terms if terms else 1.0


def understood(
    names: Sequence[str],
    predicates: Sequence[str],
    where: str,
    params: list[Any],
    depth: int,
    *,
    objects: Sequence[int] = (),
) -> list[int]:
    """The claims (that pass the filters) about the named entities and, when a relation was
    understood, of that relation: the most authoritative first, then the latest. With
    `objects` (a question asked backwards: "who reports to X"), the claims whose object
    is one of those entities instead."""
    about, values = understood_about(names, objects)
    relation = "AND d.predicate = ANY(%s)" if predicates else ""
    if predicates:
        values.append(list(predicates))
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT d.claim_id FROM retrieval_searchdocument d
            WHERE {about} {relation} AND {where}
            ORDER BY d.authority DESC, d.valid_from DESC, d.claim_id
            LIMIT %s
            """,  # noqa: S608 - fixed fragments; values are parameters
            [*values, *params, depth],
        )
        return [row[0] for row in cursor.fetchall()]


def understood_about(names: Sequence[str], objects: Sequence[int]) -> tuple[str, list[Any]]:
    """The condition on a document `d` that it is about the named entities (by subject
    name), or, with `objects`, that its claim's object is one of them; its values."""
    if objects:
        claims = "SELECT c.id FROM curation_claim c WHERE c.object_entity_id = ANY(%s)"
        return f"d.claim_id IN ({claims})", [list(objects)]
    return f"d.subject_key = ANY({SUBJECT_KEYS})", [list(names)]


def vector_literal(embedding: Sequence[float]) -> tuple[int, str]:
    """The query vector's dimension (one with an index) and its pgvector text form."""
    dim = len(embedding)
    if dim not in INDEXED_DIMENSIONS:
        raise ValueError(f"no vector index for dimension {dim}")
    return dim, "[" + ",".join(f"{x:.7g}" for x in embedding) + "]"


def vector(
    embedding: Sequence[float],
    where: str,
    params: list[Any],
    depth: int,
    *,
    model: str,
    companion: bool = False,
) -> list[tuple[int, float]]:
    """The nearest documents to the query's vector that pass the filters, nearest first,
    each with its cosine similarity to the query.

    Only documents embedded by the query's `model` compare: two models of one dimension
    (MiniLM and e5 are both 384) place texts in unrelated spaces. With `companion`, the
    vectors are the documents' second ones, by their workspace's companion model.

    The HNSW index is shared by every workspace of a dimension, and the filters
    (workspace under RLS, model, valid time) apply to what its scan yields. The scan
    goes on until enough rows pass, but only up to `hnsw.max_scan_tuples`: a small
    workspace in a large index (or among many dead index entries) can come back short.
    Then the filtered rows are ranked exactly instead: a short answer means there are
    few of them, so the exact ranking is cheap, and the list is complete. A caller who
    sees at most `EXACT_DOCUMENTS` documents is ranked exactly from the start, through
    the index on its groups: its cost follows its own documents, never the index's.
    """
    dim, literal = vector_literal(embedding)
    # The groups as values, not as the settings' function: the planner then knows how
    # few rows they hold and reads them through the index on the group.
    groups = sorted(rls.visible_groups())
    indexed = not groups or visible_documents() > EXACT_DOCUMENTS
    rows = "v" if companion else "d"
    mine, values = (
        ("", [model]) if indexed else (f"{rows}.group_id = ANY(%s) AND ", [groups, model])
    )
    if companion:
        source = (
            "retrieval_companionvector v JOIN retrieval_searchdocument d ON d.id = v.document_id"
        )
        own = f"{mine}v.dimension = {dim} AND v.model = %s"
    else:
        source, own = (
            "retrieval_searchdocument d",
            f"{mine}d.dimension = {dim} AND d.embedding_model = %s",
        )
    return nearest(
        Nearest(
            source=source,
            column="v.embedding" if companion else "d.embedding",
            filters=f"{own} AND {where}",
            values=[*values, *params],
            dim=dim,
        ),
        literal,
        depth,
        indexed=indexed,
    )


def centroid(
    claim_ids: Sequence[int], *, model: str, dim: int, companion: bool = False
) -> list[float] | None:
    """The mean of the claims' vectors by `model` (of `dim` dimensions; with `companion`,
    their companion vectors by that model), of the claims the caller sees; None when
    none of them has one. What a search moved towards its best hits reads
    (`Query.like`)."""
    if companion:
        sql_text = f"""
            SELECT avg(v.embedding::vector({dim}))::text
            FROM retrieval_companionvector v JOIN retrieval_searchdocument d ON d.id = v.document_id
            WHERE d.claim_id = ANY(%s) AND v.model = %s AND v.dimension = {dim}
        """  # noqa: S608 - `dim` is an int
    else:
        sql_text = f"""
            SELECT avg(d.embedding::vector({dim}))::text FROM retrieval_searchdocument d
            WHERE d.claim_id = ANY(%s) AND d.embedding_model = %s AND d.dimension = {dim}
        """  # noqa: S608 - `dim` is an int
    return mean_vector(sql_text, [list(claim_ids), model], dim)


def mean_vector(sql_text: str, values: list[Any], dim: int) -> list[float] | None:
    """The one vector `sql_text` selects as text (an `avg` of vectors), or None."""
    if dim not in INDEXED_DIMENSIONS:
        raise ValueError(f"no vector index for dimension {dim}")
    with read_connection().cursor() as cursor:
        cursor.execute(sql_text, values)
        row = cursor.fetchone()
    return [float(x) for x in json.loads(row[0])] if row and row[0] else None


# A caller who sees at most this many indexed documents has its vector lists ranked
# exactly (`vector`), never through the HNSW index every workspace shares. Beside a
# million-claim workspace, a 4,096-document one waited for the index scan to give up
# (`hnsw.max_scan_tuples`) before its exact ranking: 205 ms p50; exactly from the start,
# 9 ms (256 dimensions, 100 nearest; bench/scale.py's database, docs/benchmarks.md).
# About 2.5 microseconds a document: 10,000 cost some 25 ms, above which the index wins.
EXACT_DOCUMENTS = 10_000


def visible_documents() -> int:
    """The indexed documents of every group the caller sees: the sizes the postings'
    triggers keep exact per group (`retrieval_lexicalcorpus`), under row-level security."""
    with read_connection().cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(documents), 0) FROM retrieval_lexicalcorpus")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


class Nearest(NamedTuple):
    """Where a vector list reads: rows `d` of `source` that pass `filters` (with `values`),
    compared by `column` (an HNSW index over `column::vector(dim)` serves it)."""

    source: str
    column: str
    filters: str
    values: list[Any]
    dim: int


def nearest(
    where: Nearest, literal: str, depth: int, *, indexed: bool = True
) -> list[tuple[int, float]]:
    """The `depth` rows nearest the query vector (`literal`), nearest first, with their
    cosine similarities: from the HNSW index, or ranked exactly when the index scan came
    back short (or `indexed` is false: nothing indexes the column).

    The index scan's rows are sorted again (its iterative scan may yield them slightly
    out of order), so equal inputs give one order.
    """
    dim, column, source, filters = where.dim, where.column, where.source, where.filters
    distance = f"{column}::vector({dim}) <=> %s::vector({dim})"
    approximate = f"""
        WITH a AS MATERIALIZED (
            SELECT d.claim_id, {distance} AS distance
            FROM {source}
            WHERE {filters}
            ORDER BY distance, d.claim_id
            LIMIT %s
        )
        SELECT claim_id, distance FROM a ORDER BY distance, claim_id
    """  # noqa: S608 - dim is an int from a fixed set; the rest fixed fragments
    # The materialised filter set is ordered by sorting it: no index can serve the ORDER BY.
    exact = f"""
        WITH m AS MATERIALIZED (
            SELECT d.claim_id, {column} AS embedding FROM {source} WHERE {filters}
        )
        SELECT m.claim_id, m.embedding::vector({dim}) <=> %s::vector({dim}) AS distance
        FROM m
        ORDER BY distance, m.claim_id
        LIMIT %s
    """  # noqa: S608 - as above
    with read_connection().cursor() as cursor:
        rows: list[Any] = []
        if indexed:
            # Keep scanning the HNSW graph until enough rows pass the filters.
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(approximate, [literal, *where.values, depth])
            rows = cursor.fetchall()
        if len(rows) < depth:
            cursor.execute(exact, [*where.values, literal, depth])
            rows = cursor.fetchall()
        return [(row[0], 1.0 - row[1]) for row in rows]


def votes(claim_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """(up, down) per claim that has votes."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT claim_id, count(*) FILTER (WHERE helpful), count(*) FILTER (WHERE NOT helpful)"
            " FROM retrieval_feedback WHERE claim_id = ANY(%s) GROUP BY claim_id",
            [list(claim_ids)],
        )
        return {claim_id: (up, down) for claim_id, up, down in cursor.fetchall()}


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


_DOCUMENTS = f"""
    SELECT {", ".join(Candidate._fields[:-1])}, '' FROM retrieval_searchdocument
    WHERE claim_id = ANY(%s)
"""  # noqa: S608 - fixed column names
_DOCUMENTS_TEXT = _DOCUMENTS.replace(", ''", ", text", 1)


def documents(claim_ids: list[int], *, with_text: bool) -> dict[int, Candidate]:
    """The candidates' index rows, as plain tuples; their text only when stage 3 reads it."""
    with read_connection().cursor() as cursor:  # raw: the ORM's compilation cost more than the read
        cursor.execute(_DOCUMENTS_TEXT if with_text else _DOCUMENTS, [list(claim_ids)])
        return {row[0]: Candidate(*row) for row in cursor.fetchall()}


class Logged(NamedTuple):
    """One returned hit as the search log keeps it (`retrieval_searchhit`)."""

    group_id: str
    claim_id: int
    rank: int
    score: float
    signals: dict[str, float]
    weight_set_id: int | None
    weight_version: int


# Only rows of the groups the caller works in are written (the others were read from a
# scope above its own, read-only): filtered by the transaction's own setting, which is
# what row-level security checks the rows against.
_LOG = """
    INSERT INTO retrieval_searchhit (group_id, query_id, query_text, claim_id, rank, score,
                                     signals, user_id, weight_set_id, weight_version, created_at)
    SELECT h.group_id, %s, %s, h.claim_id, h.rank, h.score, h.signals::jsonb, %s,
           h.weight_set_id, h.weight_version, %s
    FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::float8[], %s::text[], %s::bigint[],
                %s::int[])
         AS h(group_id, claim_id, rank, score, signals, weight_set_id, weight_version)
    WHERE h.group_id = ANY(string_to_array(current_setting(%s, true), ','))
    RETURNING claim_id, id
"""


def log_hits(
    *,
    query_id: uuid.UUID,
    query_text: str,
    user_id: int | None,
    at: dt.datetime,
    hits: Sequence[Logged],
) -> dict[int, int]:
    """Store the hits in the search log in one statement; {claim id: hit id} of those
    written (the caller's own groups')."""
    if not hits:
        return {}
    columns = [list(column) for column in zip(*hits, strict=True)]
    columns[Logged._fields.index("signals")] = [json.dumps(hit.signals) for hit in hits]
    with connection.cursor() as cursor:
        cursor.execute(_LOG, [query_id, query_text, user_id, at, *columns, GROUPS_SETTING])
        return dict(cursor.fetchall())
