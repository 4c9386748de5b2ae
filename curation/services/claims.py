"""Recording extracted claims as their tier decides, with their evidence (publishing and
every later change of status or validity is `curation.services.lifecycle`'s)."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.db import transaction

from curation.domain import supersession
from curation.domain.outbox import Priority
from curation.domain.tiers import ClaimStatus, Decision
from curation.models import Claim, Entity, Episode, Evidence, Source
from curation.ports import ContradictionJudge
from curation.services.lifecycle import claim_publish, claims_project

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
    elif (waiting := _waiting_version_of(claim, episode)) is not None:
        recorded = waiting  # the item's earlier version queued it: one queue entry
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
    if recorded is not claim and recorded.status == ClaimStatus.PUBLISHED:
        # A re-confirmation: the live claim gained a citation (its graph edge lists its
        # episodes, its index text its snippets), so both projections are refreshed.
        claims_project(recorded.group_id, [recorded.pk], priority=Priority.BULK)
    return recorded


def _waiting_version_of(claim: Claim, episode: Episode) -> Claim | None:
    """The waiting claim an earlier version of the episode's item queued with the same
    subject, predicate and value, still open: a history export queues each fact once,
    cited by every version that says it (None for a plain record, or none such)."""
    if episode.version_from is None:
        return None
    same = Claim.objects.filter(
        group_id=claim.group_id, source=claim.source, subject=claim.subject,
        predicate=claim.predicate, object_key=claim.object_key, status=claim.status,
        valid_to__isnull=True, valid_from__lte=claim.valid_from,
        evidence__episode__external_id=episode.external_id,
    )  # fmt: skip
    return same.order_by("-valid_from", "-pk").first()
