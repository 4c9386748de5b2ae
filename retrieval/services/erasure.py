"""Erasure of a source or an episode: its content leaves every store; a tombstone stays.

What goes, in one Postgres transaction (a workspace admin's, with a reason, after a
confirmation that named what is destroyed):
- the episodes, their evidence, and the claims only they support, with those claims'
  index documents, postings, second vectors, hits and votes;
- entities that only those claims named (with their aliases and merge candidates);
- for a source, the source itself (claims it first recorded that other documents also
  support are re-attributed to one of those documents' sources);
- claims supported elsewhere too lose only this evidence (and are re-projected, so their
  index text and graph edge no longer carry it);
- a claim that an erased claim superseded is current again, unless replaced since;
- the copies of all this in the workspace's knowledge snapshots, which are re-sealed;
- in the search log, the query texts that quote it are redacted (`erasure_log`);
- kept context packs citing any of those claims or quoting those episodes.

The same transaction writes the tombstone (ids, counts, actor, reason; the keys still
to clean; the SHA-256 of every erased text and keyed fingerprints of the terms only it
held, no text) and queues a cleanup job, visible a minute later. After commit the
caller runs the cleanup at once (graph edges, the raw bytes in the object store,
cached embeddings of the erased texts) and retires the job; if the process dies in
between, a worker runs the same idempotent cleanup when the job becomes visible. A
store that refuses leaves the tombstone "retrying" with the error, and the outbox
retries with backoff ("failed" once the job has used its attempts, until an admin
retries it). `erasure_scan` proves nothing remains.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.outbox import ERASURE_CLEANUP, Consumer, Priority
from curation.models import (
    Claim,
    Entity,
    EntityAlias,
    EntityIdentity,
    Episode,
    Evidence,
    MergeCandidate,
    OutboxJob,
    Source,
    Tombstone,
)
from curation.ports import GraphProjection, ObjectStore
from curation.services.lifecycle import claims_forget, claims_project
from curation.services.outbox import JobFailed
from retrieval.models import (
    CompanionVector,
    ContextPack,
    Feedback,
    GroupEmbedding,
    SearchDocument,
    SearchHit,
)
from retrieval.ports import EmbedderCatalog, EmbeddingCache
from retrieval.services.erasure_log import (
    pack_query_residue,
    search_log_redact,
    search_log_residue,
    searches_returning,
)
from retrieval.services.index import companion_texts
from retrieval.services.snapshots import snapshot_rows_holding, snapshots_forget
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record

CLEANUP_DELAY = dt.timedelta(seconds=60)  # a worker's turn, should the request die first


class ErasureRefused(Exception):
    """An erasure that cannot be made as asked; the message says why (and what it would do)."""


def fingerprint(text: str) -> str:
    """The SHA-256 of a text: how a residual scan recognises it without keeping it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Plan:
    """What an erasure destroys, counted before it is confirmed."""

    episodes: list[int]
    claims_erased: list[int]
    claims_kept: list[int]  # supported elsewhere: they lose only this evidence
    objects: list[str]

    @property
    def counts(self) -> dict[str, int]:
        return {
            "episodes": len(self.episodes),
            "claims_erased": len(self.claims_erased),
            "claims_losing_evidence": len(self.claims_kept),
            "raw_artifacts": len(self.objects),
        }

    def describe(self, target: str) -> str:
        c = self.counts
        return (
            f"Erasing {target} destroys {c['episodes']} episode(s) and their raw bytes "
            f"({c['raw_artifacts']} stored artifact(s)), {c['claims_erased']} claim(s) only "
            f"they support, with their index entries and graph edges; "
            f"{c['claims_losing_evidence']} claim(s) supported elsewhere lose this evidence. "
            "It cannot be undone: confirm to proceed."
        )


def _plan(episodes: list[int], *, source: Source | None = None) -> Plan:
    cited = set(Evidence.objects.filter(episode_id__in=episodes).values_list("claim_id", flat=True))
    if source is not None:  # and whatever the source recorded, cited by these or not
        cited |= set(Claim.objects.filter(source=source).values_list("pk", flat=True))
    elsewhere = set(
        Evidence.objects.filter(claim_id__in=cited)
        .exclude(episode_id__in=episodes)
        .values_list("claim_id", flat=True)
    )
    keys = set(
        Episode.objects.filter(pk__in=episodes)
        .exclude(object_key="")
        .values_list("object_key", flat=True)
    )
    shared = set(  # content-addressed: another episode may hold the same bytes
        Episode.objects.filter(object_key__in=keys)
        .exclude(pk__in=episodes)
        .values_list("object_key", flat=True)
    )
    return Plan(
        episodes=sorted(episodes),
        claims_erased=sorted(cited - elsewhere),
        claims_kept=sorted(cited & elsewhere),
        objects=sorted(keys - shared),
    )


def _caches(group_id: str, catalog: EmbedderCatalog) -> list[EmbeddingCache]:
    """The embedding caches the group's texts went through: its model's and companion's."""
    pin = GroupEmbedding.objects.filter(group_id=group_id).first()
    providers = {catalog.default}
    if pin is not None:
        providers |= {p for p in (pin.provider, pin.companion) if p}
    caches: list[EmbeddingCache] = []
    for provider in sorted(providers & set(catalog.choices())):
        embedder = catalog.passage(provider)
        if isinstance(embedder, EmbeddingCache):
            caches.append(embedder)
    return caches


def _texts(plan: Plan) -> tuple[list[str], list[str]]:
    """(texts whose vectors were cached, every erased text) of the plan's content."""
    indexed = dict(
        SearchDocument.objects.filter(
            claim_id__in=[*plan.claims_erased, *plan.claims_kept]
        ).values_list("claim_id", "text")
    )  # the kept claims' texts carried the erased snippets too
    claims = list(Claim.objects.filter(pk__in=indexed).order_by("pk"))
    # A companion read each turn after the one before it: those texts were cached too.
    told = companion_texts(claims, [indexed[claim.pk] for claim in claims])
    documents = list(dict.fromkeys([*indexed.values(), *told]))
    erased = [
        *Evidence.objects.filter(episode_id__in=plan.episodes).values_list("snippet", flat=True),
        *Claim.objects.filter(pk__in=plan.claims_erased).values_list("fact_text", flat=True),
        *SearchDocument.objects.filter(claim_id__in=plan.claims_erased).values_list(
            "text", flat=True
        ),
    ]
    return documents, [text for text in erased if text]


def _orphans(entity_ids: Iterable[int]) -> list[int]:
    """Of these entities, those no remaining claim names and nothing is merged into."""
    ids = set(entity_ids)
    named = set(Claim.objects.filter(subject_id__in=ids).values_list("subject_id", flat=True))
    named |= set(
        Claim.objects.filter(object_entity_id__in=ids).values_list("object_entity_id", flat=True)
    )
    merged = set(
        Entity.objects.filter(merged_into_id__in=ids).values_list("merged_into_id", flat=True)
    )
    return sorted(ids - named - merged)


def _delete(plan: Plan, *, source: Source | None) -> dict[str, Any]:
    """Every Postgres row of the plan's content, in dependency order; counts by kind."""
    gone = plan.claims_erased
    entities = set(Claim.objects.filter(pk__in=gone).values_list("subject_id", flat=True)) | set(
        Claim.objects.filter(pk__in=gone, object_entity__isnull=False).values_list(
            "object_entity_id", flat=True
        )
    )
    restored = claims_forget(gone)
    counts: dict[str, Any] = {"restored": len(restored), "restored_ids": restored}
    with connection.cursor() as cursor:  # postings first: their triggers keep statistics
        cursor.execute("DELETE FROM retrieval_lexicalterm WHERE claim_id = ANY(%s)", [gone])
        counts["postings"] = cursor.rowcount
    counts["second_vectors"] = CompanionVector.objects.filter(document__claim_id__in=gone).delete()[
        0
    ]
    counts["index_documents"] = SearchDocument.objects.filter(claim_id__in=gone).delete()[0]
    counts["votes"] = Feedback.objects.filter(claim_id__in=gone).delete()[0]
    counts["hits"] = SearchHit.objects.filter(claim_id__in=gone).delete()[0]
    counts["context_packs"] = _packs_citing(gone, plan.episodes).delete()[0]
    counts["evidence"] = Evidence.objects.filter(episode_id__in=plan.episodes).delete()[0]
    if source is not None:  # claims it first recorded, supported by other sources too
        for claim in Claim.objects.filter(source=source, pk__in=plan.claims_kept):
            other = Evidence.objects.filter(claim=claim).select_related("episode").first()
            if other is not None:
                Claim.objects.filter(pk=claim.pk).update(source_id=other.episode.source_id)
    counts["claims"] = Claim.objects.filter(pk__in=gone).delete()[0]
    orphans = _orphans(entities)
    MergeCandidate.objects.filter(Q(entity_id__in=orphans) | Q(candidate_id__in=orphans)).delete()
    EntityAlias.objects.filter(entity_id__in=orphans).delete()
    EntityIdentity.objects.filter(Q(entity_id__in=orphans) | Q(source=source)).delete()
    counts["entities"] = Entity.objects.filter(pk__in=orphans).delete()[0]
    counts["episodes"] = Episode.objects.filter(pk__in=plan.episodes).delete()[0]
    if source is not None:
        Source.objects.filter(pk=source.pk).delete()
    return counts


def _packs_citing(claims: list[int], episodes: list[int]) -> QuerySet[ContextPack]:
    """Kept context packs that cite these claims or quote these episodes: their text
    carries the content, so they go whole (kept or erased claims alike)."""
    return ContextPack.objects.filter(
        Q(claim_ids__overlap=claims) | Q(episode_ids__overlap=episodes)
    )


def _target(
    actor: Principal, kind: str, target_id: int, *, lock: bool
) -> tuple[Source | None, str, list[int]]:
    """(the source or None, its workspace, its episodes) of what is to be erased; refused
    unless the actor administers that workspace. DoesNotExist when it is not visible."""
    source: Source | None = None
    if kind == "source":
        sources = Source.objects.select_for_update() if lock else Source.objects.all()
        source = sources.get(pk=target_id)
        group_id = source.group_id
        episodes = list(Episode.objects.filter(source=source).values_list("pk", flat=True))
    elif kind == "episode":
        rows = Episode.objects.select_for_update() if lock else Episode.objects.all()
        episode = rows.get(pk=target_id)
        group_id, episodes = episode.group_id, [episode.pk]
    else:
        raise ErasureRefused(f"only a source or an episode can be erased, not a {kind}")
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("erasing needs the admin role in this workspace")
    return source, group_id, episodes


def erasure_preview(*, actor: Principal, kind: str, target_id: int) -> str:
    """What erasing it would destroy: the text a confirmation shows (workspace admin)."""
    source, _, episodes = _target(actor, kind, target_id, lock=False)
    return _plan(episodes, source=source).describe(f"{kind} {target_id}")


@transaction.atomic
def erase(
    *,
    actor: Principal,
    kind: str,
    target_id: int,
    reason: str,
    confirm: bool,
    catalog: EmbedderCatalog,
) -> Tombstone:
    """Erase a source or an episode (workspace admin; reason and confirmation required).

    Returns the tombstone, its cleanup still to run (`erasure_cleanup`). Without
    `confirm`, ErasureRefused says what would be destroyed and nothing is.
    """
    source, group_id, episodes = _target(actor, kind, target_id, lock=True)
    if not reason.strip():
        raise ErasureRefused("say why: the reason is kept in the tombstone and the audit log")
    plan = _plan(episodes, source=source)
    if not confirm:
        raise ErasureRefused(plan.describe(f"{kind} {target_id}"))
    caches = _caches(group_id, catalog)
    cached_texts, erased_texts = _texts(plan)
    cache_keys = sorted({cache.key(text) for cache in caches for text in cached_texts})
    queries = searches_returning(plan.claims_erased)  # before their hits go
    counts = {**plan.counts, **_delete(plan, source=source)}
    # A search for what only this content said keeps saying it in the log: redacted.
    redacted, search_log = search_log_redact(
        group_id=group_id, texts=erased_texts, kept=plan.claims_kept, queries=queries
    )
    counts |= redacted
    # Knowledge snapshots must not resurrect it: its copies leave them, and they are
    # re-sealed with a note.
    counts |= snapshots_forget(
        group_id=group_id, claims=plan.claims_erased, episodes=plan.episodes,
        what=f"the erasure of {kind} {target_id}",
    )  # fmt: skip
    # A sentence another document also says is not erased content: it stays, cited there.
    prints = {fingerprint(text) for text in erased_texts}
    prints -= _still_held(prints)
    tombstone = Tombstone.objects.create(
        group_id=group_id, kind=kind, target_id=target_id, actor=actor.label,
        reason=reason.strip()[:500], counts=counts,
        cleanup={"objects": plan.objects, "cache_keys": cache_keys,
                 "claims": plan.claims_erased, "episodes": plan.episodes, **search_log},
        fingerprints=sorted(prints),
    )  # fmt: skip
    # The kept claims no longer carry this evidence: their index text and graph edge
    # are written again; the erased claims' edges go with the cleanup.
    claims_project(
        group_id, [*plan.claims_kept, *counts.pop("restored_ids")], priority=Priority.INTERACTIVE
    )
    OutboxJob.objects.create(
        group_id=group_id, consumer=Consumer.GRAPH, kind=ERASURE_CLEANUP,
        payload={"tombstone_id": tombstone.pk}, priority=Priority.INTERACTIVE,
        available_at=timezone.now() + CLEANUP_DELAY,
    )  # fmt: skip
    audit_record(
        actor=actor, group_id=group_id, action=f"{kind}.erase", target=(kind, str(target_id)),
        data={"reason": tombstone.reason, "tombstone": tombstone.pk, "counts": counts},
    )  # fmt: skip
    return tombstone


def erasure_cleanup(
    tombstone: Tombstone, *, graph: GraphProjection, store: ObjectStore, catalog: EmbedderCatalog
) -> None:
    """Remove what the erasure left outside Postgres; idempotent, so it may run twice.

    Marks the tombstone complete. What a store raises propagates: the caller records it
    on the tombstone once its attempt is rolled back (`erasure_cleanup_failed`).
    """
    plan = tombstone.cleanup
    graph.remove_claims(list(plan.get("claims", [])))
    for key in plan.get("objects", []):
        store.delete(key)
    for cache in _caches(tombstone.group_id, catalog):
        cache.forget(list(plan.get("cache_keys", [])))
    Tombstone.objects.filter(pk=tombstone.pk).update(
        status=Tombstone.Status.COMPLETE, attempts=F("attempts") + 1, last_error="",
        completed_at=timezone.now(),
    )  # fmt: skip


def erasure_cleanup_failed(tombstone: Tombstone, error: Exception, *, final: bool) -> None:
    """Say on the tombstone why its cleanup failed: "retrying" (the outbox tries again
    with backoff) or, after the last attempt, "failed" (until an admin retries the job)."""
    Tombstone.objects.filter(pk=tombstone.pk).exclude(status=Tombstone.Status.COMPLETE).update(
        status=Tombstone.Status.FAILED if final else Tombstone.Status.RETRYING,
        attempts=F("attempts") + 1, last_error=f"{type(error).__name__}: {error}"[:2000],
    )  # fmt: skip


def erasure_cleanup_now(
    tombstone: Tombstone, *, graph: GraphProjection, store: ObjectStore, catalog: EmbedderCatalog
) -> bool:
    """The request's own cleanup, right after commit; retires the queued job if it worked.

    False (the job stays for the worker, the tombstone says why) if a store refused.
    """
    try:
        with transaction.atomic():
            erasure_cleanup(tombstone, graph=graph, store=store, catalog=catalog)
    except Exception as error:
        erasure_cleanup_failed(tombstone, error, final=False)
        return False
    OutboxJob.objects.filter(
        kind=ERASURE_CLEANUP, payload__tombstone_id=tombstone.pk, status=OutboxJob.Status.PENDING
    ).update(status=OutboxJob.Status.DONE, done_at=timezone.now())
    return True


def erasure_cleanup_job(
    job: OutboxJob, *, graph: GraphProjection, store: ObjectStore, catalog: EmbedderCatalog
) -> None:
    """Outbox handler: the cleanup of the job's tombstone (if the request did not finish
    it); a failure is recorded on the tombstone after the attempt is rolled back."""
    tombstone = Tombstone.objects.filter(pk=job.payload["tombstone_id"]).first()
    if tombstone is None or tombstone.status == Tombstone.Status.COMPLETE:
        return
    try:
        erasure_cleanup(tombstone, graph=graph, store=store, catalog=catalog)
    except Exception as error:
        record = functools.partial(_record_failure, tombstone, error)
        raise JobFailed(error, record) from error


def _record_failure(tombstone: Tombstone, error: Exception, final: bool) -> None:
    erasure_cleanup_failed(tombstone, error, final=final)


@dataclass(frozen=True)
class Residue:
    """What a residual scan found of an erased source or episode (empty: nothing)."""

    found: dict[str, list[str]]

    @property
    def clean(self) -> bool:
        return not any(self.found.values())


_TEXT_COLUMNS = (
    ("curation_evidence", "snippet"),
    ("curation_claim", "fact_text"),
    ("retrieval_searchdocument", "text"),
    ("retrieval_searchhit", "query_text"),
    ("retrieval_snapshotdocument", "text"),
)


def _held(prints: Sequence[str]) -> dict[str, list[str]]:
    """Rows of every text column whose text has one of these fingerprints."""
    found: dict[str, list[str]] = {}
    with connection.cursor() as cursor:
        for table, column in _TEXT_COLUMNS:
            cursor.execute(
                f"SELECT id, encode(sha256(convert_to({column}, 'UTF8')), 'hex') FROM {table}"  # noqa: S608 - fixed names
                f" WHERE encode(sha256(convert_to({column}, 'UTF8')), 'hex') = ANY(%s) LIMIT 200",
                [list(prints)],
            )
            found[f"text in {table}.{column}"] = [f"{row[0]}:{row[1]}" for row in cursor.fetchall()]
    return found


def _still_held(prints: set[str]) -> set[str]:
    """The fingerprints some remaining row still holds."""
    return {row.split(":", 1)[1] for rows in _held(sorted(prints)).values() for row in rows}


def erasure_scan(
    tombstone: Tombstone, *, graph: GraphProjection, store: ObjectStore, catalog: EmbedderCatalog
) -> Residue:
    """Look for anything of the erased content: by ids in every table that holds them, by
    fingerprint in every text column, by term in the search log, in the graph, the object
    store and the caches."""
    plan = tombstone.cleanup
    claims, episodes = list(plan.get("claims", [])), list(plan.get("episodes", []))
    found: dict[str, list[str]] = {}
    by_id: Sequence[tuple[str, Any]] = (
        ("claims", Claim.objects.filter(pk__in=claims)),
        ("episodes", Episode.objects.filter(pk__in=episodes)),
        ("evidence", Evidence.objects.filter(Q(episode_id__in=episodes) | Q(claim_id__in=claims))),
        ("index documents", SearchDocument.objects.filter(claim_id__in=claims)),
        ("second vectors", CompanionVector.objects.filter(document__claim_id__in=claims)),
        ("hits", SearchHit.objects.filter(claim_id__in=claims)),
        ("votes", Feedback.objects.filter(claim_id__in=claims)),
        ("context packs", _packs_citing(claims, episodes)),
    )
    for name, queryset in by_id:
        found[name] = [str(pk) for pk in queryset.values_list("pk", flat=True)[:20]]
    found["snapshot documents"] = snapshot_rows_holding(claims=claims, episodes=episodes)
    if tombstone.kind == "source":
        found["source"] = [
            str(pk)
            for pk in Source.objects.filter(pk=tombstone.target_id).values_list("pk", flat=True)
        ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT claim_id FROM retrieval_lexicalterm WHERE claim_id = ANY(%s) LIMIT 20", [claims]
        )
        found["postings"] = [str(row[0]) for row in cursor.fetchall()]
    for name, rows in _held(list(tombstone.fingerprints)).items():
        found[name] = [row.split(":", 1)[0] for row in rows][:20]
    found["query texts"] = search_log_residue(tombstone)
    found["pack queries"] = pack_query_residue(tombstone)
    edges = graph.dump(tombstone.group_id).edges
    erased = set(claims)
    found["graph edges"] = [str(edge[0]) for edge in edges if edge[0] in erased]
    found["raw artifacts"] = [key for key in plan.get("objects", []) if _stored(store, key)]
    found["cached embeddings"] = [
        key for cache in _caches(tombstone.group_id, catalog)
        for key in cache.holds(list(plan.get("cache_keys", [])))
    ]  # fmt: skip
    return Residue({name: ids for name, ids in found.items() if ids})


def _stored(store: ObjectStore, key: str) -> bool:
    try:
        store.get(key)
    except KeyError:
        return False
    return True
