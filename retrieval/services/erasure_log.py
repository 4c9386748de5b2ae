"""The search log's part of an erasure: logged query texts that quote erased content.

A logged query is the caller's text, not the erased content, yet a search for a name
that only the erased document held keeps that name in the log. In the erasure's
transaction the query text of every logged hit of the workspace is redacted that
- has a term (a lexeme, made as the index makes them) that only the erased content held,
- or has any term of it, if its query returned an erased claim (whose hits are deleted;
  the query's hits on other claims keep their rows).
Kept context packs are the log's other copy of a query: those citing erased claims or
quoting erased episodes are deleted whole (`erasure`), and the others' query text is
redacted when it has a term only the erased content held.

The tombstone keeps, for the residual scan, those terms' keyed fingerprints (an HMAC
whose key derives from SECRET_KEY: a database dump alone cannot test names against
them) and the ids of the redacted queries; no text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.utils.crypto import salted_hmac

from curation.models import Claim, Tombstone
from retrieval.domain.lexical import PUNCTUATION
from retrieval.models import ContextPack, SearchHit
from retrieval.services.index import document_text
from retrieval.services.search.sql import LEXEMES

REDACTED = "[erased]"  # what a redacted query text reads
_TERM_SALT = "vera.retrieval.erasure.term-prints"  # names the key's one purpose


def _lexemes_of(column: str, pattern: str = "%s") -> str:
    """`LEXEMES` over a column rather than a parameter (the punctuation stays one)."""
    return LEXEMES % (column, pattern)


def term_print(term: str) -> str:
    """A term's keyed fingerprint: the scan recognises the term without the tombstone
    keeping it, and without the key nobody can try names against it."""
    return salted_hmac(_TERM_SALT, term, algorithm="sha256").hexdigest()


def searches_returning(claims: Sequence[int]) -> list[str]:
    """The logged queries that returned any of these claims (read before their hits go)."""
    rows = SearchHit.objects.filter(claim_id__in=claims).values_list("query_id", flat=True)
    return sorted({str(query_id) for query_id in rows})


_TERMS_OF_TEXTS = f"""
    SELECT DISTINCT w FROM unnest(%s::text[]) AS t(x), unnest({_lexemes_of("t.x")}) AS w
"""  # noqa: S608 - a fixed fragment; values are parameters


def _lexemes(texts: Sequence[str]) -> set[str]:
    """The terms of these texts, as the index makes a document's."""
    with connection.cursor() as cursor:
        cursor.execute(_TERMS_OF_TEXTS, [list(texts), PUNCTUATION])
        return {row[0] for row in cursor.fetchall()}


def _terms_kept(group_id: str, terms: set[str], kept: Sequence[int]) -> set[str]:
    """Of these terms, those the workspace still holds once the erased rows are deleted.

    Read from the postings, except the claims that only lose evidence: theirs still carry
    it until they are re-indexed, so their text is made again, as the index will make it.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT term FROM retrieval_lexicalterm"
            " WHERE group_id = %s AND term = ANY(%s) AND NOT claim_id = ANY(%s)",
            [group_id, sorted(terms), list(kept)],
        )
        held = {row[0] for row in cursor.fetchall()}
    claims = Claim.objects.filter(pk__in=kept).select_related("subject")
    return held | _lexemes([document_text(claim) for claim in claims.prefetch_related("evidence")])


# A hit's query is redacted if its text has a term only the erased content held, or if
# the query returned an erased claim and its text has any term of the erased content
# (a name whose words each stay somewhere else). Returning one is not enough: the
# vector lists return the nearest claims whatever the query says.
_REDACT = f"""
    UPDATE retrieval_searchhit AS h SET query_text = %(redacted)s
    FROM (
        SELECT id, {_lexemes_of("query_text", "%(punctuation)s")} AS words
        FROM retrieval_searchhit
        WHERE group_id = %(group_id)s AND query_text <> %(redacted)s
    ) AS w
    WHERE h.id = w.id AND (
        w.words && %(exclusive)s::text[]
        OR (h.query_id = ANY(%(queries)s::uuid[]) AND w.words && %(erased)s::text[])
    )
    RETURNING h.query_id
"""  # noqa: S608 - a fixed fragment; values are parameters


# A kept pack's query: the first half of the rule (a pack that cited erased content is
# deleted before this, so no pack here returned an erased claim).
_REDACT_PACKS = f"""
    UPDATE retrieval_contextpack SET query_text = %(redacted)s
    WHERE group_id = %(group_id)s AND query_text <> %(redacted)s
      AND {_lexemes_of("query_text", "%(punctuation)s")} && %(exclusive)s::text[]
"""  # noqa: S608 - a fixed fragment; values are parameters


def search_log_redact(
    *, group_id: str, texts: Sequence[str], kept: Sequence[int], queries: Sequence[str]
) -> tuple[dict[str, int], dict[str, Any]]:
    """Redact the workspace's logged query texts and kept packs' queries that quote erased
    content (after the deletion; `queries` returned erased claims); how many of each,
    and what the scan needs."""
    erased = _lexemes(texts)
    exclusive = erased - _terms_kept(group_id, erased, kept) if erased else set()
    values: dict[str, Any] = {
        "redacted": REDACTED, "group_id": group_id, "punctuation": PUNCTUATION,
        "exclusive": sorted(exclusive), "erased": sorted(erased), "queries": list(queries),
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(_REDACT, values)
        rows = cursor.fetchall()
        cursor.execute(_REDACT_PACKS, values)
        packs = cursor.rowcount
    gone = sorted({str(row[0]) for row in rows})  # the queries whose text went
    counts = {"query_texts_redacted": len(rows), "pack_queries_redacted": packs}
    return counts, {"term_prints": sorted(map(term_print, exclusive)), "queries": gone}


# The logged query texts of a workspace up to a time, each once: its hits, whether one
# is of the given queries, and its terms.
_LOGGED_TEXTS = f"""
    SELECT array_agg(id ORDER BY id), bool_or(query_id = ANY(%s::uuid[])),
           {_lexemes_of("query_text")}
    FROM retrieval_searchhit
    WHERE group_id = %s AND created_at <= %s AND query_text <> %s
    GROUP BY query_text
"""  # noqa: S608 - a fixed fragment; values are parameters


def search_log_residue(tombstone: Tombstone) -> list[str]:
    """Logged hits from before the erasure whose query text still holds an erased term,
    or still reads anything of a redacted query (ids, at most 20)."""
    prints = set(tombstone.cleanup.get("term_prints", []))
    with connection.cursor() as cursor:
        cursor.execute(
            _LOGGED_TEXTS,
            [
                list(tombstone.cleanup.get("queries", [])), PUNCTUATION,
                tombstone.group_id, tombstone.created_at, REDACTED,
            ],
        )  # fmt: skip
        rows = cursor.fetchall()
    erased = {term for term in {t for row in rows for t in row[2]} if term_print(term) in prints}
    found = [pk for ids, redacted, terms in rows if redacted or erased & set(terms) for pk in ids]
    return [str(pk) for pk in sorted(found)[:20]]


def pack_query_residue(tombstone: Tombstone) -> list[str]:
    """Kept context packs from before the erasure whose query text still holds an
    erased term (ids, at most 20)."""
    prints = set(tombstone.cleanup.get("term_prints", []))
    if not prints:
        return []
    packs = ContextPack.objects.filter(
        group_id=tombstone.group_id, created_at__lte=tombstone.created_at
    ).exclude(query_text=REDACTED)
    rows = list(packs.values_list("pk", "query_text"))
    terms = _lexemes_each([text for _, text in rows])
    found = [pk for (pk, _), words in zip(rows, terms, strict=True) if prints & words]
    return [str(pk) for pk in sorted(found)[:20]]


_TERMS_EACH = f"""
    SELECT {_lexemes_of("t.x")} FROM unnest(%s::text[]) WITH ORDINALITY AS t(x, n) ORDER BY n
"""  # noqa: S608 - a fixed fragment; values are parameters


def _lexemes_each(texts: Sequence[str]) -> list[set[str]]:
    """Each text's terms' fingerprints, in order."""
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_TERMS_EACH, [PUNCTUATION, list(texts)])
        return [set(map(term_print, row[0] or [])) for row in cursor.fetchall()]
