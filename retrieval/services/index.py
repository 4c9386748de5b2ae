"""The search index: a projection of published claims, fed by the outbox, rebuildable."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from django.db import connection, transaction
from django.utils import timezone

from curation.domain.tiers import VERIFICATION_SCORE, ClaimStatus, Verification
from curation.domain.validity import EVER_VALID, VALID_NOW
from curation.models import Claim, OutboxJob
from curation.ports import Embedder
from curation.services.entities import canonical
from retrieval.domain import lexical
from retrieval.models import GroupEmbedding, SearchDocument

# What the index keeps: what is valid now, and what was valid before (for as_of): a
# superseded or retracted fact is hidden now but found as of a time it was valid.
INDEXED_STATUSES = tuple(sorted(EVER_VALID))
# A document's searchable text is kept whole up to this many characters (about 4,000
# tokens): the embedders read it in windows, so the end of a long passage is found too.
# Past it, a runaway record is cut rather than costing minutes of embedding.
MAX_TEXT = 16_000


class DimensionMismatch(Exception):
    """A group was built with another embedding model or dimension."""


# The claims' postings, rebuilt from their documents' tsvectors (the very lexemes the
# `simple` configuration made), with BM25's term-frequency part at the group's current
# average length as the impact that orders each term's postings.
_POSTINGS_INSERT = """
    INSERT INTO retrieval_lexicalterm (
        group_id, claim_id, term, tf, doc_len, published, impact
    )
    SELECT d.group_id, d.claim_id, t.term, t.tf, l.doc_len, d.status = %(valid_now)s,
           t.tf * (%(k1)s + 1) / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * l.doc_len
               / coalesce(c.tokens::float8 / nullif(c.documents, 0), l.doc_len)))
    FROM retrieval_searchdocument d
    CROSS JOIN LATERAL (
        SELECT lexeme AS term, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(d.tsv)
    ) t
    CROSS JOIN LATERAL (
        SELECT sum(coalesce(array_length(positions, 1), 1)) AS doc_len FROM unnest(d.tsv)
    ) l
    LEFT JOIN retrieval_lexicalcorpus c ON c.group_id = d.group_id
    WHERE d.claim_id = ANY(%(ids)s)
"""


def document_text(claim: Claim) -> str:
    """The fact, what it is about, and the distinct evidence it cites, in one searchable text.

    The subject's name comes first unless the fact already says it: a passage of a
    document is searchable by the document's title, as a reader would find it.
    """
    subject = _subject_name(claim)
    parts = (
        [claim.fact_text]
        if subject.casefold() in claim.fact_text.casefold()
        else [subject, claim.fact_text]
    )
    for evidence in claim.evidence.all():  # prefetched by every caller: no query per claim
        if evidence.snippet and evidence.snippet not in parts:
            parts.append(evidence.snippet)
    return "\n".join(parts)[:MAX_TEXT]


def _subject_name(claim: Claim) -> str:
    """The name of what the claim is about, after merges (a merge re-indexes its claims)."""
    return canonical(claim.subject).canonical_name


def group_embedding_pin(*, group_id: str, embedder: Embedder) -> GroupEmbedding:
    """The group's recorded model and dimension; the first write records them."""
    pin, _ = GroupEmbedding.objects.get_or_create(
        group_id=group_id, defaults={"model": embedder.model, "dimension": embedder.dimension}
    )
    if (pin.model, pin.dimension) != (embedder.model, embedder.dimension):
        raise DimensionMismatch(
            f"group {group_id} is indexed with {pin.model} ({pin.dimension}); this write uses "
            f"{embedder.model} ({embedder.dimension}). Reprocess the group to change models."
        )
    return pin


@transaction.atomic
def index_claims(*, claim_ids: list[int], embedder: Embedder) -> int:
    """Upsert (or drop) the index documents of these claims; returns how many are indexed."""
    claims = list(
        Claim.objects.filter(pk__in=claim_ids)
        .select_related("subject")
        .prefetch_related("evidence")
    )
    keep = [c for c in claims if c.status in INDEXED_STATUSES]
    # Postings first: their triggers keep the document frequencies exact.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM retrieval_lexicalterm WHERE claim_id = ANY(%s)", [claim_ids])
    SearchDocument.objects.filter(claim_id__in=set(claim_ids) - {c.pk for c in keep}).delete()
    if not keep:
        return 0
    for group_id in sorted({c.group_id for c in keep}):
        group_embedding_pin(group_id=group_id, embedder=embedder)
    texts = [document_text(claim) for claim in keep]
    vectors = embedder.embed(texts)
    SearchDocument.objects.bulk_create(
        [
            _document(claim, text, vector, embedder)
            for claim, text, vector in zip(keep, texts, vectors, strict=True)
        ],
        update_conflicts=True,
        unique_fields=["claim"],
        update_fields=_DOCUMENT_FIELDS,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            _POSTINGS_INSERT,
            {
                "k1": lexical.K1,
                "b": lexical.B,
                "ids": [c.pk for c in keep],
                "valid_now": VALID_NOW.value,
            },
        )
    return len(keep)


_DOCUMENT_FIELDS = [
    "group_id", "text", "embedding", "dimension", "embedding_model", "status", "predicate",
    "subject_name", "source_id", "tier", "authority", "verification", "confidence",
    "valid_from", "valid_to", "indexed_at",
]  # fmt: skip


def _document(claim: Claim, text: str, vector: list[float], embedder: Embedder) -> SearchDocument:
    return SearchDocument(
        claim=claim,
        group_id=claim.group_id,
        text=text,
        embedding=vector,
        dimension=embedder.dimension,
        embedding_model=embedder.model,
        status=claim.status,
        predicate=claim.predicate,
        subject_name=_subject_name(claim)[:300],
        source_id=claim.source_id,
        tier=claim.tier,
        authority=claim.authority,
        verification=VERIFICATION_SCORE[Verification(claim.verification)],
        confidence=claim.confidence,
        valid_from=claim.valid_from,
        valid_to=_valid_to(claim),
    )


def _valid_to(claim: Claim) -> dt.datetime | None:
    """When the fact stopped being valid; an ended fact without an end ended when indexed.

    Supersession and retraction set `valid_to`; should a writer ever forget, the fact
    must not come back for every later `as_of`, so it counts as ended now.
    """
    if claim.valid_to is not None or claim.status == ClaimStatus.PUBLISHED:
        return claim.valid_to
    return max(timezone.now(), claim.valid_from)


def index_prepare(jobs: list[OutboxJob], *, embedder: Embedder) -> None:
    """Embed a batch's texts in one call, so each job's own embedding is a cache hit."""
    ids = [int(job.payload["claim_id"]) for job in jobs if "claim_id" in job.payload]
    claims = (
        Claim.objects.filter(pk__in=ids, status__in=INDEXED_STATUSES)
        .select_related("subject")
        .prefetch_related("evidence")
    )
    texts = [document_text(claim) for claim in claims]
    if texts:
        embedder.embed(texts)


def index_job(job: OutboxJob, *, embedder: Embedder) -> None:
    """Outbox handler: (re)index the job's claim, whatever its kind (project or retire)."""
    index_claims(claim_ids=[int(job.payload["claim_id"])], embedder=embedder)


def index_jobs(jobs: list[OutboxJob], *, embedder: Embedder) -> None:
    """Outbox batch handler: what `index_job` does for each job, in one bulk write.

    `index_prepare` has embedded the texts already, so they are cache hits here and
    the write transaction stays short. Within a batch, postings are ordered by the
    group's average length before it (as `index_rebuild` does), not claim by claim.
    """
    index_claims(claim_ids=[int(job.payload["claim_id"]) for job in jobs], embedder=embedder)


def index_rebuild(
    *,
    embedder: Embedder,
    batch: int = 256,
    on_progress: Callable[[int, int], None] | None = None,
) -> int:
    """Re-index every claim visible to the tenant context (after a model change, a restore).

    `on_progress(done, total)` hears after each batch how many claims have been through.
    """
    ids = list(
        Claim.objects.filter(status__in=INDEXED_STATUSES)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    done = 0
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        done += index_claims(claim_ids=chunk, embedder=embedder)
        if on_progress is not None:
            on_progress(start + len(chunk), len(ids))
    return done
