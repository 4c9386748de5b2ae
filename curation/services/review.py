"""Review decisions: the one write path for approving, rejecting and accepting claims,
and for keeping or retracting a published claim that asks for a re-check.

Every decision checks the reviewer's role in the claim's scope, checks the version the
reviewer saw (optimistic concurrency: a second reviewer gets a Conflict naming who
decided), is audited, and publishes exactly as automatic publication does. A decision
that publishes returns an `Outcome` saying what actually happened (published, what it
superseded, or closed as a duplicate of a published claim): every entrypoint shows
that message, never its own guess.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.outbox import Priority
from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Evidence, MergeCandidate
from curation.selectors import RECHECKABLE
from curation.services.claims import object_key
from curation.services.entities import entity_merge, entity_resolve
from curation.services.lifecycle import claim_publish, claim_reject, claims_project
from curation.services.retraction import Retraction, claim_retract
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record
from tenants.services.scopes import locked_for

REVIEWABLE = {
    "claims": ClaimStatus.PENDING_REVIEW,
    "proposals": ClaimStatus.PROPOSED,
}


class Conflict(Exception):
    """The item was decided (or changed) after the reviewer loaded it."""

    def __init__(self, claim: Claim, message: str = "") -> None:
        who = claim.reviewed_by.get_username() if claim.reviewed_by else "the system"
        super().__init__(message or f"Already {claim.status.replace('_', ' ')} by {who}.")
        self.claim = claim


class Result(enum.StrEnum):
    """What publishing a reviewed item came to."""

    PUBLISHED = "published"  # it is the live value now (and may have superseded others)
    DUPLICATE = "duplicate"  # the value was already published: that claim absorbed it


@dataclass(frozen=True)
class Outcome:
    """What a publishing decision did: `message` is what the reviewer is shown, verbatim."""

    claim: Claim  # the decided row
    result: Result
    live_id: int  # the published claim that now carries the value
    superseded: tuple[int, ...]
    message: str


def _ids(ids: tuple[int, ...]) -> str:
    return ", ".join(f"#{pk}" for pk in ids)


@dataclass(frozen=True)
class Edit:
    """A reviewer's corrections before approving."""

    fact_text: str
    object_text: str | None = None


DECIDING = "deciding needs the reviewer role in this scope"


def _load(actor: Principal, claim_id: int, version: int, expected: ClaimStatus) -> Claim:
    rows = Claim.objects.select_related("reviewed_by", "subject", "object_entity")
    claim = locked_for(actor, rows, claim_id, role=Role.REVIEWER, refusal=DECIDING)
    if claim.version != version or claim.status != expected:
        raise Conflict(claim)
    return claim


def _decided(claim: Claim, actor: Principal) -> None:
    """Who decided, and when (the lifecycle stores the decision and bumps the version)."""
    claim.reviewed_by_id = actor.user_id
    claim.reviewed_at = timezone.now()


def _apply_edit(claim: Claim, edit: Edit) -> dict[str, object]:
    before: dict[str, object] = {
        "fact_text": claim.fact_text,
        "object": claim.object_literal or str(claim.object_entity),
    }
    claim.fact_text = edit.fact_text.strip() or claim.fact_text
    if edit.object_text is not None and edit.object_text.strip():
        if claim.object_entity is not None:
            entity = entity_resolve(
                group_id=claim.group_id,
                name=edit.object_text,
                entity_type=claim.object_entity.entity_type,
            ).entity
            claim.object_entity = entity
        else:
            claim.object_literal = edit.object_text.strip()
        claim.object_key = object_key(
            object_entity=claim.object_entity, object_literal=claim.object_literal
        )
    return before


def _publish(claim: Claim, actor: Principal, *, verb: str = "Published") -> Outcome:
    """Publish a reviewed claim; a value that is already published absorbs it instead."""
    item = "proposal" if claim.status == ClaimStatus.PROPOSED else "claim"
    claim.verification = Verification.HUMAN_VERIFIED
    _decided(claim, actor)
    live = claim_publish(claim, priority=Priority.INTERACTIVE)
    if live.pk == claim.pk and live.status == ClaimStatus.SUPERSEDED:
        # Valid from before the current value began: it went into the history.
        until = f"{claim.valid_to:%Y-%m-%d}" if claim.valid_to else "?"
        message = (
            f"{verb} #{claim.pk} into the history: valid {claim.valid_from:%Y-%m-%d} to {until}"
        )
        message += (
            f", when #{claim.superseded_by_id} took over (a newer value is current)."
            if claim.superseded_by_id
            else ", when it ended, as its document says."
        )
        return Outcome(claim, Result.PUBLISHED, claim.superseded_by_id or claim.pk, (), message)
    if live.pk == claim.pk:
        superseded = tuple(claim.supersedes.order_by("pk").values_list("pk", flat=True))
        message = f"{verb} #{claim.pk}" + (f"; superseded {_ids(superseded)}" if superseded else "")
        return Outcome(claim, Result.PUBLISHED, claim.pk, superseded, message + ".")
    # The same value is already published: it gains this claim's evidence and the
    # reviewer's verification; this row is closed as a duplicate, not deleted.
    for evidence in claim.evidence.all():
        Evidence.objects.get_or_create(
            claim=live,
            episode_id=evidence.episode_id,
            defaults={"group_id": live.group_id, "start": evidence.start, "end": evidence.end,
                      "snippet": evidence.snippet},
        )  # fmt: skip
    live.verification = Verification.HUMAN_VERIFIED
    live.save(update_fields=["verification"])
    # Verification is a ranking input: the index must learn it, and the graph the evidence.
    claims_project(live.group_id, [live.pk], priority=Priority.INTERACTIVE)
    claim_reject(claim, reason=f"already published as #{live.pk}")
    message = (
        f"Already published as #{live.pk}: its evidence and your verification were added "
        f"there; this {item} is closed as a duplicate."
    )
    return Outcome(claim, Result.DUPLICATE, live.pk, (), message)


def _audited(outcome: Outcome) -> dict[str, object]:
    return {"published_as": outcome.live_id, "result": outcome.result,
            "superseded": list(outcome.superseded)}  # fmt: skip


@transaction.atomic
def review_approve(
    *, actor: Principal, claim_id: int, version: int, edit: Edit | None = None
) -> Outcome:
    """Approve a tier-3 claim (optionally edited first): it is published, human-verified."""
    claim = _load(actor, claim_id, version, ClaimStatus.PENDING_REVIEW)
    before = _apply_edit(claim, edit) if edit else None
    outcome = _publish(claim, actor, verb="Edited and published" if edit else "Published")
    data = _audited(outcome)
    if edit:
        data["before"] = before
    audit_record(
        actor=actor,
        group_id=claim.group_id,
        action="review.edit_approve" if edit else "review.approve",
        target=("claim", claim.pk),
        data=data,
    )
    return outcome


@transaction.atomic
def review_reject(*, actor: Principal, claim_id: int, version: int, reason: str) -> Claim:
    """Reject a tier-3 claim; the reason is required and kept."""
    if not reason.strip():
        raise ValueError("say why the claim is rejected")
    claim = _load(actor, claim_id, version, ClaimStatus.PENDING_REVIEW)
    return _close(claim, actor, reason.strip(), action="review.reject")


def _close(claim: Claim, actor: Principal, reason: str, *, action: str) -> Claim:
    _decided(claim, actor)
    claim_reject(claim, reason=reason)
    audit_record(
        actor=actor,
        group_id=claim.group_id,
        action=action,
        target=("claim", claim.pk),
        data={"reason": reason},
    )
    return claim


@transaction.atomic
def proposal_accept(*, actor: Principal, claim_id: int, version: int) -> Outcome:
    """Accept a tier-4 proposal: it is published exactly as an approval publishes."""
    claim = _load(actor, claim_id, version, ClaimStatus.PROPOSED)
    outcome = _publish(claim, actor)
    audit_record(
        actor=actor,
        group_id=claim.group_id,
        action="proposal.accept",
        target=("claim", claim.pk),
        data=_audited(outcome),
    )
    return outcome


@transaction.atomic
def proposal_decline(*, actor: Principal, claim_id: int, version: int, reason: str = "") -> Claim:
    """Decline a proposal."""
    claim = _load(actor, claim_id, version, ClaimStatus.PROPOSED)
    return _close(claim, actor, reason.strip() or "declined", action="proposal.decline")


def _load_recheck(actor: Principal, claim_id: int, version: int) -> Claim:
    """A published claim that asks for a re-check, locked, as the reviewer saw it."""
    rows = Claim.objects.select_related("reviewed_by")
    claim = locked_for(actor, rows, claim_id, role=Role.REVIEWER, refusal=DECIDING)
    if claim.version != version or claim.status not in RECHECKABLE:
        status = claim.status.replace("_", " ")
        raise Conflict(claim, f"Changed since you loaded it: #{claim.pk} is {status} now.")
    if not claim.recheck:
        raise Conflict(claim, f"Already re-checked: nothing asks for a re-check of #{claim.pk}.")
    return claim


@transaction.atomic
def recheck_keep(*, actor: Principal, claim_id: int, version: int) -> Claim:
    """Keep a claim that asks for a re-check (reprocessing no longer found it): the
    request is cleared and audited. Not a lifecycle change: its version stays."""
    claim = _load_recheck(actor, claim_id, version)
    asked, claim.recheck = claim.recheck, ""
    claim.save(update_fields=["recheck"])
    audit_record(
        actor=actor,
        group_id=claim.group_id,
        action="review.recheck_keep",
        target=("claim", claim.pk),
        data={"recheck": asked},
    )
    return claim


@transaction.atomic
def recheck_retract(*, actor: Principal, claim_id: int, version: int, reason: str) -> Retraction:
    """Retract a claim that asks for a re-check, through the retraction service (with
    the reviewer's reason, audited there); the request is cleared with it."""
    _load_recheck(actor, claim_id, version)
    done = claim_retract(actor=actor, claim_id=claim_id, reason=reason)
    Claim.objects.filter(pk=claim_id).update(recheck="")
    return done


@transaction.atomic
def candidate_decide(*, actor: Principal, candidate_id: int, merge: bool) -> MergeCandidate:
    """Merge two entities, or record that they are different (kept apart)."""
    candidate = MergeCandidate.objects.select_for_update().get(pk=candidate_id)
    if not actor.can(Role.REVIEWER, candidate.group_id):
        raise PermissionDenied("deciding needs the reviewer role in this scope")
    if candidate.status != MergeCandidate.Status.OPEN:
        raise ValueError(f"already {candidate.get_status_display()}")
    if merge:
        entity_merge(actor=actor, entity_id=candidate.entity_id, into_id=candidate.candidate_id)
        candidate.status = MergeCandidate.Status.MERGED
    else:
        candidate.status = MergeCandidate.Status.KEPT_APART
        audit_record(
            actor=actor,
            group_id=candidate.group_id,
            action="entity.keep_apart",
            target=("entity", candidate.entity_id),
            data={"other": candidate.candidate_id},
        )
    candidate.save(update_fields=["status"])
    return candidate


@dataclass(frozen=True)
class BulkOutcome:
    """What a bulk decision did, item by item: each decided item's message, and conflicts."""

    done: list[int]
    conflicts: dict[int, str]
    messages: dict[int, str]


def review_bulk(
    *, actor: Principal, items: Iterable[tuple[int, int]], approve: bool, reason: str = ""
) -> BulkOutcome:
    """Approve or reject a selection; each item commits or conflicts on its own."""
    if not approve and not reason.strip():
        raise ValueError("say why the selected claims are rejected")
    done: list[int] = []
    conflicts: dict[int, str] = {}
    messages: dict[int, str] = {}
    for claim_id, version in items:
        try:
            if approve:
                outcome = review_approve(actor=actor, claim_id=claim_id, version=version)
                messages[claim_id] = outcome.message
            else:
                review_reject(actor=actor, claim_id=claim_id, version=version, reason=reason)
                messages[claim_id] = f"Rejected #{claim_id}."
        except Conflict as conflict:
            conflicts[claim_id] = str(conflict)
        else:
            done.append(claim_id)
    return BulkOutcome(done=done, conflicts=conflicts, messages=messages)
