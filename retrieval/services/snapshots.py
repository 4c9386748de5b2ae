"""Knowledge snapshots: a workspace's retrieval inputs, copied at one instant and sealed.

A workspace admin takes one (`snapshot_take`); a maintenance worker builds it
(`snapshot_build`): in ONE repeatable-read transaction it copies the workspace's index
documents (every status, so `as_of` works inside it), their postings and the votes on
them, with each hit's card (fact and citations), pins what ranks them and seals the lot
with a checksum (the context-pack assembler's version too: a pack of the snapshot is
refused by another). A search of the snapshot (`snapshot_search`) runs the same pipeline
over those copies with the pinned models, weights, fusion and reranker, ranking recency
as of the instant it was taken, so it gives the same answer whenever it is asked.

It fails closed: a snapshot still building, failed, whose content no longer matches its
checksum, or whose pins this deployment cannot honour (a model not offered, another
reranker, another ranker version) is refused with the reason, never searched with
something else.

Erasure is the one change a sealed snapshot takes (`snapshots_forget`, inside the
erasure's transaction): documents of erased claims, and documents quoting an erased
episode, leave every snapshot of the workspace, which is re-sealed with a note. A build
running meanwhile is made to fail its serialisation and starts again after the erasure.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Prefetch
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.names import DEFAULT_FUNCTIONAL_PREDICATES
from curation.domain.ontology import Ontology
from curation.domain.validity import VALID_NOW
from curation.models import Claim, Evidence
from curation.selectors import ontology_at, ontology_for
from kernel.names import name_refusal
from retrieval.domain import lexical, ranking
from retrieval.domain.context import ASSEMBLER_VERSION
from retrieval.domain.query import Query
from retrieval.domain.results import Result
from retrieval.models import GroupEmbedding, SearchDocument, Snapshot, SnapshotDocument
from retrieval.ports import EmbedderCatalog, Reranking
from retrieval.selectors import (
    Citation,
    CitedHit,
    CitedResult,
    citation_of,
    cited_result,
    object_text,
    weights_active,
)
from retrieval.services.embedding import pin_provider
from retrieval.services.search import pipeline, sql
from retrieval.services.search.snapshot_sql import SnapshotIndex
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)

BUILD_BATCH = 2000  # documents copied per statement


class SnapshotRefused(Exception):
    """A snapshot that cannot be taken or searched as asked; the message says why."""


# --- Taking one ------------------------------------------------------------------------


SNAPSHOT_ADMINS_ONLY = "taking a snapshot needs the admin role in a workspace"


def snapshot_take(*, actor: Principal, group_id: str, name: str, reason: str = "") -> Snapshot:
    """Record a snapshot to build (workspace admin); the caller queues the build after commit."""
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("taking a snapshot needs the admin role in this workspace")
    name = name.strip()
    if not name:
        raise SnapshotRefused("name the snapshot: it is how its searches are told apart")
    if refusal := name_refusal(name) or name_refusal(reason, field="reason"):
        raise SnapshotRefused(refusal)
    snapshot = Snapshot.objects.create(
        group_id=group_id, name=name[:200], reason=reason.strip()[:500], created_by=actor.label
    )
    audit_record(
        actor=actor, group_id=group_id, action="snapshot.take", target=("snapshot", snapshot.pk),
        data={"name": snapshot.name, "reason": snapshot.reason},
    )  # fmt: skip
    return snapshot


def snapshots_building() -> list[tuple[int, str]]:
    """(id, group) of the snapshots waiting to be built, across every group: one query
    through the system finder `vera_snapshots_building`; each build then runs in a
    tenant context of its own group."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_snapshots_building()")
        return [(pk, group_id) for pk, group_id in cursor.fetchall()]


@dataclass(frozen=True)
class Pinning:
    """What a build pins besides the workspace's own settings (from the composition root)."""

    catalog: EmbedderCatalog
    reranking: Reranking | None
    fusion: Mapping[str, float]


def snapshot_build(snapshot_id: int, *, actor: Principal, pinning: Pinning) -> Snapshot | None:
    """Copy, pin and seal one snapshot in one repeatable-read transaction.

    Runs outside any transaction (a repeatable-read one must begin with its own first
    statement). Returns the sealed snapshot, or None when there was nothing to build (not
    found, or built already). A failure marks it failed with the error; a serialisation
    failure (an erasure in the workspace meanwhile) leaves it to the next attempt.
    """
    if connection.in_atomic_block:
        raise RuntimeError("a snapshot is built in a transaction of its own")
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            with rls.tenant_context(actor):
                return snapshot_copy(snapshot_id, pinning)
    except Exception as error:
        if _serialisation_failure(error):
            logger.info("snapshot %s: the workspace changed under the copy; retried", snapshot_id)
            raise
        logger.exception("snapshot %s failed", snapshot_id)
        with rls.tenant_context(actor):
            Snapshot.objects.filter(pk=snapshot_id, status=Snapshot.Status.BUILDING).update(
                status=Snapshot.Status.FAILED, last_error=f"{type(error).__name__}: {error}"[:2000]
            )
        raise


def _serialisation_failure(error: BaseException) -> bool:
    cause = error.__cause__ or error
    return getattr(cause, "sqlstate", None) == "40001"


def snapshot_copy(snapshot_id: int, pinning: Pinning) -> Snapshot | None:
    """The build's work, in the caller's transaction (`snapshot_build` makes it a
    repeatable-read one, so that every statement copies the same instant)."""
    snapshot = Snapshot.objects.select_for_update().filter(pk=snapshot_id).first()
    if snapshot is None or snapshot.status != Snapshot.Status.BUILDING:
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")  # the repeatable-read transaction's instant
        taken_at = cursor.fetchone()[0]
    group_id = snapshot.group_id
    pins = _pins(group_id, pinning)
    claim_ids = list(
        SearchDocument.objects.filter(group_id=group_id).order_by("claim_id")
        .values_list("claim_id", flat=True)
    )  # fmt: skip
    for start in range(0, len(claim_ids), BUILD_BATCH):
        _copy_documents(snapshot, claim_ids[start : start + BUILD_BATCH], pins)
    with connection.cursor() as cursor:
        cursor.execute(
            _POSTINGS_COPY,
            {"id": snapshot.pk, "k1": lexical.K1, "b": lexical.B, "valid_now": VALID_NOW},
        )
    snapshot.taken_at = taken_at
    snapshot.pins = pins
    snapshot.ontology_version = pins["predicates"]["ontology_version"]
    snapshot.assembler_version = pins["assembler_version"]
    snapshot.counts = _counts(snapshot.pk)
    _seal(snapshot)
    # Not `generation`: the copy's own statements have moved it in the row.
    snapshot.save(
        update_fields=[
            "taken_at", "pins", "ontology_version", "assembler_version", "counts", "checksum",
            "status", "sealed_at",
        ]
    )  # fmt: skip
    logger.info("snapshot %s of %s sealed: %s", snapshot.pk, group_id, snapshot.counts)
    return snapshot


# The copied documents' postings, each with its impact at the snapshot's own average
# length (what `counts` reports: tokens over documents with postings) and its
# document's status and validity; their triggers count the document frequencies.
_POSTINGS_COPY = """
    WITH p AS (
        SELECT t.group_id, t.term, t.claim_id, t.tf, t.doc_len, d.status, d.valid_from,
               d.valid_to
        FROM retrieval_lexicalterm t
        JOIN retrieval_snapshotdocument d ON d.snapshot_id = %(id)s AND d.claim_id = t.claim_id
    ),
    c AS (
        SELECT sum(doc_len)::float8 / nullif(count(*), 0) AS avg_len
        FROM (SELECT DISTINCT ON (claim_id) doc_len FROM p) x
    )
    INSERT INTO retrieval_snapshotterm (
        group_id, snapshot_id, term, claim_id, tf, doc_len, impact, published, valid_from,
        valid_to
    )
    SELECT p.group_id, %(id)s, p.term, p.claim_id, p.tf, p.doc_len,
           p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.doc_len / c.avg_len)),
           p.status = %(valid_now)s, p.valid_from, p.valid_to
    FROM p CROSS JOIN c
"""


def _pins(group_id: str, pinning: Pinning) -> dict[str, Any]:
    """The models, predicates (and the ontology's version), weights, fusion, reranker and
    ranker the snapshot ranks with."""
    pin = GroupEmbedding.objects.filter(group_id=group_id).first()
    choice = weights_active([group_id]).get(group_id, ranking.DEFAULT_CHOICE)
    functional = settings.VERA_ONTOLOGY__FUNCTIONAL_PREDICATES or DEFAULT_FUNCTIONAL_PREDICATES
    present = SearchDocument.objects.filter(group_id=group_id).values_list("predicate", flat=True)
    reranking = pinning.reranking
    return {
        "embedding": (
            {
                "provider": pin_provider(pin, pinning.catalog),
                "model": pin.model,
                "dimension": pin.dimension,
                "companion": pin.companion,
            }
            if pin is not None
            else None
        ),
        "predicates": {
            "functional": sorted(functional),
            "present": sorted(set(present)),
            # What questions were understood with: read back by `snapshot_ontology`.
            "ontology_version": ontology_for(group_id).version,
        },
        "weights": {
            "version": choice.version,
            "set_id": choice.set_id,
            "weights": choice.weights.as_dict(),
        },
        "fusion": dict(sorted(pinning.fusion.items())),
        "reranker": (
            {
                "model": reranking.reranker.model,
                "top_n": reranking.top_n,
                "weight": reranking.weight,
            }
            if reranking is not None
            else None
        ),
        "ranker_version": ranking.RANKER_VERSION,
        # How its context packs are assembled (`context_pack` refuses another version).
        "assembler_version": ASSEMBLER_VERSION,
        "half_life_s": ranking.HALF_LIFE_S,
        # How many of its best postings each query term reads (their order is under the seal).
        "postings_per_term": sql.POSTINGS_PER_TERM,
        # How much a query word's other forms weigh (`lexical.inflections`).
        "lexical_variant_weight": lexical.VARIANT_WEIGHT,
    }


def _copy_documents(snapshot: Snapshot, claim_ids: list[int], pins: Mapping[str, Any]) -> None:
    """One batch of index documents with their votes, companion vectors and cards."""
    companion = (pins["embedding"] or {}).get("companion", "")
    documents = SearchDocument.objects.filter(claim_id__in=claim_ids)
    companions = dict(
        documents.filter(companion_vectors__model=companion).values_list(
            "claim_id", "companion_vectors__embedding"
        )
    ) if companion else {}  # fmt: skip
    votes = sql.votes(claim_ids)
    claims = (
        Claim.objects.select_related("subject", "object_entity", "source")
        .prefetch_related(
            Prefetch("evidence", Evidence.objects.select_related("episode__source").order_by("pk"))
        )
        .in_bulk(claim_ids)
    )
    rows = []
    for doc in documents:
        claim = claims[doc.claim_id]
        evidence = list(claim.evidence.all())
        up, down = votes.get(doc.claim_id, (0, 0))
        rows.append(
            SnapshotDocument(
                group_id=doc.group_id,
                snapshot=snapshot,
                claim_id=doc.claim_id,
                text=doc.text,
                embedding=doc.embedding,
                dimension=doc.dimension,
                embedding_model=doc.embedding_model,
                companion=companions.get(doc.claim_id),
                status=doc.status,
                predicate=doc.predicate,
                subject_name=doc.subject_name,
                source_id=doc.source_id,
                tier=doc.tier,
                authority=doc.authority,
                verification=doc.verification,
                confidence=doc.confidence,
                valid_from=doc.valid_from,
                valid_to=doc.valid_to,
                up=up,
                down=down,
                episode_ids=sorted({e.episode_id for e in evidence}),
                card=_card(claim, evidence),
            )
        )
    SnapshotDocument.objects.bulk_create(rows)


def _card(claim: Claim, evidence: list[Evidence]) -> dict[str, Any]:
    """What a hit on the claim shows, as it was: the fact, its subject and its citations."""
    return {
        "fact": claim.fact_text,
        "subject": claim.subject.canonical_name,
        "subject_id": claim.subject_id,
        "predicate": claim.predicate,
        "object_text": object_text(claim),
        "object_id": claim.object_entity_id,
        "source_name": claim.source.name,
        "citations": [asdict(citation_of(each)) for each in evidence],
    }


def _counts(snapshot_id: int) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT (SELECT count(*) FROM retrieval_snapshotdocument WHERE snapshot_id = %s),
                   count(*), coalesce(sum(doc_len), 0)
            FROM (
                SELECT DISTINCT ON (claim_id) claim_id, doc_len FROM retrieval_snapshotterm
                WHERE snapshot_id = %s
            ) d
            """,
            [snapshot_id, snapshot_id],
        )
        documents, lexical_documents, tokens = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM retrieval_snapshotterm WHERE snapshot_id = %s", [snapshot_id]
        )
        postings = cursor.fetchone()[0]
    return {
        "documents": documents,
        "lexical_documents": lexical_documents,
        "tokens": int(tokens),
        "postings": postings,
    }


# --- The seal --------------------------------------------------------------------------

# One digest per row, every column that ranking or a hit reads, in a text form that does
# not depend on the session (epochs, not local times; Postgres prints floats exactly).
# A NULL is left out (`concat_ws`), so postings copied before they had an impact (and
# their validity) digest as they did when sealed; those snapshots have no term statistics.
_ROW_DIGESTS = """
    SELECT 'd:' || lpad(claim_id::text, 20, '0') AS k, md5(concat_ws('|',
        claim_id, text, embedding::text, dimension, embedding_model, companion::text,
        status, predicate, subject_name, source_id, tier, authority, verification,
        confidence, extract(epoch FROM valid_from), extract(epoch FROM valid_to), up, down,
        episode_ids::text, card::text)) AS h
    FROM retrieval_snapshotdocument WHERE snapshot_id = %(id)s
    UNION ALL
    SELECT 't:' || lpad(claim_id::text, 20, '0') || ':' || term, md5(concat_ws('|',
        term, claim_id, tf, doc_len, CASE WHEN impact IS NOT NULL THEN concat_ws(':',
            impact, published, coalesce(extract(epoch FROM valid_from)::text, '-'),
            coalesce(extract(epoch FROM valid_to)::text, '-')) END))
    FROM retrieval_snapshotterm WHERE snapshot_id = %(id)s
    UNION ALL
    SELECT 's:' || term, md5(concat_ws('|', term, df))
    FROM retrieval_snapshottermstat WHERE snapshot_id = %(id)s
"""


_CHECKSUM_ROWS = f"""
    SELECT coalesce(string_agg(h, ',' ORDER BY k COLLATE "C"), '') FROM ({_ROW_DIGESTS}) x
"""  # noqa: S608 - a fixed fragment


def checksum(snapshot: Snapshot) -> str:
    """SHA-256 over the snapshot's pins, instant, counts and every row's digest, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            _CHECKSUM_ROWS,
            {"id": snapshot.pk},
        )
        rows = cursor.fetchone()[0]
    head = json.dumps(
        {
            "id": snapshot.pk,
            "group": snapshot.group_id,
            "taken_at": snapshot.taken_at.isoformat() if snapshot.taken_at else None,
            "pins": snapshot.pins,
            "counts": snapshot.counts,
            # Only when pinned, so that snapshots sealed before it still verify.
            **(
                {"ontology_version": snapshot.ontology_version}
                if snapshot.ontology_version is not None
                else {}
            ),
            **(
                {"assembler_version": snapshot.assembler_version}
                if snapshot.assembler_version is not None
                else {}
            ),
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(f"{head}\n{rows}".encode()).hexdigest()


def _seal(snapshot: Snapshot) -> None:
    snapshot.checksum = checksum(snapshot)
    snapshot.status = Snapshot.Status.SEALED
    snapshot.sealed_at = snapshot.sealed_at or timezone.now()


def snapshot_verify(snapshot: Snapshot) -> bool:
    """Whether a sealed snapshot's content still has the checksum it was sealed with."""
    return snapshot.status == Snapshot.Status.SEALED and checksum(snapshot) == snapshot.checksum


# The snapshots this process has verified, by (id, generation, checksum). Sealed rows
# cannot be updated (a trigger refuses) and every statement adding or removing rows
# moves the generation (another trigger), so content with an unmoved generation is the
# content verified: a search re-hashes a snapshot only when it has changed since, rather
# than on every query (5,000 documents: about 0.2 s). Only the owner role, which can
# disable triggers, could change content unseen, and it could rewrite the checksum too.
_VERIFIED: OrderedDict[tuple[int, int, str], None] = OrderedDict()
_VERIFIED_MAX = 256


def _verified(snapshot: Snapshot) -> bool:
    key = (snapshot.pk, snapshot.generation, snapshot.checksum)
    if key in _VERIFIED:
        _VERIFIED.move_to_end(key)
        return True
    if not snapshot_verify(snapshot):
        return False
    _VERIFIED[key] = None
    while len(_VERIFIED) > _VERIFIED_MAX:
        _VERIFIED.popitem(last=False)
    return True


def snapshot_ontology(snapshot: Snapshot) -> Ontology:
    """The workspace's ontology exactly as the snapshot pinned it (SnapshotRefused when it
    pinned none, or the pinned version cannot be read)."""
    version = snapshot.ontology_version
    ontology = None if version is None else ontology_at(group_id=snapshot.group_id, version=version)
    if ontology is None:
        raise SnapshotRefused(f"snapshot {snapshot.pk} pinned no ontology that can be read")
    return ontology


# --- Searching one ---------------------------------------------------------------------


def _usable(snapshot: Snapshot, catalog: EmbedderCatalog, reranking: Reranking | None) -> Any:
    """The pinned query embedders and reranking, or SnapshotRefused naming what is missing."""
    if snapshot.status == Snapshot.Status.BUILDING:
        raise SnapshotRefused(f"snapshot {snapshot.pk} is still being built; it is not sealed")
    if snapshot.status != Snapshot.Status.SEALED:
        raise SnapshotRefused(
            f"snapshot {snapshot.pk} failed to build and was never sealed: {snapshot.last_error}"
        )
    pins = snapshot.pins
    if pins.get("ranker_version") != ranking.RANKER_VERSION:
        raise SnapshotRefused(
            f"snapshot {snapshot.pk} was ranked by ranker {pins.get('ranker_version')}; this "
            f"deployment ranks with {ranking.RANKER_VERSION} and cannot reproduce it"
        )
    pinned: pipeline.Pinned = []
    embedding = pins.get("embedding") or {}
    wanted_models = [(embedding.get("provider"), embedding.get("model"), False)]
    if embedding.get("companion"):
        wanted_models.append((embedding["companion"], None, True))
    for provider, model, companion in wanted_models:
        if not provider:
            continue
        if provider not in catalog.choices() or (
            model is not None and catalog.passage(provider).model != model
        ):
            raise SnapshotRefused(
                f"snapshot {snapshot.pk} was embedded with {provider} ({model or 'companion'}),"
                " which this deployment does not offer (VERA_EMBEDDER__CHOICES)"
            )
        pinned.append((catalog.query(provider), companion))
    wanted = pins.get("reranker")
    current = reranking.reranker.model if reranking is not None else None
    if (wanted or {}).get("model") != current:
        raise SnapshotRefused(
            f"snapshot {snapshot.pk} was ranked with reranker {(wanted or {}).get('model')}; "
            f"this deployment has {current}"
        )
    if wanted is not None and reranking is not None:
        reranking = Reranking(
            reranker=reranking.reranker, top_n=wanted["top_n"], weight=wanted["weight"]
        )
    return pinned, reranking


def snapshot_search(
    *, snapshot: Snapshot, query: Query, catalog: EmbedderCatalog, reranking: Reranking | None
) -> Result:
    """The snapshot's ranking for the query, as it gave it when sealed (or SnapshotRefused)."""
    pinned, reranking = _usable(snapshot, catalog, reranking)
    if not _verified(snapshot):
        logger.error("snapshot %s no longer matches its seal: refused", snapshot.pk)
        raise SnapshotRefused(
            f"snapshot {snapshot.pk}'s content no longer matches its seal; it is not searched"
        )
    pins = snapshot.pins
    weights = pins["weights"]
    choice = ranking.WeightChoice(
        weights=ranking.Weights(**weights["weights"]),
        version=weights["version"],
        set_id=weights["set_id"],
    )
    counts = snapshot.counts
    index = SnapshotIndex(
        snapshot_id=snapshot.pk,
        size=counts.get("lexical_documents", 0),
        avg_len=counts.get("tokens", 0) / max(counts.get("lexical_documents", 0), 1),
        per_term=pins.get("postings_per_term"),
        variant_weight=pins.get("lexical_variant_weight"),
    )
    if snapshot.taken_at is None:  # a sealed snapshot always has it
        raise SnapshotRefused(f"snapshot {snapshot.pk} has no instant; it cannot be searched")
    ontology = snapshot_ontology(snapshot)  # questions are read as when it was sealed
    return pipeline.search(
        query=query, embedder=None, pinned=pinned, index=index, now=snapshot.taken_at,
        weights=choice, half_life_s=pins["half_life_s"], reranking=reranking, record=False,
        fusion=pins["fusion"], ontologies=lambda groups: dict.fromkeys(groups, ontology),
    )  # fmt: skip


def snapshot_result_cited(*, snapshot: Snapshot, result: Result) -> CitedResult:
    """The snapshot search's hits with the cards the snapshot holds (as they were then)."""
    documents = {
        doc.claim_id: doc
        for doc in SnapshotDocument.objects.filter(
            snapshot=snapshot, claim_id__in=[hit.claim_id for hit in result.hits]
        )
    }
    hits = tuple(
        CitedHit(
            hit_id=None,
            claim_id=hit.claim_id,
            fact=card["fact"],
            subject=card["subject"],
            predicate=card["predicate"],
            object_text=card["object_text"],
            score=round(hit.score, 6),
            subject_id=card["subject_id"],
            object_id=card["object_id"],
            signals=hit.signals,
            rerank=hit.rerank,
            status=doc.status,
            valid_from=doc.valid_from,
            valid_to=doc.valid_to,
            tier=doc.tier,
            source_name=card["source_name"],
            group_id=doc.group_id,
            citations=tuple(_citation(c) for c in card["citations"]),
            weight_version=hit.weight_version,
        )
        for hit in result.hits
        if (doc := documents.get(hit.claim_id)) is not None and (card := doc.card)
    )
    return cited_result(result, hits)


def snapshot_search_cited(
    *, snapshot_id: int, query: Query, catalog: EmbedderCatalog, reranking: Reranking | None
) -> tuple[Snapshot, CitedResult]:
    """What the REST API and the portal answer for `snapshot=`: the snapshot (visible to
    the caller, else Snapshot.DoesNotExist) and its cited hits, or SnapshotRefused."""
    snapshot = Snapshot.objects.get(pk=snapshot_id)  # RLS: another tenant's is not found
    result = snapshot_search(snapshot=snapshot, query=query, catalog=catalog, reranking=reranking)
    return snapshot, snapshot_result_cited(snapshot=snapshot, result=result)


def _citation(stored: Mapping[str, Any]) -> Citation:
    span = stored.get("span")
    return Citation(**{**stored, "span": tuple(span) if span is not None else None})


# --- Erasure ---------------------------------------------------------------------------


def snapshots_forget(
    *, group_id: str, claims: Iterable[int], episodes: Iterable[int], what: str
) -> dict[str, int]:
    """Remove erased content from every snapshot of the workspace and re-seal them.

    In the erasure's transaction. Goes: the erased claims' documents and any document
    quoting an erased episode (a fact supported elsewhere too still carries the erased
    text in its copy, and its vectors were computed from it). Snapshots being built are
    touched so that a build that began before the erasure fails its serialisation and
    starts again; sealed ones are re-sealed with a note naming the erasure (`what`).
    """
    snapshots = list(Snapshot.objects.select_for_update().filter(group_id=group_id))
    if not snapshots:
        return {"snapshots": 0, "snapshot_documents": 0}
    claims, episodes = sorted(set(claims)), sorted(set(episodes))
    removed: dict[int, int] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH gone AS (
                DELETE FROM retrieval_snapshotdocument
                WHERE group_id = %s AND (claim_id = ANY(%s) OR episode_ids && %s::bigint[])
                RETURNING snapshot_id, claim_id
            ), terms AS (
                DELETE FROM retrieval_snapshotterm t USING gone g
                WHERE t.snapshot_id = g.snapshot_id AND t.claim_id = g.claim_id
            )
            SELECT snapshot_id, count(*) FROM gone GROUP BY snapshot_id
            """,
            [group_id, claims, episodes],
        )
        removed = dict(cursor.fetchall())
    now = timezone.now()
    for snapshot in snapshots:
        count = removed.get(snapshot.pk, 0)
        if snapshot.status == Snapshot.Status.BUILDING:
            snapshot.notes += f"{now:%Y-%m-%d %H:%M:%S} UTC: {what} while building\n"
        elif snapshot.status == Snapshot.Status.SEALED and count:
            snapshot.counts = _counts(snapshot.pk)
            snapshot.notes += (
                f"{now:%Y-%m-%d %H:%M:%S} UTC: re-sealed after {what}: {count} document(s) "
                "holding erased content removed\n"
            )
            _seal(snapshot)
        else:
            continue
        snapshot.save(update_fields=["notes", "counts", "checksum", "status", "sealed_at"])
    return {"snapshots": len(removed), "snapshot_documents": sum(removed.values())}


def snapshot_rows_holding(*, claims: list[int], episodes: list[int]) -> list[str]:
    """Snapshot documents of these claims or quoting these episodes (the residual scan)."""
    rows = SnapshotDocument.objects.filter(claim_id__in=claims) | SnapshotDocument.objects.filter(
        episode_ids__overlap=episodes
    )
    return [f"{s}:{c}" for s, c in rows.values_list("snapshot_id", "claim_id")[:20]]
