"""The search index: a projection of published claims, fed by the outbox, rebuildable."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from curation.domain.conversation import Said, statement_said
from curation.domain.highlight import PASSAGE_PREDICATE
from curation.domain.sources import ConnectorKind
from curation.domain.tiers import VERIFICATION_SCORE, ClaimStatus, Verification
from curation.domain.validity import EVER_VALID, VALID_NOW
from curation.models import Claim, OutboxJob, Source
from curation.ports import Embedder
from curation.services.entities import canonical
from retrieval.domain import lexical
from retrieval.models import CompanionVector, GroupEmbedding, SearchDocument
from retrieval.ports import EmbedderCatalog
from retrieval.services.calibration import try_lock
from retrieval.services.embedding import (
    companion_missing,
    group_companion,
    group_provider,
    pin_provider,
    stale_documents,
)
from tenants import rls
from tenants.selectors import principal_system
from tenants.services.audit import audit_record

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
        group_id, claim_id, term, tf, doc_len, published, valid_from, valid_to, impact
    )
    SELECT d.group_id, d.claim_id, t.term, t.tf, l.doc_len, d.status = %(valid_now)s,
           d.valid_from, d.valid_to,
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


# The published passage before each claim's in its episode (by where each is cited).
_TURN_BEFORE_SQL = f"""
    SELECT h.claim_id, before.fact_text
    FROM curation_evidence h
    CROSS JOIN LATERAL (
        SELECT c.fact_text FROM curation_evidence e
        JOIN curation_claim c ON c.id = e.claim_id
        WHERE e.episode_id = h.episode_id AND e.start < h.start
          AND c.predicate = '{PASSAGE_PREDICATE}' AND c.status = '{VALID_NOW.value}'
        ORDER BY e.start DESC LIMIT 1
    ) before
    WHERE h.claim_id = ANY(%s) AND h.start IS NOT NULL
    ORDER BY h.claim_id, h.episode_id
"""  # noqa: S608 - constants, no input


def companion_texts(claims: Sequence[Claim], texts: Sequence[str]) -> list[str]:
    """What a companion model embeds for these claims' documents (`texts`): each text,
    and a conversation's turn after the turn before it that same day, its context.

    A turn answers or takes up the one before ("Yes, every morning!" after "Do you still
    run?"): read alone it says little; with its context it is found by what it answers.
    The two turns are read as said ("Speaker: words"), without the day and the
    conversation's title the indexed text carries. Measured over LoCoMo's turns (their
    indexed texts' full text and MiniLM fused with e5; evidence in the top 40): e5
    reading each turn so after the one before it finds 0.848 of the evidence and 0.636
    of multi-hop evidence, against 0.799 and 0.606 reading the indexed text alone, and
    0.839 and 0.607 reading the two indexed texts (MiniLM reading turns in context loses
    open-domain questions, so the workspace's own model reads the turn alone). The
    context is a ranking hint, never shown: the document's text, its full text and its
    own model's vector stay the turn's.
    """
    said = {
        claim.pk: found
        for claim in claims
        if claim.predicate == PASSAGE_PREDICATE
        and (found := statement_said(claim.fact_text)) is not None
    }
    if not said:
        return list(texts)
    before: dict[int, str] = {}
    with connection.cursor() as cursor:
        cursor.execute(_TURN_BEFORE_SQL, [list(said)])
        for claim_id, text in cursor.fetchall():
            before.setdefault(claim_id, text)
    out = []
    for claim, text in zip(claims, texts, strict=True):
        turn, context = said.get(claim.pk), before.get(claim.pk)
        earlier = statement_said(context) if context else None
        if turn is not None and earlier is not None and earlier.day == turn.day:
            # Two lines as they were said: the day and the conversation's title, the
            # same for every turn of the day, would only pull the turns together.
            out.append(f"{_as_said(earlier)}\n{_as_said(turn)}")
        else:
            out.append(text)
    return out


def _as_said(said: Said) -> str:
    """A turn as it was said: "Caroline: I went there yesterday." """
    return f"{said.speaker}: {said.words.removeprefix(f'{said.speaker} said: ')}"


# Either one embedder for every group, or the offered models, each group its own.
Embedders = Embedder | EmbedderCatalog

CATCH_UP_BATCH = 256  # claims re-embedded per transaction after a model switch


def group_embedding_pin(
    *, group_id: str, embedder: Embedder, provider: str = "", companion: str = ""
) -> GroupEmbedding:
    """The group's recorded model and dimension; the first write records them (and the
    operator's default companion model)."""
    pin, _ = GroupEmbedding.objects.get_or_create(
        group_id=group_id,
        defaults={
            "model": embedder.model,
            "dimension": embedder.dimension,
            "provider": provider,
            "companion": companion,
        },
    )
    if (pin.model, pin.dimension) != (embedder.model, embedder.dimension):
        raise DimensionMismatch(
            f"group {group_id} is indexed with {pin.model} ({pin.dimension}); this write uses "
            f"{embedder.model} ({embedder.dimension}). Reprocess the group to change models."
        )
    return pin


def _for_group(embedders: Embedders, group_id: str) -> tuple[Embedder, str]:
    """The embedder for a group's documents, and the provider name its pin records."""
    if isinstance(embedders, EmbedderCatalog):
        provider = group_provider(group_id, embedders)
        return embedders.passage(provider), provider
    return embedders, ""


@transaction.atomic
def index_claims(*, claim_ids: list[int], embedder: Embedders) -> int:
    """Upsert (or drop) the index documents of these claims; returns how many are indexed.

    With a catalog each group's claims are embedded with the group's own model.
    """
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
    documents = []
    companions: list[tuple[Embedder, list[int], list[list[float]]]] = []
    for group_id in sorted({c.group_id for c in keep}):
        group_embedder, provider = _for_group(embedder, group_id)
        pin = group_embedding_pin(
            group_id=group_id, embedder=group_embedder, provider=provider,
            companion=_default_companion(embedder, group_embedder),
        )  # fmt: skip
        if isinstance(embedder, EmbedderCatalog) and not pin.companion:
            _companion_for_conversations(pin, embedder, group_embedder)
        claims_of_group = [claim for claim in keep if claim.group_id == group_id]
        texts = [document_text(claim) for claim in claims_of_group]
        # A batch may hold several workspaces' jobs: each one's embedding is its own cost.
        with rls.usage_for(group_id):
            vectors = group_embedder.embed(texts)
            companion = _companion(embedder, group_id)
            if companion is not None:
                ids = [claim.pk for claim in claims_of_group]
                told = companion_texts(claims_of_group, texts)
                companions.append((companion, ids, companion.embed(told)))
        documents += [
            _document(claim, text, vector, group_embedder)
            for claim, text, vector in zip(claims_of_group, texts, vectors, strict=True)
        ]
    SearchDocument.objects.bulk_create(
        documents,
        update_conflicts=True,
        unique_fields=["claim"],
        update_fields=_DOCUMENT_FIELDS,
    )
    for companion, ids, vectors in companions:
        _companion_write(companion, ids, vectors)
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


def _default_companion(embedders: Embedders, own: Embedder) -> str:
    """The companion a new workspace gets: the operator's, if offered and another model."""
    return _offered_companion(embedders, own, settings.VERA_EMBEDDER__COMPANION)


def _offered_companion(embedders: Embedders, own: Embedder, wanted: str) -> str:
    """`wanted` if it is an offered model other than the workspace's own, else ""."""
    if not wanted or not isinstance(embedders, EmbedderCatalog):
        return ""
    if wanted not in embedders.choices() or embedders.passage(wanted).model == own.model:
        return ""
    return str(wanted)


def _companion_for_conversations(
    pin: GroupEmbedding, catalog: EmbedderCatalog, own: Embedder
) -> None:
    """A workspace that holds a conversation source, without a companion that an admin
    chose or removed, gets VERA_EMBEDDER__CONVERSATION_COMPANION (audited: the index
    did it, and why). Its new documents get both vectors at once, its older ones from
    `index_catch_up`.

    Turns of a conversation are short, casual and say little by their own words: a second
    model finds what one misses (bench.memory: multi-hop evidence in a 1,000-token pack
    0.510 with MiniLM alone, 0.555 with the e5 companion), worth embedding them twice.
    """
    if pin.companion_chosen_at is not None:
        return
    wanted = _offered_companion(catalog, own, settings.VERA_EMBEDDER__CONVERSATION_COMPANION)
    if not wanted:
        return
    holds = Source.objects.filter(group_id=pin.group_id, kind=ConnectorKind.CONVERSATION)
    if not holds.exists():
        return
    if not GroupEmbedding.objects.filter(pk=pin.pk, companion="").update(companion=wanted):
        return  # another writer set one meanwhile
    pin.companion = wanted
    model = catalog.passage(wanted).model
    audit_record(
        actor=principal_system("index", group_ids=[pin.group_id]),
        group_id=pin.group_id,
        action="embedding.companion",
        target=("groupembedding", pin.group_id),
        data={
            "from": None,
            "to": wanted,
            "model": model,
            "to_embed": companion_missing(pin.group_id, model).count(),
            "removed": 0,
            "reason": "the workspace holds a conversation source "
            "(VERA_EMBEDDER__CONVERSATION_COMPANION)",
        },
    )


def _companion(embedders: Embedders, group_id: str) -> Embedder | None:
    """The group's companion embedder (a catalog's groups only: it names the provider)."""
    if isinstance(embedders, EmbedderCatalog):
        return group_companion(group_id, embedders)
    return None


def _companion_write(embedder: Embedder, claim_ids: list[int], vectors: list[list[float]]) -> None:
    """Upsert the companion vectors of these claims' documents (written just before)."""
    documents = {
        claim_id: (document_id, group_id)
        for claim_id, document_id, group_id in SearchDocument.objects.filter(
            claim_id__in=claim_ids
        ).values_list("claim_id", "id", "group_id")
    }
    CompanionVector.objects.bulk_create(
        [
            CompanionVector(
                group_id=documents[claim_id][1],
                document_id=documents[claim_id][0],
                model=embedder.model,
                dimension=embedder.dimension,
                embedding=vector,
            )
            for claim_id, vector in zip(claim_ids, vectors, strict=True)
        ],
        update_conflicts=True,
        unique_fields=["document", "model"],
        update_fields=["group_id", "dimension", "embedding", "indexed_at"],
    )


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


def index_prepare(jobs: list[OutboxJob], *, embedder: Embedders) -> None:
    """Embed a batch's texts (one call per model), so each job's embedding is a cache hit."""
    ids = [int(job.payload["claim_id"]) for job in jobs if "claim_id" in job.payload]
    claims = list(
        Claim.objects.filter(pk__in=ids, status__in=INDEXED_STATUSES)
        .select_related("subject")
        .prefetch_related("evidence")
    )
    for group_id in sorted({claim.group_id for claim in claims}):
        of_group = [claim for claim in claims if claim.group_id == group_id]
        texts = [document_text(claim) for claim in of_group]
        _for_group(embedder, group_id)[0].embed(texts)
        companion = _companion(embedder, group_id)
        if companion is not None:
            companion.embed(companion_texts(of_group, texts))


def index_job(job: OutboxJob, *, embedder: Embedders) -> None:
    """Outbox handler: (re)index the job's claim, whatever its kind (project; legacy: retire)."""
    index_claims(claim_ids=[int(job.payload["claim_id"])], embedder=embedder)


def index_jobs(jobs: list[OutboxJob], *, embedder: Embedders) -> None:
    """Outbox batch handler: what `index_job` does for each job, in one bulk write.

    `index_prepare` has embedded the texts already, so they are cache hits here and
    the write transaction stays short. Within a batch, postings are ordered by the
    group's average length before it (as `index_rebuild` does), not claim by claim.
    """
    index_claims(claim_ids=[int(job.payload["claim_id"]) for job in jobs], embedder=embedder)


def index_rebuild(
    *,
    embedder: Embedders,
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


def index_catch_up(
    *, group_id: str, catalog: EmbedderCatalog, limit: int = 4 * CATCH_UP_BATCH
) -> int:
    """Re-embed up to `limit` of the group's documents still on a previous model, then
    give those without one a vector by the group's companion model (if it has one).

    Each batch commits on its own, so the work resumes where it stopped after a crash
    or a redeploy, and a document the outbox re-indexed meanwhile is simply not stale
    any more. A batch holds the group's catch-up lock: a second worker on the same
    group stops instead of embedding the same texts. Returns how many claims were
    re-indexed.
    """
    pin = GroupEmbedding.objects.filter(group_id=group_id).first()
    if pin is None:
        return 0
    embedder = catalog.passage(pin_provider(pin, catalog))
    done = 0
    while done < limit:
        with transaction.atomic():
            if not try_lock("index-catch-up", group_id):
                break
            stale = stale_documents(group_id, embedder.model).order_by("claim_id")
            ids = list(stale.values_list("claim_id", flat=True)[:CATCH_UP_BATCH])
            if not ids:
                break
            # A claim no longer indexable (retracted meanwhile) loses its document here.
            index_claims(claim_ids=ids, embedder=catalog)
        done += len(ids)
    companion = group_companion(group_id, catalog) if pin.companion else None
    while companion is not None and done < limit:
        with transaction.atomic():
            if not try_lock("index-catch-up", group_id):
                break
            missing = companion_missing(group_id, companion.model).order_by("claim_id")
            rows = list(missing.values_list("claim_id", flat=True)[:CATCH_UP_BATCH])
            if not rows:
                break
            claims = (
                Claim.objects.filter(pk__in=rows)
                .select_related("subject")
                .prefetch_related("evidence")
                .order_by("pk")
            )
            ids = [claim.pk for claim in claims]
            texts = [document_text(claim) for claim in claims]
            vectors = companion.embed(companion_texts(list(claims), texts))
            _companion_write(companion, ids, vectors)
        done += len(rows)
    return done


def groups_to_catch_up() -> list[tuple[str, bool]]:
    """(group, has stale documents) of the workspaces the catch-up may have work for,
    across every group in one query through the system finder `vera_groups_to_catch_up`:
    those with documents on another model than their pin, and those with a companion
    model (whether a companion vector is missing is for `index_catch_up` to find, in a
    tenant context of that group alone)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT group_id, stale, companion FROM vera_groups_to_catch_up()")
        return [(group_id, stale) for group_id, stale, companion in cursor.fetchall()
                if stale or companion]  # fmt: skip
