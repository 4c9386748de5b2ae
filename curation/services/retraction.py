"""Retraction: withdrawing a claim, an episode or a whole source, with the reason kept.

A retracted claim stops being valid now (`valid_to` closes at the retraction) and keeps
what was true before: search hides it now and finds it `as_of` a time it was valid, so
the record of what VERA said then stays. Its graph edge is removed (only published and
superseded claims are edges) and its index document says "retracted" (the projection
jobs of the same transaction carry both). A claim the retracted one had superseded
becomes current again if nothing else replaced it. Nothing is deleted: undoing a
retraction is a new decision (`claim_reinstate`: its value published again, from now).

An episode or a source withdraws the claims it alone supports: a claim another
episode also cites keeps its standing (the citation stays, and the episode is marked
retracted, so a reader sees the document was withdrawn). Retracting a source also stops
its schedule, so its documents do not come back with the next run.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.outbox import Priority
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, EpisodeStatus, Evidence, Source
from curation.services.lifecycle import (
    RETRACTABLE,
    claim_publish,
    claims_project,
    claims_retract,
)
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record
from tenants.services.scopes import locked_for

# Ids named in an audit event at most (the counts are always exact).
AUDITED_IDS = 200


class RetractionRefused(Exception):
    """A retraction that cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class Retraction:
    """What a retraction did, counted; `message` is what the caller is shown."""

    target: str  # "claim 12", "episode 3", "source 2"
    retracted: tuple[int, ...]
    restored: tuple[int, ...]  # superseded claims current again
    kept: int  # claims still supported by another episode

    @property
    def message(self) -> str:
        parts = [f"Retracted {self.target}: {len(self.retracted)} claims withdrawn"]
        if self.restored:
            parts.append(f"{len(self.restored)} earlier values current again")
        if self.kept:
            parts.append(f"{self.kept} claims kept (another document supports them)")
        return "; ".join(parts) + "."


REFUSAL = "retracting needs the reviewer or admin role in this scope"


def _check(actor: Principal, group_id: str, reason: str) -> str:
    if not actor.can(Role.REVIEWER, group_id):
        raise PermissionDenied(REFUSAL)
    reason = reason.strip()
    if not reason:
        raise RetractionRefused("say why: the reason is kept with the claims and in the audit log")
    return reason[:200]


def _finish(
    *, actor: Principal, group_id: str, target: tuple[str, str], reason: str,
    claims: QuerySet[Claim], kept: int,
) -> Retraction:  # fmt: skip
    retracted, restored = claims_retract(group_id, claims, reason=reason, now=timezone.now())
    kind, key = target
    audit_record(
        actor=actor,
        group_id=group_id,
        action=f"{kind}.retract",
        target=target,
        data={
            "reason": reason,
            "retracted": len(retracted),
            "restored": len(restored),
            "kept": kept,
            "claim_ids": retracted[:AUDITED_IDS],
            "restored_ids": restored[:AUDITED_IDS],
        },
    )
    return Retraction(f"{kind} {key}", tuple(retracted), tuple(restored), kept)


@transaction.atomic
def claim_retract(*, actor: Principal, claim_id: int, reason: str) -> Retraction:
    """Withdraw one claim (reviewer or admin; a reason is required)."""
    claim = locked_for(actor, Claim.objects.all(), claim_id, role=Role.REVIEWER, refusal=REFUSAL)
    reason = _check(actor, claim.group_id, reason)
    if claim.status not in RETRACTABLE:
        raise RetractionRefused(f"claim {claim_id} is {claim.status}: there is nothing to retract")
    return _finish(
        actor=actor, group_id=claim.group_id, target=("claim", str(claim_id)), reason=reason,
        claims=Claim.objects.filter(pk=claim_id), kept=0,
    )  # fmt: skip


def _alone(episodes: QuerySet[Episode]) -> tuple[QuerySet[Claim], int]:
    """The claims these episodes cite that no other (unretracted) episode supports, and
    how many they cite that another one does."""
    cited = Claim.objects.filter(evidence__episode__in=episodes).distinct()
    elsewhere = Evidence.objects.filter(claim=OuterRef("pk")).exclude(
        Q(episode__in=episodes) | Q(episode__status=EpisodeStatus.RETRACTED)
    )
    alone = cited.exclude(Exists(elsewhere))
    kept = cited.filter(Exists(elsewhere), status__in=RETRACTABLE).count()
    return Claim.objects.filter(pk__in=alone.values("pk")), kept


@transaction.atomic
def episode_retract(*, actor: Principal, episode_id: int, reason: str) -> Retraction:
    """Withdraw one episode (a fetched document) and the claims only it supports."""
    episode = locked_for(
        actor, Episode.objects.all(), episode_id, role=Role.REVIEWER, refusal=REFUSAL
    )
    reason = _check(actor, episode.group_id, reason)
    if episode.status == EpisodeStatus.RETRACTED:
        raise RetractionRefused(f"episode {episode_id} is retracted already")
    episodes = Episode.objects.filter(pk=episode_id)
    claims, kept = _alone(episodes)
    claims = Claim.objects.filter(pk__in=list(claims.values_list("pk", flat=True)))
    episodes.update(status=EpisodeStatus.RETRACTED, failure_reason=f"retracted: {reason}")
    return _finish(
        actor=actor, group_id=episode.group_id, target=("episode", str(episode_id)),
        reason=reason, claims=claims, kept=kept,
    )  # fmt: skip


@transaction.atomic
def source_retract(*, actor: Principal, source_id: int, reason: str) -> Retraction:
    """Withdraw a source: every episode of it, the claims only they support; its schedule
    stops (a later run would bring the documents back)."""
    source = locked_for(actor, Source.objects.all(), source_id, role=Role.REVIEWER, refusal=REFUSAL)
    reason = _check(actor, source.group_id, reason)
    episodes = Episode.objects.filter(source=source).exclude(status=EpisodeStatus.RETRACTED)
    claims, kept = _alone(episodes)
    claims = Claim.objects.filter(pk__in=list(claims.values_list("pk", flat=True)))
    episodes.update(status=EpisodeStatus.RETRACTED, failure_reason=f"retracted: {reason}")
    Source.objects.filter(pk=source.pk).update(enabled=False)
    return _finish(
        actor=actor, group_id=source.group_id, target=("source", str(source_id)),
        reason=reason, claims=claims, kept=kept,
    )  # fmt: skip


@dataclass(frozen=True)
class Reinstatement:
    """What undoing a retraction did: the retracted claim stays; its value is current again
    as `current` (a new claim, or a published one that already held the value)."""

    retracted: int
    current: int
    created: bool

    @property
    def message(self) -> str:
        if self.created:
            return (
                f"Reinstated claim {self.retracted} as claim {self.current}, current from now; "
                "the retraction stays in its history."
            )
        return f"Claim {self.current} already holds that value; it now cites this evidence too."


@transaction.atomic
def claim_reinstate(*, actor: Principal, claim_id: int, reason: str) -> Reinstatement:
    """Undo a retraction by a new decision (reviewer or admin; a reason is required).

    Nothing is un-written: the retracted claim keeps its status, reason and closed
    interval (what VERA said, and when it withdrew it). Its value is published again as
    a new claim valid from now, citing the same evidence, through the ordinary publish
    path: a functional predicate's current value is superseded by it, a value that is
    already published is re-confirmed instead of duplicated.
    """
    old = locked_for(
        actor, Claim.objects.all(), claim_id, role=Role.REVIEWER,
        refusal="reinstating needs the reviewer or admin role in this scope",
    )  # fmt: skip
    reason = reason.strip()
    if not reason:
        raise RetractionRefused("say why: the reason is kept with the claim and in the audit log")
    if old.status != ClaimStatus.RETRACTED:
        raise RetractionRefused(
            f"claim {claim_id} is {old.status}: only a retracted claim can be reinstated"
        )
    new = Claim(
        group_id=old.group_id, source_id=old.source_id, subject_id=old.subject_id,
        predicate=old.predicate, object_entity_id=old.object_entity_id,
        object_literal=old.object_literal, object_key=old.object_key, fact_text=old.fact_text,
        confidence=old.confidence, verification=old.verification, tier=old.tier,
        authority=old.authority, status=ClaimStatus.PUBLISHED,
        status_reason=f"reinstated (claim {old.pk} was retracted): {reason[:150]}",
        valid_from=timezone.now(),
    )  # fmt: skip
    current = claim_publish(new, priority=Priority.INTERACTIVE)
    cited = set(current.evidence.values_list("episode_id", flat=True))
    Evidence.objects.bulk_create(
        Evidence(
            claim=current,
            episode_id=each.episode_id,
            group_id=current.group_id,
            start=each.start,
            end=each.end,
            snippet=each.snippet,
        )
        for each in old.evidence.order_by("pk")
        if each.episode_id not in cited
    )
    claims_project(old.group_id, [current.pk])  # after the evidence: its index text cites it
    done = Reinstatement(retracted=old.pk, current=current.pk, created=current is new)
    audit_record(
        actor=actor, group_id=old.group_id, action="claim.reinstate", target=("claim", str(old.pk)),
        data={"reason": reason[:200], "current": current.pk, "created": done.created},
    )  # fmt: skip
    return done
