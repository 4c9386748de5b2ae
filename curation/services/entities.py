"""Entity resolution: exact normalised alias, then pg_trgm fuzzy, then a semantic step.

An automatic link needs its similarity threshold *and* no identifier-like difference
(`identifier_conflict`): "cluster prod-eu-1" and "cluster prod-eu-3" are as close as a
typo to a trigram or an embedding, and are still two clusters. Anything short of a
link becomes at most an open merge candidate for the reviewers, never an alias. So
are names made of the same words in another order (`word_order_conflict`):
"stock-notify-queue" and "notify-stock-queue" are two queues. A structured record's
subject carries its id in its source (`Identity`): found by it first, and never linked
by name to an entity that holds another id of that source.
Every alias records how it was linked and how close it was, so a link can be audited
and undone (`alias_unlink`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.contrib.postgres.search import TrigramDistance
from django.db import transaction
from django.db.models import Q
from pgvector.django import CosineDistance

from common.errors import PermissionDenied
from curation.domain.errors import JudgeUnavailable
from curation.domain.names import (
    NameConflict,
    identifier_conflict,
    normalize_name,
    spelling_conflict,
    word_order_conflict,
)
from curation.domain.outbox import Priority
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, EntityAlias, MergeCandidate
from curation.ports import Embedder, EquivalenceJudge
from curation.selectors import entity_survivor
from curation.services.identities import (
    Identity,
    identified,
    identities_held,
    identity_attach,
    identity_entity,
)
from curation.services.lifecycle import claims_project
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)

# A fuzzy match links only when the spellings are nearly identical (typos, spacing);
# anything looser would merge siblings such as Niger and Nigeria. Between the two
# thresholds a pair is only a candidate: a judge decides, or else a reviewer.
FUZZY_LINK = 0.8
FUZZY_CANDIDATE = 0.6
# Cosine similarity over bare names is a weak signal: it links only when very close and
# otherwise just picks the few candidates an equivalence judge looks at.
SEMANTIC_LINK = 0.97
SEMANTIC_CANDIDATE = 0.80
CANDIDATES = 5
# Links a reviewer made (or an entity's founding name): alias_unlink leaves them alone.
REVIEWED = frozenset({"new", "review", "manual"})


@dataclass(frozen=True)
class Resolution:
    """The entity a name resolved to, how, and the similarity that decided it."""

    entity: Entity
    method: str  # identity | exact | fuzzy | semantic | judge | new
    score: float | None = None


@dataclass(frozen=True)
class _Match:
    """An existing alias near the name: how it was found, how close, what tells them apart."""

    alias: EntityAlias
    method: str  # exact (a name another id holds) | fuzzy | semantic
    score: float
    conflict: NameConflict | None

    def links(self, threshold: float) -> bool:
        return self.conflict is None and self.score >= threshold


def canonical(entity: Entity) -> Entity:
    """Follow merges to the surviving entity."""
    return entity_survivor(entity)


@dataclass(frozen=True)
class _Name:
    """The name being resolved: as written, its matching key, and its vector if embedded."""

    text: str
    norm: str
    vector: list[float] | None = None
    model: str = ""


def _add_alias(entity: Entity, name: _Name, *, method: str, score: float | None = None) -> None:
    EntityAlias.objects.get_or_create(
        group_id=entity.group_id,
        alias_norm=name.norm,
        defaults={"entity": entity, "alias": name.text, "embedding": name.vector,
                  "embedding_model": name.model, "method": method, "score": score},
    )  # fmt: skip


def _conflict(name: str, alias: str) -> NameConflict | None:
    """What keeps a look-alike from linking by itself: an identifier, or the word order."""
    return identifier_conflict(name, alias) or word_order_conflict(name, alias)


def _fuzzy(group_id: str, name: str, norm: str, entity_type: str) -> list[_Match]:
    """The nearest aliases by trigram distance that are at least candidates, nearest first."""
    # Ordered by distance and cut by LIMIT, so the GiST index answers it; the threshold
    # is applied here, not in SQL, to keep that plan.
    rows = (
        EntityAlias.objects.filter(group_id=group_id, entity__entity_type=entity_type)
        .annotate(distance=TrigramDistance("alias_norm", norm))
        .select_related("entity")
        .order_by("distance")[:CANDIDATES]
    )
    matches = [(row, 1.0 - float(row.distance)) for row in rows]
    return [
        _Match(row, "fuzzy", score, _conflict(name, row.alias))
        for row, score in matches
        if score >= FUZZY_CANDIDATE
    ]


def _semantic(
    group_id: str, name: str, entity_type: str, vector: list[float], model: str
) -> list[_Match]:
    rows = (
        EntityAlias.objects.filter(
            group_id=group_id, entity__entity_type=entity_type, embedding_model=model
        )
        .annotate(distance=CosineDistance("embedding", vector))
        .select_related("entity")
        .order_by("distance")[:CANDIDATES]
    )
    matches = [(row, 1.0 - float(row.distance)) for row in rows]
    return [
        _Match(row, "semantic", score, _conflict(name, row.alias))
        for row, score in matches
        if score >= SEMANTIC_CANDIDATE
    ]


def _nearest(matches: Sequence[_Match]) -> list[tuple[_Match, Entity]]:
    """The best match per distinct (canonical) entity, at most CANDIDATES of them."""
    seen: dict[int, tuple[_Match, Entity]] = {}
    for match in matches:
        entity = canonical(match.alias.entity)
        if entity.pk not in seen:
            seen[entity.pk] = (match, entity)
    return list(seen.values())[:CANDIDATES]


def _judged(
    judge: EquivalenceJudge, name: str, entity_type: str, nearest: list[tuple[_Match, Entity]]
) -> tuple[_Match, Entity] | None:
    """The first unblocked match the judge confirms; blocked pairs are for reviewers only.

    JudgeUnavailable propagates: the caller then proposes the pairs as if unjudged.
    """
    for match, entity in nearest:
        if match.conflict is None and judge.same_entity(
            name, match.alias.alias, entity_type=entity_type
        ):
            return match, entity
    return None


def _ask_judge(
    judge: EquivalenceJudge | None,
    name: str,
    entity_type: str,
    nearest: list[tuple[_Match, Entity]],
) -> tuple[tuple[_Match, Entity] | None, bool]:
    """The judge's confirmed match, and whether the judge decided the unblocked pairs.

    An unavailable judge decided nothing: its pairs go to reviewers as merge candidates
    (even one it said no to before failing; a reviewer's extra look beats a lost pair).
    """
    if judge is None:
        return None, False
    try:
        return _judged(judge, name, entity_type, nearest), True
    except JudgeUnavailable as error:
        logger.warning("no equivalence judgement for %r, left to reviewers: %s", name, error)
        return None, False


def _link(name: _Name, match: _Match, entity: Entity, *, method: str) -> Resolution:
    _add_alias(entity, name, method=method, score=match.score)
    return Resolution(entity, method, match.score)


@transaction.atomic(savepoint=False)
def entity_resolve(
    *,
    group_id: str,
    name: str,
    entity_type: str = "thing",
    embedder: Embedder | None = None,
    judge: EquivalenceJudge | None = None,
    identity: Identity | None = None,
    exact_spelling: bool = False,
) -> Resolution:
    """The entity `name` denotes in the group, creating it when nothing matches.

    A fuzzy or semantic match links only above its threshold and when the names differ
    in no number, code or word (`identifier_conflict`) nor only in word order
    (`word_order_conflict`). A judge may confirm a match in the band below, never a
    blocked one. What does not link becomes at most an open merge candidate for a
    reviewer (a false merge is worse than a missed one).

    A subject with an `identity` (its id in a structured source) is first found by it,
    whatever its name says now; by name it never lands on an entity that holds another
    id of the same source (two ids are two things), and the entity it lands on holds the
    identity from then on.

    A name spelt otherwise than an alias (`spelling_conflict`: "metrics-queue" /
    "metric-queue") never links to an entity a structured source knows by an id, nor,
    with `exact_spelling` (the names a structured record uses), to any entity: such a
    source names things by its own convention, where one letter is another item.
    """
    norm = normalize_name(name)
    if not norm:
        raise ValueError("an entity name cannot be empty")
    if identity is not None and (known := identity_entity(group_id=group_id, identity=identity)):
        # A renamed item stays itself; its new name becomes an alias (if no other holds it).
        _add_alias(known, _Name(name, norm), method="identity")
        return Resolution(known, "identity", 1.0)
    resolution = _resolve_name(
        group_id, _Name(name, norm), entity_type, embedder=embedder, judge=judge,
        identity=identity, exact_spelling=exact_spelling,
    )  # fmt: skip
    if identity is not None:
        identity_attach(entity=resolution.entity, identity=identity)
    return resolution


def _resolve_name(
    group_id: str,
    name: _Name,
    entity_type: str,
    *,
    embedder: Embedder | None,
    judge: EquivalenceJudge | None,
    identity: Identity | None,
    exact_spelling: bool = False,
) -> Resolution:
    """Exact, fuzzy, semantic, judge, else a new entity (`entity_resolve`'s name steps)."""
    exact = EntityAlias.objects.filter(group_id=group_id, alias_norm=name.norm)
    taken = [_Match(alias, "exact", 1.0, None) for alias in exact.select_related("entity")[:1]]
    taken = _identified(taken, identity)
    if taken and taken[0].conflict is None:
        return Resolution(canonical(taken[0].alias.entity), "exact", 1.0)
    fuzzy = _identified(_fuzzy(group_id, name.text, name.norm, entity_type), identity)
    fuzzy = _spelt_as_recorded(fuzzy, name.text, everywhere=exact_spelling)
    if link := next((m for m in fuzzy if m.links(FUZZY_LINK)), None):
        # No vector: a spelling variant adds nothing the semantic step could use.
        return _link(name, link, canonical(link.alias.entity), method="fuzzy")
    vector = embedder.embed([name.text])[0] if embedder else None
    embedded = _Name(name.text, name.norm, vector, embedder.model if embedder else "")
    semantic = _semantic(group_id, name.text, entity_type, vector, embedded.model) if vector else []
    semantic = _identified(semantic, identity)
    semantic = _spelt_as_recorded(semantic, name.text, everywhere=exact_spelling)
    if link := next((m for m in semantic if m.links(SEMANTIC_LINK)), None):
        return _link(embedded, link, canonical(link.alias.entity), method="semantic")
    # An exact name held by another id of the source comes first: the likeliest duplicate.
    nearest = _nearest([*taken, *fuzzy, *semantic])
    confirmed, judged = _ask_judge(judge, name.text, entity_type, nearest)
    if confirmed:
        return _link(embedded, *confirmed, method="judge")
    entity = Entity.objects.create(
        group_id=group_id, canonical_name=name.text.strip(), entity_type=entity_type
    )
    _add_alias(entity, embedded, method="new")  # not when the name is another's (taken)
    _propose_merges(entity, nearest, judged=judged)
    return Resolution(entity, "new")


def _identified(matches: list[_Match], identity: Identity | None) -> list[_Match]:
    """The matches, blocked where their entity holds another id of `identity`'s source:
    two ids of one source are two things, however alike their names."""
    if identity is None or not matches:
        return matches
    owners = {m.alias.entity_id: canonical(m.alias.entity).pk for m in matches}
    held = identities_held(identity=identity, entity_ids={*owners, *owners.values()})
    out = []
    for match in matches:
        entity_id = match.alias.entity_id
        other = held.get(entity_id) or held.get(owners[entity_id])
        if other is not None and match.conflict is None:
            detail = f"{other} / {identity.external_id}"
            match = replace(match, conflict=NameConflict("identity", detail))
        out.append(match)
    return out


def _spelt_as_recorded(matches: list[_Match], name: str, *, everywhere: bool) -> list[_Match]:
    """The matches, blocked where the name is spelt otherwise than the alias
    (`spelling_conflict`) and their entity is a structured source's record (or any
    entity, `everywhere`): a record is known by its exact name, and "metrics-queue" near
    the record "metric-queue" may be another."""
    if not matches:
        return matches
    owners = {m.alias.entity_id: canonical(m.alias.entity).pk for m in matches}
    recorded = set(owners) | set(owners.values())
    if not everywhere:
        recorded = identified(recorded)
    out = []
    for match in matches:
        entity_id = match.alias.entity_id
        if match.conflict is None and (entity_id in recorded or owners[entity_id] in recorded):
            conflict = spelling_conflict(name, match.alias.alias)
            if conflict is not None:
                match = replace(match, conflict=conflict)
        out.append(match)
    return out


def _propose_merges(entity: Entity, nearest: list[tuple[_Match, Entity]], *, judged: bool) -> None:
    """Open merge candidates for the reviewers: the near misses nobody else decided.

    An unblocked match is the judge's to decide (it was asked and said no), else a
    reviewer's; so is a match blocked by a word (payments-api / payments-api service).
    A sibling (a number or a code differs) is proposed only when it would otherwise
    have linked, and only the nearest one: a typo in a number could hide there, while
    proposing every sibling (db-01 ... db-50) would bury the queue.
    """
    sibling_proposed = False
    for match, candidate in nearest:
        if match.conflict is None:
            propose = not judged
        elif match.conflict.sibling:
            threshold = FUZZY_LINK if match.method == "fuzzy" else SEMANTIC_LINK
            propose = not sibling_proposed and match.score >= threshold
            sibling_proposed = sibling_proposed or propose
        else:
            propose = True
        if propose:
            MergeCandidate.objects.get_or_create(
                entity=entity,
                candidate=candidate,
                defaults={"group_id": entity.group_id, "method": match.method,
                          "score": match.score},
            )  # fmt: skip


def _absorbed(entity: Entity) -> list[int]:
    """The entity and every entity merged into it, however indirectly."""
    members, frontier = [entity.pk], [entity.pk]
    while frontier:
        frontier = list(
            Entity.objects.filter(merged_into_id__in=frontier).values_list("pk", flat=True)
        )
        members.extend(frontier)
    return members


def _reproject(entity: Entity, *, priority: Priority) -> int:
    """Queue re-projection of every published claim about the entity (or what merged into it).

    Graph nodes and search documents name a claim's entities; after a merge or an unmerge
    the name they should show changed, so each claim is projected again from its row.
    """
    members = _absorbed(entity)
    claim_ids = list(
        Claim.objects.filter(
            Q(subject_id__in=members) | Q(object_entity_id__in=members),
            status=ClaimStatus.PUBLISHED,
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    claims_project(entity.group_id, claim_ids, priority=priority)
    return len(claim_ids)


@transaction.atomic
def entity_merge(
    *, actor: Principal, entity_id: int, into_id: int, priority: Priority = Priority.INTERACTIVE
) -> Entity:
    """Merge one entity into another, reversibly: nothing is rewritten, only pointed.

    Claims and aliases keep their entity; resolution and reads follow `merged_into`,
    so `entity_unmerge` restores the exact previous state. The published claims about
    the merged entity are queued for re-projection (a reviewer's merge: interactive).
    Audited.
    """
    entity = Entity.objects.select_for_update().get(pk=entity_id)
    target = canonical(Entity.objects.get(pk=into_id))
    if target.pk == entity.pk or entity.group_id != target.group_id:
        raise ValueError("an entity can only be merged into another entity of its own group")
    if not actor.can(Role.REVIEWER, entity.group_id):
        raise PermissionDenied("merging entities needs the reviewer role")
    entity.merged_into = target
    entity.save(update_fields=["merged_into"])
    MergeCandidate.objects.filter(entity=entity, candidate=target).update(
        status=MergeCandidate.Status.MERGED
    )
    reprojected = _reproject(entity, priority=priority)
    audit_record(
        actor=actor,
        group_id=entity.group_id,
        action="entity.merge",
        target=("entity", entity.pk),
        data={"into": target.pk, "name": entity.canonical_name, "into_name": target.canonical_name,
              "reprojected": reprojected},
    )  # fmt: skip
    return target


@transaction.atomic
def entity_unmerge(
    *, actor: Principal, entity_id: int, priority: Priority = Priority.INTERACTIVE
) -> Entity:
    """Undo a merge; its published claims are queued for re-projection. Audited."""
    entity = Entity.objects.select_for_update().get(pk=entity_id)
    if entity.merged_into_id is None:
        raise ValueError("this entity is not merged")
    if not actor.can(Role.REVIEWER, entity.group_id):
        raise PermissionDenied("unmerging entities needs the reviewer role")
    previous = entity.merged_into_id
    entity.merged_into = None
    entity.save(update_fields=["merged_into"])
    reprojected = _reproject(entity, priority=priority)
    audit_record(
        actor=actor,
        group_id=entity.group_id,
        action="entity.unmerge",
        target=("entity", entity.pk),
        data={"was_merged_into": previous, "reprojected": reprojected},
    )
    return entity


@dataclass(frozen=True)
class Unlinked:
    """An alias detached into its own entity, and the claims a reviewer should look at."""

    entity: Entity
    previous: Entity
    claims_to_check: tuple[int, ...]


@transaction.atomic
def alias_unlink(*, actor: Principal, alias_id: int) -> Unlinked:
    """Detach an automatically linked alias into a new entity of its own; audited.

    Only the name moves: from now on resolving it lands on the new entity, and the pair
    is recorded as kept apart. Claims are not rewritten. A claim records its entity,
    not the surface form it was extracted under, so which claims came in under this
    name cannot be told from the rows, and moving any would be a guess that can itself
    corrupt published knowledge. The claims about the old entity recorded since the
    link (the only ones that can have come in under it) are returned and audited, for a
    reviewer to check and correct with an edit.
    """
    alias = (
        EntityAlias.objects.select_for_update(of=("self",))
        .select_related("entity")
        .get(pk=alias_id)
    )
    if not actor.can(Role.REVIEWER, alias.group_id):
        raise PermissionDenied("unlinking an alias needs the reviewer role")
    previous = alias.entity
    if alias.method in REVIEWED or alias.alias_norm == normalize_name(previous.canonical_name):
        raise ValueError("only an automatically linked alias can be unlinked")
    entity = Entity.objects.create(
        group_id=alias.group_id,
        canonical_name=alias.alias.strip(),
        entity_type=previous.entity_type,
    )
    method, score = alias.method, alias.score
    alias.entity, alias.method, alias.score = entity, "review", None
    alias.save(update_fields=["entity", "method", "score"])
    MergeCandidate.objects.create(
        group_id=alias.group_id, entity=entity, candidate=canonical(previous),
        method=(method or "unknown")[:20], score=score or 0.0,
        status=MergeCandidate.Status.KEPT_APART,
    )  # fmt: skip
    to_check = tuple(
        Claim.objects.filter(
            Q(subject=previous) | Q(object_entity=previous), recorded_at__gte=alias.created_at
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    audit_record(
        actor=actor,
        group_id=alias.group_id,
        action="entity.alias_unlink",
        target=("entity", entity.pk),
        data={"alias": alias.alias, "from": previous.pk, "method": method, "score": score,
              "claims_to_check": list(to_check)},
    )  # fmt: skip
    return Unlinked(entity=entity, previous=previous, claims_to_check=to_check)
