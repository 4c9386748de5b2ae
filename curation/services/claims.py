"""Recording and publishing claims: tier decision, supersession, outbox, in one transaction."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from curation.domain import supersession
from curation.domain.errors import JudgeUnavailable
from curation.domain.outbox import PROJECT_CLAIM, Priority
from curation.domain.tiers import ClaimStatus, Decision
from curation.models import Claim, Entity, Episode, Evidence, Source
from curation.ports import ContradictionJudge
from curation.selectors import functional_predicates
from curation.services.outbox import outbox_enqueue

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NewClaim:
    """A resolved claim ready to be recorded."""

    subject: Entity
    predicate: str
    fact_text: str
    confidence: float
    object_entity: Entity | None = None
    object_literal: str | None = None
    span: tuple[int, int] | None = None
    snippet: str = ""


def object_key(*, object_entity: Entity | None, object_literal: str | None) -> str:
    """What makes two values "the same value" for duplicate and supersession checks."""
    return supersession.value_key(
        entity_id=None if object_entity is None else object_entity.pk, literal=object_literal
    )


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


def _record_ended(claim: Claim, *, priority: Priority) -> Claim:
    """A fact the record says ended ("from 2019 until 2020"): recorded as history, never
    the current value. For a functional predicate it takes its place in the timeline:
    it ends where a later value begins, and an earlier closed value ends where it begins
    (a value published now keeps its interval: an ended fact does not close it)."""
    claim.status = ClaimStatus.SUPERSEDED
    claim.status_reason = f"ended {claim.valid_to:%Y-%m-%d}, as the record says"
    touched: list[Claim] = []
    if claim.predicate in functional_predicates():
        timeline = list(
            Claim.objects.select_for_update()
            .filter(
                group_id=claim.group_id, subject=claim.subject, predicate=claim.predicate,
                status__in=[ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED],
            )
            .order_by("valid_from", "pk")
        )  # fmt: skip
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
            before.version += 1
            touched.append(before)
    claim.save()
    for old in touched:
        old.save(update_fields=["valid_to", "superseded_by", "version"])
    for pk in [claim.pk, *(old.pk for old in touched)]:
        outbox_enqueue(
            group_id=claim.group_id, kind=PROJECT_CLAIM, payload={"claim_id": pk},
            priority=priority,
        )  # fmt: skip
    return claim


def _place_in_history(claim: Claim, *, priority: Priority) -> Claim | None:
    """A value of a functional predicate that arrives late: valid from before the current
    value began. It does not supersede the newer value; it goes into the history where
    its valid time puts it (superseded by the value after it, ending the one before it).
    Returns the claim that holds the value then (itself, or the earlier claim it merely
    re-confirms); None when the value is the newest and the caller publishes it as usual.
    """
    timeline = (
        Claim.objects.select_for_update()
        .filter(
            group_id=claim.group_id, subject=claim.subject, predicate=claim.predicate,
            status__in=[ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED],
        )
        .exclude(pk=claim.pk)
        .order_by("valid_from", "pk")
    )  # fmt: skip
    later = [old for old in timeline if old.valid_from > claim.valid_from]
    if not later:
        return None
    after = later[0]
    before = next(
        (old for old in reversed(list(timeline)) if old.valid_from <= claim.valid_from), None
    )
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
    claim.save()
    touched = [claim.pk]
    if before is not None and (before.valid_to is None or before.valid_to > claim.valid_from):
        before.valid_to = claim.valid_from
        before.superseded_by = claim
        before.version += 1
        before.save(update_fields=["valid_to", "superseded_by", "version"])
        touched.append(before.pk)
    for pk in touched:
        outbox_enqueue(
            group_id=claim.group_id, kind=PROJECT_CLAIM, payload={"claim_id": pk},
            priority=priority,
        )  # fmt: skip
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
    """Publish a claim: supersede what it replaces, queue its projection. Returns the live claim.

    A re-confirmation of a value that is already published returns that claim unchanged;
    the caller attaches its evidence there (an unsaved new claim is simply not kept).
    """
    if claim.valid_to is not None:  # the record says the fact ended: it is history
        return _record_ended(claim, priority=priority)
    plan = supersession.plan(
        new_object_key=claim.object_key,
        new_fact=claim.fact_text,
        current=_current_values(claim),
        functional=claim.predicate in functional_predicates(),
        replaces=_replaces_or_coexists(judge) if judge else None,
    )
    if plan.duplicate_of is not None:
        return Claim.objects.get(pk=plan.duplicate_of)
    if claim.predicate in functional_predicates():
        placed = _place_in_history(claim, priority=priority)
        if placed is not None:
            return placed
    claim.status = ClaimStatus.PUBLISHED
    claim.save()
    closed = Claim.objects.filter(pk__in=plan.supersedes)
    for old in closed:
        old.status = ClaimStatus.SUPERSEDED
        old.valid_to = max(claim.valid_from, old.valid_from)
        old.superseded_by = claim
        old.version += 1
        old.save(update_fields=["status", "valid_to", "superseded_by", "version"])
        outbox_enqueue(
            group_id=old.group_id,
            kind=PROJECT_CLAIM,
            payload={"claim_id": old.pk},
            priority=priority,
        )
    outbox_enqueue(
        group_id=claim.group_id,
        kind=PROJECT_CLAIM,
        payload={"claim_id": claim.pk},
        priority=priority,
    )
    return claim


@transaction.atomic(savepoint=False)
def claim_record(
    *,
    source: Source,
    episode: Episode,
    new: NewClaim,
    decision: Decision,
    valid_from: dt.datetime,
    valid_to: dt.datetime | None = None,
    judge: ContradictionJudge | None = None,
) -> Claim:
    """Record one extracted claim as the tier decision says, with its evidence.

    Returns the claim that now holds it: the new one, or the published claim of the same
    subject, predicate and value that it re-confirms. An episode that says one published
    claim twice (a passage or relation repeated word for word) cites it once, at its
    first span (one evidence per claim and episode); the caller sees the same claim
    returned again and counts the repeat.
    """
    claim = Claim(
        group_id=source.group_id,
        source=source,
        subject=new.subject,
        predicate=new.predicate,
        object_entity=new.object_entity,
        object_literal=new.object_literal,
        object_key=object_key(object_entity=new.object_entity, object_literal=new.object_literal),
        fact_text=new.fact_text,
        confidence=new.confidence,
        verification=decision.verification,
        tier=source.trust_tier,
        authority=decision.authority,
        status=decision.status,
        status_reason=decision.reason,
        valid_from=valid_from,
        valid_to=valid_to,
    )
    if decision.status is ClaimStatus.PUBLISHED:
        recorded = claim_publish(claim, judge=judge)
    else:
        claim.save()
        recorded = claim
    if recorded is not claim and recorded.evidence.filter(episode=episode).exists():
        # The same episode says it twice: one citation is enough.
        logger.debug(
            "episode %s repeats claim %s at %s; its first citation is kept",
            episode.pk,
            recorded.pk,
            new.span,
        )
        return recorded
    start, end = new.span if new.span else (None, None)
    Evidence.objects.create(
        claim=recorded,
        episode=episode,
        group_id=recorded.group_id,
        start=start,
        end=end,
        snippet=new.snippet,
    )
    if recorded is not claim:
        # A re-confirmation: the live claim gained a citation (its graph edge lists its
        # episodes, its index text its snippets), so both projections are refreshed.
        outbox_enqueue(
            group_id=recorded.group_id, kind=PROJECT_CLAIM, payload={"claim_id": recorded.pk}
        )
    return recorded
