"""Ingestion: connector pages -> episodes (bytes first) -> claims, one record at a time.

Each page is processed in its own transaction under the source's tenant context and
the cursor advances with it, so a crash loses at most one page of progress. Each record
runs in a savepoint: a bad record becomes a failed episode with its reason and the
rest of the page continues. Re-ingesting unchanged bytes is a no-op.

Each page, each record and its steps (store, extract, claims) are spans
(`vera.ingest.*`, inside the run's span), no-ops unless the process set tracing up.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)
from django.db.transaction import TransactionManagementError
from django.utils import timezone
from opentelemetry import trace

from curation.domain.errors import ConnectorError
from curation.domain.extraction.base import extraction_version
from curation.domain.extraction.structured import structured_subject
from curation.domain.names import normalize_name
from curation.domain.records import ExtractedClaim, FetchPage, RecordFailure, SourceRecord
from curation.domain.sources import ConnectorKind
from curation.domain.tiers import ClaimStatus, Decision, Tier, decide
from curation.domain.validtime import declared_validity
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Source
from curation.ports import (
    Connector,
    ContradictionJudge,
    Embedder,
    EquivalenceJudge,
    Extractor,
    ObjectStore,
)
from curation.services.claims import NewClaim, claim_record
from curation.services.entities import entity_resolve
from curation.services.history import version_settle
from curation.services.identities import Identity
from curation.services.lifecycle import claims_supersede
from curation.services.sources import run_lock_key
from tenants import rls
from tenants.domain.access import Principal

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer(__name__)


@dataclass(frozen=True, kw_only=True)
class ReadAdapters:
    """What reading a stored record into claims uses: its bytes' store, the source's
    extractors, the entity resolution's embedder and the judges (built by the
    composition root; reprocessing needs no more)."""

    store: ObjectStore
    extractors: Sequence[Extractor]
    embedder: Embedder | None = None
    equivalence: EquivalenceJudge | None = None
    contradiction: ContradictionJudge | None = None


@dataclass(frozen=True, kw_only=True)
class IngestAdapters(ReadAdapters):
    """The adapters one ingestion run uses: reading, and the source's connector."""

    connector: Connector


class EntityCache(dict[tuple[str, str, str, str], Entity]):
    """Names already resolved in this run: (group id, normalised name, type, the subject's
    id in the source or "") -> entity. Two items of one name and two ids are two entries."""


@dataclass
class IngestReport:
    """What one run did."""

    source_id: int
    new: int = 0
    unchanged: int = 0
    failed: int = 0
    pages: int = 0
    started_at: dt.datetime = field(default_factory=timezone.now)
    # Cited claims by status, and REPEATED: extracted claims an episode said again.
    claims: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, str]] = field(default_factory=list)
    error: str = ""
    # Why this run did nothing at all (another run of the source is going, or the run it
    # was sent for has already happened); the source is left as it is.
    skipped: str = ""
    # Why the run stopped before its connector's end: the source was disabled or retracted
    # while it ran. What it had committed stays (a retraction withdraws it); no more.
    stopped: str = ""
    entities: EntityCache = field(default_factory=EntityCache, repr=False)

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        if self.stopped:
            return "stopped"
        return "failed" if self.error else "ok"

    @property
    def records(self) -> int:
        return self.new + self.unchanged + self.failed

    def progress(self, state: str) -> dict[str, object]:
        """The run as `Source.progress` holds it (JSON): counts so far and when."""
        return {
            "state": state,
            "started_at": self.started_at.isoformat(),
            "updated_at": timezone.now().isoformat(),
            "pages": self.pages,
            "records": self.records,
            "new": self.new,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "total": None,  # no connector can count its records ahead (yet)
        }


# Told after each committed page, with the run's report so far (counts, pages).
ProgressCallback = Callable[[IngestReport], None]


# The key of `IngestReport.claims` that counts extracted claims an episode repeated
# (beside one key per status of the claims it cites).
REPEATED = "repeated"


class RecordRejected(Exception):
    """A record that cannot become claims (bad encoding, extractor refusal)."""


def json_safe(fields: dict[str, Any]) -> dict[str, Any]:
    """A record's structured fields as JSON keeps them (dates and the like as text)."""
    safe: dict[str, Any] = json.loads(json.dumps(fields, default=str))
    return safe


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _decode(record: SourceRecord) -> str:
    if b"\x00" in record.content:
        raise RecordRejected("binary content (NUL bytes)")
    try:
        return record.content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RecordRejected(f"invalid UTF-8 at byte {error.start}") from None


# Sources whose records are items with an id of their own (a CMDB item, a Jira issue):
# a record's subject is that item, identified by the record's external id.
IDENTIFIED_KINDS = frozenset({ConnectorKind.CMDB, ConnectorKind.JIRA})


@dataclass(frozen=True)
class _OwnItem:
    """The item a structured record describes: its name and type as extracted, its id."""

    name: str
    entity_type: str
    identity: Identity

    def identity_of(self, claim: ExtractedClaim) -> Identity | None:
        """The identity of the claim's subject if it is this item (not a linked issue)."""
        same = (claim.subject, claim.subject_type) == (self.name, self.entity_type)
        return self.identity if same else None


def _own_item(source: Source, record: SourceRecord) -> _OwnItem | None:
    """The item a structured source's record describes, or None (free text, no id)."""
    if source.kind not in IDENTIFIED_KINDS or not record.external_id.strip():
        return None
    subject = structured_subject(record)
    if subject is None:
        return None
    external_id = record.external_id[:EXTERNAL_ID_MAX]
    return _OwnItem(*subject, Identity(source_id=source.pk, external_id=external_id))


def _resolve(
    source: Source,
    claim: ExtractedClaim,
    adapters: ReadAdapters,
    cache: EntityCache,
    own: _OwnItem | None = None,
) -> NewClaim:
    def entity(name: str, entity_type: str, identity: Identity | None = None) -> Entity:
        by_id = identity.external_id if identity else ""
        key = (source.group_id, normalize_name(name), entity_type, by_id)
        if key not in cache:
            # Documents are identified by their title exactly; fuzzy matching would
            # merge different documents with similar titles.
            lexical_only = entity_type == "document"
            cache[key] = entity_resolve(
                group_id=source.group_id,
                name=name,
                entity_type=entity_type,
                embedder=None if lexical_only else adapters.embedder,
                judge=None if lexical_only else adapters.equivalence,
                identity=identity,
                exact_spelling=source.kind in IDENTIFIED_KINDS,
            ).entity
        return cache[key]

    # The record's own item is its subject by id; other names (objects, linked issues)
    # resolve by name.
    subject_identity = own.identity_of(claim) if own else None
    return NewClaim(
        subject=entity(claim.subject, claim.subject_type, subject_identity),
        predicate=claim.predicate,
        fact_text=claim.fact_text,
        confidence=claim.confidence,
        object_entity=entity(claim.object_name, claim.object_type) if claim.object_name else None,
        object_literal=claim.object_literal,
        span=claim.span,
        snippet=claim.fact_text[:1000],
    )


def _supersede_previous_revision(source: Source, episode: Episode) -> None:
    """Claims only the artifact's older revisions said, and this one no longer says, end.

    Two index lookups and a set difference, not one nested IN / NOT IN query: a page is
    ingested in one transaction, and a table analysed meanwhile (autovacuum cannot count
    the uncommitted rows) looks empty to the planner, which then nests whole-table scans
    (seen taking minutes per episode on a first large ingest).
    """
    said_before = set(
        Evidence.objects.filter(
            episode__source=source, episode__external_id=episode.external_id
        ).values_list("claim_id", flat=True)
    )
    said_before -= set(Evidence.objects.filter(episode=episode).values_list("claim_id", flat=True))
    if not said_before:
        return
    stale = Claim.objects.filter(
        pk__in=said_before,
        status__in=[ClaimStatus.PUBLISHED, ClaimStatus.PENDING_REVIEW, ClaimStatus.PROPOSED],
    )
    claims_supersede(stale, at=episode.fetched_at, reason="artifact revised")


@dataclass(frozen=True)
class Extracted:
    """One claim extracted from a record, resolved and graded, ready to be recorded."""

    new: NewClaim
    decision: Decision
    valid_from: dt.datetime
    valid_to: dt.datetime | None


def record_extract(
    source: Source,
    record: SourceRecord,
    episode: Episode,
    adapters: ReadAdapters,
    cache: EntityCache,
) -> list[Extracted]:
    """What today's extractors find in one record of the source, entities resolved and
    each claim's tier decision and valid time set (ingestion and reprocessing alike).
    RecordRejected (or an extractor's ValueError) when the record cannot give claims."""
    text = _decode(record)
    with _tracer.start_as_current_span("vera.ingest.extract"):
        extracted = [
            claim for extractor in adapters.extractors for claim in extractor.extract(record, text)
        ]
    decision = decide(
        Tier(source.trust_tier),
        target_is_shared=not source.group_id.startswith("u:"),
        writer_is_personal=source.origin_group_id.startswith("u:"),
    )
    # Valid time: what the record declares about itself, else when it was last updated.
    declared = declared_validity(text)
    valid_from = declared.valid_from or record.updated_at or episode.fetched_at
    if declared.note:
        decision = replace(decision, reason=f"{decision.reason}; {declared.note}"[:200])
    now = timezone.now()
    own = _own_item(source, record)
    found = []
    for item in extracted:
        since = item.valid_from or valid_from
        until, why = _ended(item, since, now)
        found.append(
            Extracted(
                new=_resolve(source, item, adapters, cache, own),
                decision=_noted(decision, "; ".join(n for n in (item.validity_note, why) if n)),
                valid_from=since,
                valid_to=until,
            )
        )
    return found


def extracted_record(
    source: Source,
    episode: Episode,
    found: Sequence[Extracted],
    *,
    judge: ContradictionJudge | None,
    cited: set[int] | None = None,
) -> Counter[str]:
    """Record what was extracted from the episode (`claim_record` each); counts by the
    status of the claims it cites, and REPEATED for what it said twice. `cited`: the
    claims already cited (and so counted) for this episode."""
    counts: Counter[str] = Counter()
    cited = set() if cited is None else cited
    for each in found:
        claim = claim_record(
            source=source, episode=episode, new=each.new, decision=each.decision,
            valid_from=each.valid_from, valid_to=each.valid_to, judge=judge,
        )  # fmt: skip
        if claim.pk in cited:
            # Said word for word earlier in this episode (same subject, predicate and
            # value): one claim, one citation; the repeat is counted, not lost silently.
            counts[REPEATED] += 1
            continue
        cited.add(claim.pk)
        counts[claim.status] += 1
    return counts


def _process(
    source: Source,
    record: SourceRecord,
    episode: Episode,
    adapters: IngestAdapters,
    cache: EntityCache,
) -> Counter[str]:
    found = record_extract(source, record, episode, adapters, cache)
    claims_span = _tracer.start_as_current_span(
        "vera.ingest.claims", attributes={"vera.ingest.extracted": len(found)}
    )
    with claims_span:
        counts = extracted_record(source, episode, found, judge=adapters.contradiction)
    if episode.version_from is not None:
        version_settle(source=source, episode=episode)  # one version of the item's history
    else:
        _supersede_previous_revision(source, episode)
    return counts


def _noted(decision: Decision, note: str) -> Decision:
    """The decision, its reason saying why a date the statement mentions was not used."""
    return replace(decision, reason=f"{decision.reason}; {note}"[:200]) if note else decision


def _ended(
    item: ExtractedClaim, valid_from: dt.datetime, now: dt.datetime
) -> tuple[dt.datetime | None, str]:
    """The end the statement gives its fact if it is past ("until 2020" of a fact that
    began before), and why an end it gives is not applied: one in the future holds until
    then, one before the fact began says nothing usable."""
    end = item.valid_to
    if end is None:
        return None, ""
    if end <= valid_from:
        return None, f"ends {end:%Y-%m-%d}, not after it began: end not applied"
    if end > now:
        return None, f"ends {end:%Y-%m-%d}, in the future: not applied (current until changed)"
    return end, ""


EXTERNAL_ID_MAX = 500  # Episode.external_id's length


def _seen(source: Source, external_id: str, digest: str) -> bool:
    """Whether these bytes of this artifact are already an episode (content-hash idempotency).

    The id is cut exactly as it is stored, so overlong ids are recognised too.
    """
    return Episode.objects.filter(
        source=source, external_id=external_id[:EXTERNAL_ID_MAX], content_hash=digest
    ).exists()


def _object_key(source: Source, digest: str) -> str:
    """Where an artifact's bytes live: content-addressed under the group and source."""
    return f"{source.group_id}/{source.pk}/{digest}"


def _failed_episode(source: Source, failure: RecordFailure, adapters: IngestAdapters) -> bool:
    """Record a failure once per (artifact, content or reason); False if already recorded."""
    digest = content_hash(failure.content or f"failure:{failure.reason}".encode())
    if _seen(source, failure.external_id, digest):
        return False
    key = ""
    if failure.content:
        key = _object_key(source, digest)
        adapters.store.put(key, failure.content, content_type="application/octet-stream")
    Episode.objects.create(
        group_id=source.group_id,
        source=source,
        external_id=failure.external_id[:EXTERNAL_ID_MAX],
        url=failure.url[:2000],
        content_hash=digest,
        object_key=key,
        size=len(failure.content),
        fetched_at=timezone.now(),
        status=EpisodeStatus.FAILED,
        failure_reason=failure.reason,
    )
    return True


def _ingest_record(
    source: Source, record: SourceRecord, adapters: IngestAdapters, report: IngestReport
) -> None:
    digest = content_hash(record.content)
    if _seen(source, record.external_id, digest):
        report.unchanged += 1
        return
    key = _object_key(source, digest)
    with _tracer.start_as_current_span("vera.ingest.store"):
        mime = record.mime or "application/octet-stream"
        adapters.store.put(key, record.content, content_type=mime)
    try:
        with transaction.atomic():
            episode = Episode.objects.create(
                group_id=source.group_id,
                source=source,
                external_id=record.external_id[:EXTERNAL_ID_MAX],
                url=record.url[:2000],
                title=record.title[:500],
                content_hash=digest,
                object_key=key,
                mime=record.mime[:100],
                size=len(record.content),
                fetched_at=timezone.now(),
                record_fields=json_safe(record.fields),
                record_updated_at=record.updated_at,
                version_from=record.version_from,
                location=record.location[:100],
                status=EpisodeStatus.STORED,
                extractor_version=extraction_version(adapters.extractors),
            )
            counts = _process(source, record, episode, adapters, report.entities)
            episode.status = EpisodeStatus.PROCESSED
            episode.claims_count = sum(n for key, n in counts.items() if key != REPEATED)
            episode.save(update_fields=["status", "claims_count"])
    except (OperationalError, InterfaceError):
        raise  # the database is gone: stop the run, the page is retried next time
    except IntegrityError as error:
        report.entities.clear()  # entities made in the rolled-back savepoint are gone
        if _seen(source, record.external_id, digest):
            report.unchanged += 1  # a concurrent run stored it first
            return
        _reject(source, record, f"integrity error: {error}".splitlines()[0], adapters, report)
        return
    except (RecordRejected, ValueError, DataError) as error:
        report.entities.clear()
        _reject(source, record, str(error) or type(error).__name__, adapters, report)
        return
    report.new += 1
    report.claims.update(counts)


def _reject(
    source: Source,
    record: SourceRecord,
    reason: str,
    adapters: IngestAdapters,
    report: IngestReport,
) -> None:
    logger.info("episode %s of source %s failed: %s", record.external_id, source.pk, reason)
    failure = RecordFailure(record.external_id, reason, url=record.url, content=record.content)
    if _failed_episode(source, failure, adapters):
        report.failed += 1
        report.failures.append((record.external_id, reason))
    else:
        report.unchanged += 1


class RunStopped(Exception):
    """The source was disabled (or retracted) while its run went on: no further page."""


def source_ingest_page(
    *,
    source_id: int,
    page: FetchPage,
    adapters: IngestAdapters,
    report: IngestReport,
    while_enabled: bool = False,
) -> None:
    """Store and process one page, then advance the cursor (call inside a transaction).

    With `while_enabled` (a run that started on an enabled source), a source disabled
    since, by an admin or by its retraction, stops the run before this page: the lock on
    the source's row orders the page and the retraction, so a page either committed
    before it (and is withdrawn with the rest) or reads nothing.
    """
    source = Source.objects.select_for_update().filter(pk=source_id).first()
    if source is None:
        raise RunStopped(
            f"the source was erased during the run: stopped after {report.pages} page(s)"
        )
    if while_enabled and not source.enabled:
        raise RunStopped(
            f"the source was disabled or retracted during the run: stopped after "
            f"{report.pages} page(s); its next run goes on from its cursor"
        )
    for item in page.items:
        with transaction.atomic(), _tracer.start_as_current_span("vera.ingest.record"):
            if isinstance(item, RecordFailure):
                if _failed_episode(source, item, adapters):
                    report.failed += 1
                    report.failures.append((item.external_id, item.reason))
                else:
                    report.unchanged += 1
            else:
                _ingest_record(source, item, adapters, report)
    if page.cursor is not None:
        Source.objects.filter(pk=source_id).update(cursor=page.cursor)


@contextmanager
def source_run_lock(source_id: int) -> Iterator[bool]:
    """Hold the source's run lock for the block; yields False, holding nothing, when
    another session holds it (a run of the source is going).

    A session-level advisory lock on the primary, since a run spans many transactions:
    a worker that dies releases it with its connection, so no run is left "going" by a
    crash, and one source never runs twice at once (a redelivered message, the schedule
    and an admin's "run now", the `ingest` command).
    """
    key = run_lock_key(source_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [key])
        row = cursor.fetchone()
    held = bool(row and row[0])
    try:
        yield held
    finally:
        if held:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])
            except (DatabaseError, TransactionManagementError):  # its session is gone or aborted
                logger.warning(
                    "the run lock of source %s was not released", source_id, exc_info=True
                )


def source_ingest(
    *,
    source_id: int,
    actor: Principal,
    adapters: IngestAdapters,
    on_progress: ProgressCallback | None = None,
) -> IngestReport:
    """Run the source's connector from its cursor; each page commits on its own.

    `Source.progress` is rewritten with each page, in the page's transaction, so what
    the admin shows is exactly what is committed; `on_progress` hears it after commit.
    """
    report = IngestReport(source_id=source_id)
    with rls.tenant_context(actor):
        cursor, enabled = Source.objects.values_list("cursor", "enabled").get(pk=source_id)
        Source.objects.filter(pk=source_id).update(progress=report.progress("running"))
    try:
        for page in adapters.connector.pages(cursor=cursor):
            records = {"vera.ingest.records": len(page.items)}
            with (
                _tracer.start_as_current_span("vera.ingest.page", attributes=records),
                rls.tenant_context(actor),
            ):
                source_ingest_page(
                    source_id=source_id, page=page, adapters=adapters, report=report,
                    while_enabled=enabled,
                )  # fmt: skip
                report.pages += 1
                Source.objects.filter(pk=source_id).update(progress=report.progress("running"))
            if on_progress is not None:
                on_progress(report)
    except RunStopped as stop:
        report.stopped = str(stop)
        logger.info("ingestion of source %s stopped: %s", source_id, stop)
    except ConnectorError as error:
        report.error = str(error)
    except (OperationalError, InterfaceError):
        raise
    except Exception as error:  # an upstream model or store failing mid-run
        # The cursor stays after the last committed page, so the next run resumes there.
        logger.exception("ingestion of source %s stopped", source_id)
        report.error = f"{type(error).__name__}: {error}"[:2000]
    finally:
        close = getattr(adapters.connector, "close", None)
        if callable(close):
            close()
    with rls.tenant_context(actor):
        source_run_finished(source_id=source_id, report=report)
    return report


def source_run_finished(*, source_id: int, report: IngestReport) -> None:
    """Record the outcome of a run on the source, its progress included."""
    state = "stopped" if report.stopped else "failed" if report.error else "finished"
    Source.objects.filter(pk=source_id).update(
        last_run_at=timezone.now(),
        last_run_status=report.status,
        last_error=(report.error or report.stopped)[:2000],
        progress=report.progress(state),
    )
