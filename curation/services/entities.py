"""Entity resolution: exact normalised alias, then pg_trgm fuzzy, then a semantic step."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.postgres.search import TrigramDistance
from django.db import transaction
from pgvector.django import CosineDistance

from curation.domain.names import normalize_name
from curation.models import Entity, EntityAlias, MergeCandidate
from curation.ports import Embedder, EquivalenceJudge
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record
from tenants.services.scopes import PermissionDenied

# A fuzzy match links only when the spellings are nearly identical (typos, spacing);
# anything looser would merge siblings such as Niger and Nigeria.
FUZZY_LINK = 0.8
# Cosine similarity over bare names is a weak signal: it links only when very close and
# otherwise just picks the few candidates an equivalence judge looks at.
SEMANTIC_LINK = 0.97
SEMANTIC_CANDIDATE = 0.80
CANDIDATES = 5


@dataclass(frozen=True)
class Resolution:
    """The entity a name resolved to and how."""

    entity: Entity
    method: str  # exact | fuzzy | semantic | judge | new


def canonical(entity: Entity) -> Entity:
    """Follow merges to the surviving entity."""
    while entity.merged_into_id is not None:
        entity = Entity.objects.get(pk=entity.merged_into_id)
    return entity


def _add_alias(
    entity: Entity, name: str, norm: str, vector: list[float] | None, model: str
) -> None:
    EntityAlias.objects.get_or_create(
        group_id=entity.group_id,
        alias_norm=norm,
        defaults={"entity": entity, "alias": name, "embedding": vector, "embedding_model": model},
    )


def _fuzzy(group_id: str, norm: str, entity_type: str) -> EntityAlias | None:
    """The nearest alias by trigram distance, if it is similar enough to link."""
    nearest = (
        EntityAlias.objects.filter(group_id=group_id, entity__entity_type=entity_type)
        .annotate(distance=TrigramDistance("alias_norm", norm))
        .select_related("entity")
        .order_by("distance")
        .first()
    )
    if nearest is None or 1.0 - float(nearest.distance) < FUZZY_LINK:
        return None
    return nearest


def _semantic(
    group_id: str, entity_type: str, vector: list[float], model: str
) -> list[tuple[EntityAlias, float]]:
    rows = (
        EntityAlias.objects.filter(
            group_id=group_id, entity__entity_type=entity_type, embedding_model=model
        )
        .annotate(distance=CosineDistance("embedding", vector))
        .select_related("entity")
        .order_by("distance")[:CANDIDATES]
    )
    return [(row, 1.0 - float(row.distance)) for row in rows]


@transaction.atomic(savepoint=False)
def entity_resolve(
    *,
    group_id: str,
    name: str,
    entity_type: str = "thing",
    embedder: Embedder | None = None,
    judge: EquivalenceJudge | None = None,
) -> Resolution:
    """The entity `name` denotes in the group, creating it when nothing matches.

    Without a judge, nothing below SEMANTIC_LINK is merged: near misses become open
    merge candidates for a reviewer instead (a false merge is worse than a missed one).
    """
    norm = normalize_name(name)
    if not norm:
        raise ValueError("an entity name cannot be empty")
    exact = EntityAlias.objects.filter(group_id=group_id, alias_norm=norm).select_related("entity")
    if found := exact.first():
        return Resolution(canonical(found.entity), "exact")
    if fuzzy := _fuzzy(group_id, norm, entity_type):
        entity = canonical(fuzzy.entity)
        _add_alias(entity, name, norm, None, "")
        return Resolution(entity, "fuzzy")
    vector = embedder.embed([name])[0] if embedder else None
    model = embedder.model if embedder else ""
    candidates = _semantic(group_id, entity_type, vector, model) if vector else []
    for alias, similarity in candidates:
        same = similarity >= SEMANTIC_LINK or (
            similarity >= SEMANTIC_CANDIDATE
            and judge is not None
            and judge.same_entity(name, alias.alias, entity_type=entity_type)
        )
        if same:
            entity = canonical(alias.entity)
            _add_alias(entity, name, norm, vector, model)
            return Resolution(entity, "semantic" if similarity >= SEMANTIC_LINK else "judge")
    entity = Entity.objects.create(
        group_id=group_id, canonical_name=name.strip(), entity_type=entity_type
    )
    _add_alias(entity, name, norm, vector, model)
    for alias, similarity in candidates:
        if similarity >= SEMANTIC_CANDIDATE and judge is None:
            MergeCandidate.objects.get_or_create(
                entity=entity,
                candidate=canonical(alias.entity),
                defaults={"group_id": group_id, "method": "semantic", "score": similarity},
            )
    return Resolution(entity, "new")


@transaction.atomic
def entity_merge(*, actor: Principal, entity_id: int, into_id: int) -> Entity:
    """Merge one entity into another, reversibly: nothing is rewritten, only pointed.

    Claims and aliases keep their entity; resolution and reads follow `merged_into`,
    so `entity_unmerge` restores the exact previous state. Audited.
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
    audit_record(
        principal=actor,
        group_id=entity.group_id,
        action="entity.merge",
        target=("entity", entity.pk),
        data={"into": target.pk, "name": entity.canonical_name, "into_name": target.canonical_name},
    )
    return target


@transaction.atomic
def entity_unmerge(*, actor: Principal, entity_id: int) -> Entity:
    """Undo a merge; audited."""
    entity = Entity.objects.select_for_update().get(pk=entity_id)
    if entity.merged_into_id is None:
        raise ValueError("this entity is not merged")
    if not actor.can(Role.REVIEWER, entity.group_id):
        raise PermissionDenied("unmerging entities needs the reviewer role")
    previous = entity.merged_into_id
    entity.merged_into = None
    entity.save(update_fields=["merged_into"])
    audit_record(
        principal=actor,
        group_id=entity.group_id,
        action="entity.unmerge",
        target=("entity", entity.pk),
        data={"was_merged_into": previous},
    )
    return entity
