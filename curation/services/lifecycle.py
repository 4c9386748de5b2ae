"""The claim lifecycle's one writer: status, valid time, supersession, version, projection.

Every change to a claim's `status`, `valid_from`, `valid_to`, `superseded_by` or
`version` is made here, and each one queues the claim's projection (graph edge and
index document) in the same transaction. Claims, review, ingestion, proposals,
retraction, erasure and reprocessing call these functions; none of them writes the
fields itself. Postgres holds everyone to it: a trigger on `curation_claim` refuses an
UPDATE of those columns unless the transaction-local setting `vera.lifecycle` is on,
which only `_writing()` turns on, for the length of one call (and the FSM trigger
admits only the transitions of `curation.domain.lifecycle`).

Which value is current when (supersession, late arrivals, ended facts) is decided by
the pure rules of `curation.domain.supersession`; this module applies them to rows.
The version is bumped once per change of a stored claim (a review's optimistic
concurrency token), always by `_save` or `_update`.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import F, QuerySet, Value
from django.db.models.functions import Greatest

from curation.domain import supersession
from curation.domain.errors import JudgeUnavailable
from curation.domain.outbox import PROJECT_CLAIM, Priority
from curation.domain.tiers import ClaimStatus
from curation.models import Claim
from curation.ports import ContradictionJudge
from curation.selectors import functional_predicates
from curation.services.outbox import outbox_enqueue_many

logger = logging.getLogger(__name__)

# The transaction-local setting the guard trigger reads (curation.models.Claim).
WRITER_SETTING = "vera.lifecycle"
# The columns only this module may change on a stored claim.
GUARDED = ("status", "valid_from", "valid_to", "superseded_by_id", "version")

# What a retraction can withdraw: what is, was or may become valid. Rejected and
# already retracted claims are left as they are.
RETRACTABLE = (
    ClaimStatus.PUBLISHED,
    ClaimStatus.SUPERSEDED,
    ClaimStatus.PENDING_REVIEW,
    ClaimStatus.PROPOSED,
)
# Up to this many claims a change's projection jumps the bulk queue (a reviewer waits
# for it); a whole source's thousands go in turn with other bulk work.
INTERACTIVE_UP_TO = 500

_local = threading.local()


@contextmanager
def _writing() -> Iterator[None]:
    """Let this call write the guarded columns: the setting is on for its length only
    (nested calls share the outer one's window; one round trip each way)."""
    depth = getattr(_local, "depth", 0)
    if depth:
        _local.depth = depth + 1
        try:
            yield
        finally:
            _local.depth = depth
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, 'on', true)", [WRITER_SETTING])
    _local.depth = 1
    try:
        yield
    finally:
        _local.depth = 0
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config(%s, 'off', true)", [WRITER_SETTING])
        except DatabaseError:  # an aborted transaction: it rolls back with its setting
            pass


def _save(claim: Claim, fields: Iterable[str]) -> None:
    """Store a claim's changed lifecycle fields, bumping its version (once)."""
    claim.version += 1
    claim.save(update_fields=sorted({*fields, "version"}))


def _update(rows: QuerySet[Claim], **fields: Any) -> int:
    """The same for many claims at once, in SQL."""
    return rows.update(**fields, version=F("version") + 1)


def claims_load(claims: list[Claim]) -> list[Claim]:
    """Insert claims whose lifecycle was decided elsewhere, as they are: a history loaded
    in bulk (a benchmark corpus of published claims and the superseded revisions before
    them, each with its supersession and version set by the caller). Nothing is computed
    or queued here: the caller projects them (`claims_project`) once their evidence is
    in. The one way to insert a claim born published or superseded other than
    `claim_publish`; the database refuses any other."""
    with _writing():
        return Claim.objects.bulk_create(claims)


def claims_project(
    group_id: str, claim_ids: Iterable[int], *, priority: Priority | None = None
) -> None:
    """Queue the projection of these claims (graph edge, index document) from their rows.

    Also for changes that are not transitions (evidence gained or lost, an entity
    renamed by a merge). Without a `priority`, up to `INTERACTIVE_UP_TO` claims are
    interactive and more are bulk.
    """
    ids = list(dict.fromkeys(claim_ids))
    if not ids:
        return
    if priority is None:
        priority = Priority.INTERACTIVE if len(ids) <= INTERACTIVE_UP_TO else Priority.BULK
    outbox_enqueue_many(
        group_id=group_id, kind=PROJECT_CLAIM, payloads=[{"claim_id": pk} for pk in ids],
        priority=priority,
    )  # fmt: skip


def _current_values(claim: Claim) -> list[supersession.CurrentValue]:
    rows = (
        Claim.objects.select_for_update()
        .filter(
            group_id=claim.group_id,
            subject=claim.subject,
            predicate=claim.predicate,
            status=ClaimStatus.PUBLISHED,
        )
        .exclude(pk=claim.pk)
        .values_list("pk", "object_key", "fact_text")
    )
    return [supersession.CurrentValue(pk, key, fact) for pk, key, fact in rows]


def _store(claim: Claim) -> None:
    """Insert a new claim, or store a waiting one's decision (a transition: versioned)."""
    if claim.pk is None:
        claim.save()
    else:
        claim.version += 1
        claim.save()


def _timeline(claim: Claim) -> list[Claim]:
    """The subject's values of the claim's predicate that were ever current, in valid
    time order (locked: the caller rewrites their intervals)."""
    return list(
        Claim.objects.select_for_update()
        .filter(
            group_id=claim.group_id, subject=claim.subject, predicate=claim.predicate,
            status__in=[ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED],
        )
        .exclude(pk=claim.pk)
        .order_by("valid_from", "pk")
    )  # fmt: skip


def _record_ended(claim: Claim, *, priority: Priority) -> Claim:
    """A fact the record says ended ("from 2019 until 2020"): recorded as history, never
    the current value. For a functional predicate it takes its place in the timeline:
    it ends where a later value begins, and an earlier closed value ends where it begins
    (a value published now keeps its interval: an ended fact does not close it)."""
    claim.status = ClaimStatus.SUPERSEDED
    claim.status_reason = f"ended {claim.valid_to:%Y-%m-%d}, as the record says"
    touched: list[Claim] = []
    if claim.predicate in functional_predicates():
        timeline = _timeline(claim)
        after = next((old for old in timeline if old.valid_from > claim.valid_from), None)
        if after is not None and claim.valid_to is not None and after.valid_from < claim.valid_to:
            claim.valid_to = after.valid_from
            claim.superseded_by = after
        before = next(
            (old for old in reversed(timeline) if old.valid_from <= claim.valid_from), None
        )
        if (
            before is not None
            and before.status == ClaimStatus.SUPERSEDED
            and before.valid_to is not None
            and before.valid_to > claim.valid_from
        ):
            before.valid_to = claim.valid_from
            before.superseded_by = claim
            touched.append(before)
    _store(claim)
    for old in touched:
        _save(old, ["valid_to", "superseded_by"])
    claims_project(claim.group_id, [claim.pk, *(old.pk for old in touched)], priority=priority)
    return claim


def _place_in_history(claim: Claim, *, priority: Priority) -> Claim | None:
    """A value of a functional predicate that arrives late: valid from before the current
    value began. It does not supersede the newer value; it goes into the history where
    its valid time puts it (superseded by the value after it, ending the one before it).
    Returns the claim that holds the value then (itself, or the earlier claim it merely
    re-confirms); None when the value is the newest and the caller publishes it as usual.
    """
    timeline = _timeline(claim)
    later = [old for old in timeline if old.valid_from > claim.valid_from]
    if not later:
        return None
    after = later[0]
    before = next((old for old in reversed(timeline) if old.valid_from <= claim.valid_from), None)
    if (
        before is not None
        and before.object_key == claim.object_key
        and (before.valid_to is None or before.valid_to > claim.valid_from)
    ):
        return before  # the same value was already held then: a re-confirmation
    claim.status = ClaimStatus.SUPERSEDED
    claim.status_reason = "arrived after a newer value: placed in the history"
    claim.valid_to = after.valid_from
    claim.superseded_by = after
    _store(claim)
    touched = [claim.pk]
    if before is not None and (before.valid_to is None or before.valid_to > claim.valid_from):
        before.valid_to = claim.valid_from
        before.superseded_by = claim
        _save(before, ["valid_to", "superseded_by"])
        touched.append(before.pk)
    claims_project(claim.group_id, touched, priority=priority)
    return claim


def _replaces_or_coexists(judge: ContradictionJudge) -> Callable[[str, str], bool]:
    """The judge's verdict; "no" when it cannot judge now, as with no judge: values coexist."""

    def replaces(new_fact: str, old_fact: str) -> bool:
        try:
            return judge.replaces(new_fact, old_fact)
        except JudgeUnavailable as error:
            logger.warning("no contradiction judgement, both values kept: %s", error)
            return False

    return replaces


# savepoint=False: these join the caller's transaction without a savepoint round trip
# each (ingestion calls them thousands of times); alone, they still run atomically.
@transaction.atomic(savepoint=False)
def claim_publish(
    claim: Claim, *, judge: ContradictionJudge | None = None, priority: Priority = Priority.BULK
) -> Claim:
    """Publish a claim (new, or waiting for a decision): supersede what it replaces,
    queue its projection. Returns the live claim.

    A re-confirmation of a value that is already published returns that claim unchanged
    (and leaves this one as it was: a new one unsaved, a waiting one waiting); the
    caller attaches its evidence there.
    """
    with _writing():
        if claim.valid_to is not None:  # the record says the fact ended: it is history
            return _record_ended(claim, priority=priority)
        functional = claim.predicate in functional_predicates()
        plan = supersession.plan(
            new_object_key=claim.object_key,
            new_fact=claim.fact_text,
            current=_current_values(claim),
            functional=functional,
            replaces=_replaces_or_coexists(judge) if judge else None,
        )
        if plan.duplicate_of is not None:
            return Claim.objects.get(pk=plan.duplicate_of)
        if functional:
            placed = _place_in_history(claim, priority=priority)
            if placed is not None:
                return placed
        claim.status = ClaimStatus.PUBLISHED
        _store(claim)
        closed = list(Claim.objects.filter(pk__in=plan.supersedes))
        for old in closed:
            old.status = ClaimStatus.SUPERSEDED
            old.valid_to = max(claim.valid_from, old.valid_from)
            old.superseded_by = claim
            _save(old, ["status", "valid_to", "superseded_by"])
        claims_project(claim.group_id, [*(old.pk for old in closed), claim.pk], priority=priority)
        return claim


@transaction.atomic(savepoint=False)
def claim_reject(claim: Claim, *, reason: str) -> Claim:
    """Close a waiting claim as rejected (a reviewer's decision, or a duplicate of a
    published value), with the reason. Nothing was projected, so nothing is queued."""
    with _writing():
        claim.status = ClaimStatus.REJECTED
        claim.status_reason = reason[:200]
        _store(claim)
    return claim


@transaction.atomic(savepoint=False)
def claims_supersede(claims: QuerySet[Claim], *, at: dt.datetime, reason: str) -> list[int]:
    """End these claims at `at` (never before they began) as superseded, with the reason:
    what a document's newer revision no longer says. Published ones leave the current
    view (their projection is queued); waiting ones leave the queue. Returns their ids."""
    with _writing():
        ended: list[int] = []
        projected: list[int] = []
        group_id = ""
        for claim in claims.select_for_update().order_by("pk"):
            if claim.status == ClaimStatus.PUBLISHED:
                projected.append(claim.pk)
            claim.status = ClaimStatus.SUPERSEDED
            claim.status_reason = reason[:200]
            claim.valid_to = max(at, claim.valid_from)
            _save(claim, ["status", "status_reason", "valid_to"])
            ended.append(claim.pk)
            group_id = claim.group_id
        claims_project(group_id, projected, priority=Priority.BULK)
        return ended


@transaction.atomic(savepoint=False)
def claims_end(claims: QuerySet[Claim], *, at: dt.datetime, reason: str) -> list[int]:
    """End these claims' intervals at `at` (never before they began): an item's history
    says they stopped holding then. A published claim is superseded; a superseded one
    that ran past `at` is cut there; a waiting one keeps waiting with its interval, so a
    reviewer decides on it as history, unless the interval is empty (it never held), and
    then it leaves the queue as superseded. Returns the ids of the claims changed."""
    with _writing():
        changed: list[int] = []
        projected: list[int] = []
        group_id = ""
        standing = claims.filter(status__in=RETRACTABLE)  # decided ones stay as decided
        for claim in standing.select_for_update().order_by("pk"):
            end = max(at, claim.valid_from)
            if claim.valid_to is not None and claim.valid_to <= end:
                continue  # it ended there or before already
            claim.valid_to = end
            fields = ["valid_to"]
            if claim.status == ClaimStatus.PUBLISHED or end == claim.valid_from:
                if claim.status in (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED):
                    projected.append(claim.pk)
                claim.status = ClaimStatus.SUPERSEDED
                claim.status_reason = reason[:200]
                fields += ["status", "status_reason"]
            elif claim.status == ClaimStatus.SUPERSEDED:
                projected.append(claim.pk)
            _save(claim, fields)
            changed.append(claim.pk)
            group_id = claim.group_id
        claims_project(group_id, projected, priority=Priority.BULK)
        return changed


def _restore_superseded(gone: list[int]) -> list[int]:
    """Make current again what these claims (retracted, or about to be erased) had
    superseded, unless replaced since; returns the claims restored."""
    restored: list[int] = []
    functional = functional_predicates()
    superseded = (
        Claim.objects.select_for_update()
        .filter(superseded_by_id__in=gone, status=ClaimStatus.SUPERSEDED)
        .order_by("-valid_from", "-pk")
    )
    for old in superseded:
        # The given claims are no rivals (an erasure's are still published at this point).
        rivals = Claim.objects.filter(
            group_id=old.group_id, subject_id=old.subject_id, predicate=old.predicate,
            status=ClaimStatus.PUBLISHED,
        ).exclude(pk__in=gone)  # fmt: skip
        if old.predicate not in functional:
            rivals = rivals.filter(object_key=old.object_key)
        if rivals.exists():
            continue  # replaced by something else since: it stays closed
        _update(
            Claim.objects.filter(pk=old.pk),
            status=ClaimStatus.PUBLISHED, valid_to=None, superseded_by=None,
            status_reason="current again: what superseded it was withdrawn",
        )  # fmt: skip
        restored.append(old.pk)
    return restored


@transaction.atomic(savepoint=False)
def claims_retract(
    group_id: str, claims: QuerySet[Claim], *, reason: str, now: dt.datetime
) -> tuple[list[int], list[int]]:
    """Withdraw these claims (those that can be: `RETRACTABLE`) with the reason, and make
    current again what they had superseded, unless replaced since. Returns (retracted,
    restored) ids; both are projected.

    A retracted claim stops being valid now and keeps what was true before; a claim that
    was never valid (waiting) gets an empty interval, so no `as_of` may find it.
    """
    with _writing():
        ids = list(
            claims.filter(status__in=RETRACTABLE)
            .select_for_update()
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        rows = Claim.objects.filter(pk__in=ids)
        waiting = [ClaimStatus.PENDING_REVIEW, ClaimStatus.PROPOSED]
        rows.filter(status__in=waiting).update(valid_to=F("valid_from"))
        # Closed now; never before it began (a fact recorded as valid from a later time).
        rows.filter(status=ClaimStatus.PUBLISHED).update(
            valid_to=Greatest(Value(now), F("valid_from"))
        )
        # Withdrawn: nothing asks for a re-check of it any more.
        _update(rows, status=ClaimStatus.RETRACTED, status_reason=reason[:200], recheck="")
        restored = _restore_superseded(ids)
        claims_project(group_id, [*ids, *restored])
        return ids, restored


@transaction.atomic(savepoint=False)
def claims_forget(claim_ids: list[int]) -> list[int]:
    """Prepare these claims' deletion (an erasure): what they had superseded is current
    again unless replaced since, and nothing points at them any more. Returns the claims
    restored; the caller projects them with the claims the erasure keeps."""
    with _writing():
        restored = _restore_superseded(claim_ids)
        _update(Claim.objects.filter(superseded_by_id__in=claim_ids), superseded_by=None)
        return restored
