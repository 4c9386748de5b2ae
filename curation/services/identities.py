"""Identities: who the item a structured record describes is, by the source's own id.

A CMDB item or a Jira issue carries an id in its source; two records with different ids
are two things however alike their names, and one id is one thing however its name
changes. Entity resolution asks these first (`entity_resolve`), before any name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from curation.models import Entity, EntityIdentity
from curation.selectors import entity_survivor


@dataclass(frozen=True)
class Identity:
    """A subject's id in one source: the source's pk and the record's external id there."""

    source_id: int
    external_id: str


def identity_entity(*, group_id: str, identity: Identity) -> Entity | None:
    """The (surviving) entity that holds `identity` in the group, if one does."""
    held = (
        EntityIdentity.objects.filter(
            group_id=group_id, source_id=identity.source_id, external_id=identity.external_id
        )
        .select_related("entity")
        .first()
    )
    return None if held is None else entity_survivor(held.entity)


def identities_held(*, identity: Identity, entity_ids: Iterable[int]) -> dict[int, str]:
    """Of these entities, those holding another id of `identity`'s source: entity -> that id."""
    rows = (
        EntityIdentity.objects.filter(source_id=identity.source_id, entity_id__in=set(entity_ids))
        .exclude(external_id=identity.external_id)
        .order_by("pk")
        .values_list("entity_id", "external_id")
    )
    held: dict[int, str] = {}
    for entity_id, external_id in rows:
        held.setdefault(entity_id, external_id)
    return held


def identified(entity_ids: Iterable[int]) -> set[int]:
    """Of these entities, those a structured source knows by an id (any source)."""
    ids = set(entity_ids)
    if not ids:
        return set()
    return set(EntityIdentity.objects.filter(entity_id__in=ids).values_list("entity_id", flat=True))


def identity_attach(*, entity: Entity, identity: Identity) -> None:
    """Record that `entity` is the item `identity` names (kept if the id is already held)."""
    EntityIdentity.objects.get_or_create(
        group_id=entity.group_id,
        source_id=identity.source_id,
        external_id=identity.external_id,
        defaults={"entity": entity},
    )
