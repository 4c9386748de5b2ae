"""Reprocessing: a source's stored documents read again through today's extractors.

The spec keeps every fetched artifact's raw bytes so that what VERA knows can be read
again when the way it reads changes (better rules, a model or a prompt turned on, a
new CMDB mapping). Each episode records the extraction version that read it
(`Episode.extractor_version`); a run re-reads the current revision of every document
of the source that an older version read (or every one, with `everything`), from the
object store and the record's kept fields, and reconciles its claims:

- a claim extracted again is kept as it is: its review, status and history stand;
- a new claim is recorded like any new claim, through the tier rules (published at
  tiers 1-2, queued at 3, proposed at 4);
- a claim no longer extracted leaves this document: when another document still says
  it, only this citation goes; a claim a reviewer approved is kept and asks for a
  re-check ("no longer found in the source") in the queue; any other is withdrawn
  through the lifecycle (retracted, with the reason), which restores what it had
  superseded and queues the projections.

A run commits batch by batch with its cursor and counts (`Reprocessing`), so progress
is visible as it goes, a crash loses at most one uncommitted batch, and the next run
of the source resumes the running one; an episode already read by the current
version is skipped, so running again changes nothing. Start and end are audited.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django.db import DataError, InterfaceError, OperationalError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from curation.domain.extraction.base import extraction_version
from curation.domain.records import SourceRecord
from curation.domain.sources import AGENT_KIND, ConnectorKind
from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Reprocessing, Source
from curation.services.claims import object_key
from curation.services.history import version_settle
from curation.services.ingest import (
    EntityCache,
    Extracted,
    ReadAdapters,
    RecordRejected,
    extracted_record,
    record_extract,
)
from curation.services.lifecycle import claims_project, claims_retract
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record
from tenants.services.scopes import locked_for

logger = logging.getLogger(__name__)

BATCH = 20  # documents per committed batch
FAILURES_KEPT = 50  # documents named with their reason in a run's counts, at most

# Claims a re-read can withdraw or keep: the ones with a standing (decided ones stay).
_STANDING = (
    ClaimStatus.PUBLISHED,
    ClaimStatus.SUPERSEDED,
    ClaimStatus.PENDING_REVIEW,
    ClaimStatus.PROPOSED,
)


class ReprocessRefused(Exception):
    """A reprocessing that cannot be started as asked; the message says why."""


def _due(run: Reprocessing) -> QuerySet[Episode]:
    """The documents the run still has to read, in id order: each artifact's current
    revision (no later revision of it was read), processed, after the run's cursor, and
    read by another version (unless the run reads everything)."""
    newer = Episode.objects.filter(
        source_id=OuterRef("source_id"), external_id=OuterRef("external_id"),
        pk__gt=OuterRef("pk"), status__in=[EpisodeStatus.PROCESSED, EpisodeStatus.RETRACTED],
    )  # fmt: skip
    # Each version of an item's history is current in its own period: only a later
    # reading of the same version, or a plain revision, replaces it.
    replaced = newer.filter(Q(version_from=OuterRef("version_from")) | Q(version_from__isnull=True))
    due = Episode.objects.filter(
        source_id=run.source_id, status=EpisodeStatus.PROCESSED, pk__gt=run.cursor
    ).filter(
        (Q(version_from__isnull=True) & ~Exists(newer))
        | (Q(version_from__isnull=False) & ~Exists(replaced))
    )
    if not run.everything:
        due = due.exclude(extractor_version=run.version)
    return due.order_by("pk")


@transaction.atomic
def reprocess_start(
    *,
    actor: Principal,
    source_id: int,
    adapters: ReadAdapters,
    everything: bool = False,
    reason: str = "",
) -> Reprocessing:
    """Start reprocessing a source (admin of its scope), or return the run already going.

    Nothing is read yet: `reprocess_run` does the work (a task, or the command).
    """
    source = locked_for(
        actor, Source.objects.all(), source_id, role=Role.ADMIN,
        refusal="reprocessing a source needs the admin role in its scope",
    )  # fmt: skip
    if source.kind == AGENT_KIND:
        raise ReprocessRefused(
            "the agents' source has no extractor: its proposals stay as they were given"
        )
    running = Reprocessing.objects.filter(source=source, status=Reprocessing.Status.RUNNING)
    if (current := running.first()) is not None:
        return current
    run = Reprocessing(
        group_id=source.group_id, source=source, requested_by=actor.label[:200],
        reason=reason.strip()[:200], everything=everything,
        version=extraction_version(adapters.extractors)[:500],
    )  # fmt: skip
    run.total = _due(run).count()
    run.counts = {"documents": 0}
    run.save()
    audit_record(
        actor=actor, group_id=source.group_id, action="source.reprocess",
        target=("source", source.pk),
        data={"run": run.pk, "version": run.version, "documents": run.total,
              "everything": everything, "reason": run.reason},
    )  # fmt: skip
    return run


# Told after each committed batch, with the run as committed.
BatchCallback = Callable[[Reprocessing], None]


def reprocess_run(
    *,
    run_id: int,
    actor: Principal,
    adapters: ReadAdapters,
    batch: int = BATCH,
    on_batch: BatchCallback | None = None,
) -> Reprocessing:
    """Work a run to its end, one committed batch at a time, each in `actor`'s tenant
    context (call outside a transaction: each batch commits on its own). A provider that
    fails mid-run (a model down) ends the run as failed with the reason; what was
    committed stays, and the next run goes on from there."""
    cache = EntityCache()
    while True:
        try:
            with rls.tenant_context(actor):
                run = Reprocessing.objects.select_for_update().get(pk=run_id)
                if run.status != Reprocessing.Status.RUNNING:
                    return run
                # The source's row, as each ingest page locks it: a batch and a page of
                # the same source take turns, and the documents due are read after the
                # page committed, so a revision it superseded is not read again (which
                # could publish the old revision's values as new).
                source = Source.objects.select_for_update().get(pk=run.source_id)
                if source.kind == AGENT_KIND:
                    raise ReprocessRefused("the agents' source has no extractor")
                episodes = list(_due(run)[:batch])
                if not episodes:
                    return _finished(run, actor, status=Reprocessing.Status.FINISHED)
                counts = Counter(run.counts)
                failures = list(run.counts.get("failures", []))
                for episode in episodes:
                    outcome = _reread(source, episode, run, adapters, cache)
                    counts.update(outcome.counts)
                    if outcome.failure and len(failures) < FAILURES_KEPT:
                        failures.append([episode.external_id, outcome.failure])
                counts["documents"] += len(episodes)
                run.counts = {**dict(counts), "failures": failures}
                run.cursor = episodes[-1].pk
                run.updated_at = timezone.now()
                run.save(update_fields=["counts", "cursor", "updated_at"])
        except (OperationalError, InterfaceError):
            raise  # the database is gone: nothing can be recorded; the run resumes later
        except Exception as error:  # a model or the store failing mid-run, a refusal
            cache.clear()  # entities resolved in the rolled-back batch are gone
            logger.exception("reprocessing run %s stopped", run_id)
            with rls.tenant_context(actor):
                run = Reprocessing.objects.select_for_update().get(pk=run_id)
                run.error = f"{type(error).__name__}: {error}"[:2000]
                return _finished(run, actor, status=Reprocessing.Status.FAILED)
        if on_batch is not None:
            on_batch(run)


def reprocess_reclaim(*, run_id: int, before: dt.datetime) -> bool:
    """Take over a running run last advanced before `before` (its worker is gone): mark it
    advanced now and count the resumption, so that one sweep, and only one, sends it
    again. False when it moved on since, or ended."""
    with transaction.atomic():
        run = (
            Reprocessing.objects.select_for_update()
            .filter(pk=run_id, status=Reprocessing.Status.RUNNING, updated_at__lt=before)
            .first()
        )
        if run is None:
            return False
        run.counts = {**run.counts, "resumed": int(run.counts.get("resumed", 0)) + 1}
        run.updated_at = timezone.now()
        run.save(update_fields=["counts", "updated_at"])
        return True


def _finished(run: Reprocessing, actor: Principal, *, status: str) -> Reprocessing:
    run.status = status
    run.finished_at = run.updated_at = timezone.now()
    run.save(update_fields=["status", "finished_at", "updated_at", "error"])
    audit_record(
        actor=actor, group_id=run.group_id, action=f"source.reprocess_{status}",
        target=("source", run.source_id),
        data={"run": run.pk, "version": run.version,
              "counts": {k: v for k, v in run.counts.items() if k != "failures"},
              "error": run.error[:500]},
    )  # fmt: skip
    return run


@dataclass(frozen=True)
class _Outcome:
    counts: Counter[str]
    failure: str = ""


def _stored_record(source: Source, episode: Episode, data: bytes) -> SourceRecord:
    """The record as it was fetched, from its bytes and its kept fields. A CMDB item
    stored before fields were kept is its own JSON; a Jira issue's fields were not in
    its bytes: RecordRejected says so."""
    fields = episode.record_fields
    if not fields and source.kind == ConnectorKind.CMDB:
        try:
            loaded = json.loads(data)
        except ValueError:
            raise RecordRejected("the stored CMDB item is not JSON") from None
        fields = loaded if isinstance(loaded, dict) else {}
    elif not fields and source.kind == ConnectorKind.JIRA:
        raise RecordRejected("stored before its fields were kept: ingest it again to reprocess")
    return SourceRecord(
        external_id=episode.external_id, content=data, mime=episode.mime, url=episode.url,
        title=episode.title, updated_at=episode.record_updated_at, fields=fields,
        version_from=episode.version_from, location=episode.location,
    )  # fmt: skip


class _Canonical(dict[int, int]):
    """Entity id -> the entity it is merged into, followed to the end (reads follow
    merges), looked up once per entity."""

    def __missing__(self, entity_id: int) -> int:
        seen, current = {entity_id}, entity_id
        while (
            into := Entity.objects.filter(pk=current)
            .values_list("merged_into_id", flat=True)
            .first()
        ) is not None and into not in seen:
            seen.add(into)
            current = into
        self[entity_id] = current
        return current


def _triple(claim: Claim, canonical: _Canonical) -> tuple[object, ...]:
    return (canonical[claim.subject_id], claim.predicate, claim.object_key)


def _found_triple(each: Extracted, canonical: _Canonical) -> tuple[object, ...]:
    new = each.new
    key = object_key(object_entity=new.object_entity, object_literal=new.object_literal)
    return (canonical[new.subject.pk], new.predicate, key)


def _matched(cited: list[Claim], found: list[Extracted]) -> tuple[set[int], list[Extracted]]:
    """Which cited claims were extracted again, and what was extracted that is new.

    A claim is "the same claim" as an extracted one by its triple (entities as merged),
    else by its predicate and statement; each claim answers one extracted claim at most
    (one sentence can give several triples of one predicate).
    """
    canonical = _Canonical()
    # A claim with a standing wins its triple over a decided one (listed after it).
    ranked = sorted(cited, key=lambda claim: claim.status in _STANDING)
    by_triple = {_triple(claim, canonical): claim for claim in ranked}
    kept: set[int] = set()
    unmatched: list[Extracted] = []
    for each in found:
        claim = by_triple.get(_found_triple(each, canonical))
        if claim is None:
            unmatched.append(each)
        else:
            kept.add(claim.pk)
    new: list[Extracted] = []
    for each in unmatched:
        same_text = (
            claim
            for claim in cited
            if claim.pk not in kept
            and (claim.predicate, claim.fact_text) == (each.new.predicate, each.new.fact_text)
        )
        if (claim := next(same_text, None)) is None:
            new.append(each)
        else:
            kept.add(claim.pk)
    return kept, new


def _reread(
    source: Source, episode: Episode, run: Reprocessing, adapters: ReadAdapters, cache: EntityCache
) -> _Outcome:
    """Read one stored document again and reconcile its claims (in a savepoint: a
    document that cannot be read fails alone and keeps its claims)."""
    try:
        data = adapters.store.get(episode.object_key)
    except KeyError:
        return _Outcome(Counter(failed=1), "its stored bytes are missing from the object store")
    try:
        with transaction.atomic():
            found = record_extract(
                source, _stored_record(source, episode, data), episode, adapters, cache
            )
            counts = _reconcile(source, episode, run, found, adapters)
    except (RecordRejected, ValueError, DataError) as error:
        cache.clear()
        return _Outcome(Counter(failed=1), str(error) or type(error).__name__)
    return _Outcome(counts)


def _reconcile(
    source: Source,
    episode: Episode,
    run: Reprocessing,
    found: list[Extracted],
    adapters: ReadAdapters,
) -> Counter[str]:
    # Every claim it cites, decided ones included: a claim a reviewer rejected or
    # retracted that is extracted again stays as decided (it is not queued again).
    cited = list(
        Claim.objects.filter(evidence__episode=episode)
        .select_for_update(of=("self",))
        .order_by("pk")
    )
    kept, new = _matched(cited, found)
    counts: Counter[str] = Counter(
        kept=sum(1 for c in cited if c.pk in kept and c.status in _STANDING)
    )
    recorded = extracted_record(source, episode, new, judge=adapters.contradiction, cited=set(kept))
    counts.update({f"new {status}": n for status, n in recorded.items()})
    gone = [claim for claim in cited if claim.pk not in kept and claim.status in _STANDING]
    counts.update(_vanished(source, episode, run, gone))
    if episode.version_from is not None and new:
        # What this version newly says ends where the item's next version stops saying it.
        counts["ended by history"] += len(version_settle(source=source, episode=episode))
    episode.extractor_version = run.version
    episode.claims_count = Evidence.objects.filter(episode=episode).count()
    episode.save(update_fields=["extractor_version", "claims_count"])
    return counts


def _vanished(
    source: Source, episode: Episode, run: Reprocessing, gone: list[Claim]
) -> Counter[str]:
    """Claims this document no longer gives: leave it, ask for a re-check, or withdraw."""
    counts: Counter[str] = Counter()
    if not gone:
        return counts
    elsewhere = set(
        Evidence.objects.filter(claim__in=gone)
        .exclude(episode=episode)
        .exclude(episode__status=EpisodeStatus.RETRACTED)
        .values_list("claim_id", flat=True)
    )
    supported = [claim.pk for claim in gone if claim.pk in elsewhere]
    if supported:
        # Another document still says it: only this citation goes, and both projections
        # (the edge's episodes, the index text's snippets) are written again.
        Evidence.objects.filter(episode=episode, claim_id__in=supported).delete()
        claims_project(source.group_id, supported)
        counts["citation dropped"] += len(supported)
    alone = [claim for claim in gone if claim.pk not in elsewhere]
    reviewed = [claim.pk for claim in alone if _reviewed(claim)]
    if reviewed:
        note = f"no longer found in {source.name!r} when read again ({run.version})"
        Claim.objects.filter(pk__in=reviewed).update(recheck=note[:200])
        counts["to re-check"] += len(reviewed)
    withdrawn = [claim.pk for claim in alone if not _reviewed(claim)]
    if withdrawn:
        reason = f"no longer found in its document when read again ({run.version})"
        retracted, restored = claims_retract(
            source.group_id, Claim.objects.filter(pk__in=withdrawn), reason=reason[:200],
            now=timezone.now(),
        )  # fmt: skip
        counts["withdrawn"] += len(retracted)
        counts["restored"] += len(restored)
    return counts


def _reviewed(claim: Claim) -> bool:
    """A claim a person approved (published or since superseded): their decision stands."""
    return claim.status in (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED) and (
        claim.reviewed_by_id is not None or claim.verification == Verification.HUMAN_VERIFIED
    )


def reprocess_due(*, version_of: Callable[[Source], str]) -> QuerySet[Source]:
    """Sources with a document read by another version than today's (`version_of`
    gives a source's): what `reprocess --outdated` starts runs for."""
    due: list[int] = []
    for source in Source.objects.exclude(kind=AGENT_KIND).order_by("pk"):
        outdated = Episode.objects.filter(source=source, status=EpisodeStatus.PROCESSED).exclude(
            extractor_version=version_of(source)
        )
        if outdated.exists():
            due.append(source.pk)
    return Source.objects.filter(Q(pk__in=due)).order_by("pk")
