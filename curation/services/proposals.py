"""Agents propose facts: a tier-4 proposal, attributed to its principal, never published
by the call.

An agent's word is a proposal whatever its caller's role: it waits in the reviewers'
proposals queue, with no search index entry and no graph projection (nothing is queued
in the outbox), until a reviewer accepts it (`proposal_accept`), which publishes it as
any approval does. It is recorded the way every claim is: an immutable episode holding
the evidence (bytes first, content addressed), entities resolved by name as ingestion
resolves them, the claim and its citation, and an audit event, in one transaction.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from django.db import IntegrityError, transaction
from django.utils import timezone

from common.errors import NotFound, PermissionDenied
from curation.domain.ontology import Ontology
from curation.domain.proposals import Proposal, ProposalRefused, proposal_parse
from curation.domain.sources import AGENT_KIND
from curation.domain.tiers import ClaimStatus, Tier, decide
from curation.models import Claim, Entity, Episode, EpisodeStatus, Evidence, Source
from curation.ports import ObjectStore
from curation.selectors import ontology_for
from curation.services.claims import NewClaim, claim_record
from curation.services.entities import entity_resolve
from curation.services.ingest import content_hash
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record

__all__ = ["ProposalRefused", "Proposed", "claim_propose", "proposal_record"]

AGENT_SOURCE_NAME = "Agent proposals"
# Facts are proposed to a workspace or a project (group id prefixes), never to an
# organisation or a personal scope.
PROPOSAL_SCOPES = ("w:", "p:")
# The agent states the fact itself: nothing was extracted, so nothing is uncertain about
# what was said. Whether it is true is the tier's (authority 0.4) and the reviewer's call.
CONFIDENCE = 1.0


@dataclass(frozen=True)
class Proposed:
    """The proposal's claim, and whether this call recorded it (False: proposed before)."""

    claim: Claim
    created: bool

    @property
    def message(self) -> str:
        """What the caller is told (a model reads it): where the proposal stands."""
        claim = self.claim
        if self.created:
            return (
                f"Proposed as #{claim.pk}: it waits for a reviewer, and is neither published "
                "nor searchable until one accepts it."
            )
        said = f"Already proposed as #{claim.pk}"
        if claim.status == ClaimStatus.PROPOSED:
            return f"{said}: it still waits for a reviewer."
        if claim.status == ClaimStatus.PUBLISHED:
            return f"{said} and accepted: it is published."
        if claim.status == ClaimStatus.REJECTED:
            return f"{said} and declined: {claim.status_reason}."
        return f"{said}; it is {claim.status.replace('_', ' ')} now."


PROPOSERS_ONLY = "proposing a fact needs the contributor role in a workspace"


def _target(actor: Principal, group_id: str | None) -> str:
    """The workspace the proposal goes to: the named one, else the caller's only one."""
    if group_id is not None:
        if actor.role_in(group_id) is None:  # never say whether another tenant's exists
            raise NotFound("No such scope: name one of your workspaces by its group id.")
        if not actor.can(Role.CONTRIBUTOR, group_id):
            raise PermissionDenied("proposing a fact needs the contributor role in this scope")
        if not group_id.startswith(PROPOSAL_SCOPES):
            raise ProposalRefused({"scope": "facts are proposed to a workspace or a project"})
        return group_id
    targets = [g for g in actor.groups_at_least(Role.CONTRIBUTOR) if g.startswith(PROPOSAL_SCOPES)]
    if not targets:
        raise PermissionDenied(PROPOSERS_ONLY)
    if len(targets) > 1:
        raise ProposalRefused(
            {"scope": f"you can propose to {len(targets)} scopes; name one: {', '.join(targets)}"}
        )
    return targets[0]


def _agent_source(group_id: str) -> Source:
    """The workspace's source for agents' proposals (tier 4), made on first use."""
    found = Source.objects.filter(group_id=group_id, kind=AGENT_KIND).first()
    if found is not None:
        return found
    # A source of the workspace's own may hold the name already (names are unique).
    taken = set(
        Source.objects.filter(group_id=group_id, name__startswith=AGENT_SOURCE_NAME).values_list(
            "name", flat=True
        )
    )
    # Lazily: the numbered names go on for ever (a tuple of them would never be built).
    names = itertools.chain(
        [AGENT_SOURCE_NAME], (f"{AGENT_SOURCE_NAME} ({n})" for n in itertools.count(2))
    )
    name = next(name for name in names if name not in taken)
    try:
        with transaction.atomic():  # a concurrent first proposal may create it first
            return Source.objects.create(
                group_id=group_id, origin_group_id=group_id, name=name,
                kind=AGENT_KIND, trust_tier=Tier.UNVERIFIED, schedule_seconds=None,
            )  # fmt: skip
    except IntegrityError:
        return Source.objects.get(group_id=group_id, kind=AGENT_KIND)


def _already(source: Source, external_id: str, digest: str) -> Claim | None:
    """The claim an earlier identical proposal recorded, if there was one."""
    evidence = (
        Evidence.objects.filter(
            episode__source=source,
            episode__external_id=external_id,
            episode__content_hash=digest,
            claim__source=source,
        )
        .select_related("claim")
        .order_by("pk")
        .first()
    )
    return None if evidence is None else evidence.claim


def _entities(group_id: str, proposal: Proposal, object_type: str) -> tuple[Entity, Entity | None]:
    """Subject and object entities, by exact name or alias in the workspace, else new."""
    subject = entity_resolve(group_id=group_id, name=proposal.subject).entity
    if proposal.object_is_literal:
        return subject, None
    obj = entity_resolve(
        group_id=group_id, name=proposal.object, entity_type=object_type or "thing"
    )
    return subject, obj.entity


def _episode(
    source: Source, proposal: Proposal, actor: Principal, *, key: str, store: ObjectStore
) -> Episode:
    """The immutable record of what the agent said: the evidence, bytes first."""
    data = proposal.evidence.encode("utf-8")
    digest = content_hash(data)
    object_key = f"{source.group_id}/{source.pk}/{digest}"
    store.put(object_key, data, content_type="text/plain; charset=utf-8")
    who = f"Proposed by {actor.label}" + (f" (user #{actor.user_id})" if actor.user_id else "")
    return Episode.objects.create(
        group_id=source.group_id, source=source, external_id=key, url=proposal.source_url,
        title=who[:500], content_hash=digest, object_key=object_key,
        mime="text/plain; charset=utf-8", size=len(data), fetched_at=timezone.now(),
        status=EpisodeStatus.PROCESSED, claims_count=1,
    )  # fmt: skip


def _record(
    source: Source, proposal: Proposal, actor: Principal, *, ontology: Ontology, key: str,
    store: ObjectStore,
) -> Claim:  # fmt: skip
    """The episode, the entities and the proposed claim citing the evidence."""
    sense = ontology.get(proposal.predicate)
    subject, obj = _entities(source.group_id, proposal, sense.object_type if sense else "")
    episode = _episode(source, proposal, actor, key=key, store=store)
    # Tier 4's decision, and a proposal whoever calls (an agent's word never publishes);
    # the reason says who proposed it.
    decision = replace(
        decide(Tier.UNVERIFIED, target_is_shared=True, writer_is_personal=False),
        status=ClaimStatus.PROPOSED, reason=f"tier 4: proposed by {actor.label}"[:200],
    )  # fmt: skip
    new = NewClaim(
        subject=subject, predicate=proposal.predicate, fact_text=proposal.fact_text(ontology),
        confidence=CONFIDENCE, object_entity=obj,
        object_literal=proposal.object if obj is None else None,
        span=(0, len(proposal.evidence)), snippet=proposal.evidence,
    )  # fmt: skip
    return claim_record(
        source=source, episode=episode, new=new, decision=decision, valid_from=timezone.now()
    )


def proposal_record(
    *,
    actor: Principal,
    store: ObjectStore,
    subject: str,
    predicate: str,
    object: str,
    evidence: str,
    source_url: str = "",
    group_id: str | None = None,
) -> Proposed:
    """`claim_propose`, also saying whether this call recorded the proposal (an identical
    one from the same principal returns the earlier claim, whatever became of it)."""
    with rls.tenant_context(actor):
        target = _target(actor, group_id)
        ontology = ontology_for(target)
        proposal = proposal_parse(
            subject=subject, predicate=predicate, object=object, evidence=evidence,
            source_url=source_url, ontology=ontology,
        )  # fmt: skip
        source = _agent_source(target)
        if not source.enabled:
            raise PermissionDenied("an admin of this workspace has turned agents' proposals off")
        key = proposal.key(actor.label)
        digest = content_hash(proposal.evidence.encode("utf-8"))
        if (earlier := _already(source, key, digest)) is not None:
            return Proposed(earlier, created=False)
        try:
            with transaction.atomic():
                claim = _record(source, proposal, actor, ontology=ontology, key=key, store=store)
                audit_record(
                    actor=actor, group_id=target, action="claim.propose",
                    target=("claim", claim.pk),
                    data={"predicate": claim.predicate, "episode": claim.evidence.get().episode_id},
                )  # fmt: skip
        except IntegrityError:
            # The same proposal, sent twice at once: the other call recorded it first.
            if (earlier := _already(source, key, digest)) is not None:
                return Proposed(earlier, created=False)
            raise
    return Proposed(claim, created=True)


def claim_propose(
    *,
    actor: Principal,
    store: ObjectStore,
    subject: str,
    predicate: str,
    object: str,
    evidence: str,
    source_url: str = "",
    group_id: str | None = None,
) -> Claim:
    """Propose (subject, PREDICATE, object) with its evidence, as the actor (contributor or
    above in the workspace); it waits for a reviewer, never published by this call.

    The workspace is `group_id` (one of the actor's) or the actor's only one. Raises
    `ProposalRefused` (a ValueError naming each bad field), `PermissionDenied` (role too
    low, proposals turned off) or `NotFound` (a scope the actor does not have).
    """
    return proposal_record(
        actor=actor, store=store, subject=subject, predicate=predicate, object=object,
        evidence=evidence, source_url=source_url, group_id=group_id,
    ).claim  # fmt: skip
