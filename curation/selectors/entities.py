"""Entities: merge survivors, an entity's page, and its neighbourhood in the graph
(paths re-read under RLS) and as a radial picture."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from curation.domain.params import RelatedQuery
from curation.domain.picture import Edge, Node, Picture, layout
from curation.domain.tiers import ClaimStatus
from curation.domain.validity import VALID_NOW
from curation.models import Claim, Entity, EntityAlias
from curation.ports import GraphProjection
from curation.selectors.claims import claims_valid
from tenants.domain.access import Principal


def entity_survivor(entity: Entity) -> Entity:
    """Follow merges to the surviving entity."""
    while entity.merged_into_id is not None:
        entity = Entity.objects.get(pk=entity.merged_into_id)
    return entity


def _merged_into(survivor: Entity) -> list[Entity]:
    """Every entity merged (directly or not) into the survivor, oldest merge first."""
    found: list[Entity] = []
    frontier = [survivor.pk]
    while frontier:
        rows = list(Entity.objects.filter(merged_into_id__in=frontier).order_by("pk"))
        found += rows
        frontier = [row.pk for row in rows]
    return found


@dataclass(frozen=True)
class EntityView:
    """An entity as its page shows it: names, facts about it now and before, merges."""

    entity: Entity  # the survivor of any merges
    aliases: list[str]
    current: list[Claim]
    past: list[Claim]  # superseded or retracted, newest first
    merged: list[Entity]  # the entities merged into it


def entity_view(*, entity_id: int) -> EntityView | None:
    """The entity (RLS: only a visible one), or None."""
    found = Entity.objects.filter(pk=entity_id).first()
    if found is None:
        return None
    survivor = entity_survivor(found)
    merged = _merged_into(survivor)
    members = [survivor.pk, *(entity.pk for entity in merged)]
    about = (
        Claim.objects.filter(Q(subject_id__in=members) | Q(object_entity_id__in=members))
        .select_related("subject", "object_entity")
        .prefetch_related("evidence__episode__source")
    )
    aliases = EntityAlias.objects.filter(entity_id__in=members).order_by("alias")
    return EntityView(
        entity=survivor,
        aliases=sorted({alias.alias for alias in aliases} - {survivor.canonical_name}),
        current=list(about.filter(status=VALID_NOW).order_by("predicate", "pk")),
        past=list(
            about.filter(status__in=[ClaimStatus.SUPERSEDED, ClaimStatus.RETRACTED]).order_by(
                "-valid_from", "-pk"
            )
        ),
        merged=merged,
    )


@dataclass(frozen=True)
class RelatedPath[C]:
    """A neighbour reached through the graph, with the claims on the path, re-read from
    Postgres under RLS (so the graph can never show what RLS hides): as models, or as
    whatever the caller's reader made of the rows."""

    key: str  # the graph node: "e:<entity id>" or "v:<claim id>" (a literal value)
    name: str
    kind: str
    hops: int
    claim_ids: list[int]  # in path order, from the entity outwards
    claims: list[C]

    @property
    def entity_id(self) -> int | None:
        return int(self.key[2:]) if self.key.startswith("e:") else None


@dataclass(frozen=True)
class Neighbourhood[C]:
    """`entity_related`'s paths, with every claim on them once, by id (for the API)."""

    entity: Entity
    neighbours: list[RelatedPath[C]]
    claims: list[C]

    @classmethod
    def of(cls, entity: Entity, paths: list[RelatedPath[C]]) -> Neighbourhood[C]:
        claims = {
            pk: claim
            for path in paths
            for pk, claim in zip(path.claim_ids, path.claims, strict=True)
        }
        return cls(entity, paths, [claims[pk] for pk in sorted(claims)])


def entity_visible(*, entity_id: int) -> Entity | None:
    """The entity's survivor, if the entity is visible (RLS); None otherwise."""
    found = Entity.objects.filter(pk=entity_id).first()
    return None if found is None else entity_survivor(found)


def entity_related[C](
    *,
    entity: Entity,
    graph: GraphProjection,
    principal: Principal,
    query: RelatedQuery,
    read: Callable[[QuerySet[Claim]], Mapping[int, C]],
) -> list[RelatedPath[C]]:
    """The entity's neighbourhood from the graph, each path's claims checked in Postgres.

    The graph is asked only for the principal's groups; then every claim id on a path is
    read back through RLS and the valid-time filter (by `read`, from the queryset of the
    visible ones), and a path with any claim that does not come back (another tenant's,
    retracted or superseded since the graph was written) is dropped.
    """
    found = graph.neighbours(
        f"e:{entity.pk}", group_ids=sorted(principal.group_ids), hops=query.hops,
        as_of=query.as_of, predicates=query.predicates or None, limit=query.limit,
    )  # fmt: skip
    ids = {claim_id for path in found for claim_id in path.claim_ids}
    visible = read(claims_valid(as_of=query.as_of).filter(pk__in=ids))
    paths = []
    for path in found:
        if all(claim_id in visible for claim_id in path.claim_ids):
            node, ids_ = path.node, list(path.claim_ids)
            claims = [visible[claim_id] for claim_id in ids_]
            paths.append(RelatedPath(node.key, node.name, node.kind, path.hops, ids_, claims))
    return paths


def _end(claim: Claim, side: str) -> str:
    """A claim's end as a graph node key (entities after merges; a literal is its own)."""
    if side == "subject":
        return f"e:{entity_survivor(claim.subject).pk}"
    if claim.object_entity is None:
        return f"v:{claim.pk}"
    return f"e:{entity_survivor(claim.object_entity).pk}"


def entity_picture(view: EntityView, paths: list[RelatedPath[Claim]]) -> Picture:
    """The neighbourhood as a radial picture: the entity in the middle, a ring per hop."""
    centre = f"e:{view.entity.pk}"
    nodes: dict[str, Node] = {
        centre: Node(centre, view.entity.canonical_name, view.entity.entity_type, 0, None)
    }
    edges: dict[int, Edge] = {}
    for path in sorted(paths, key=lambda p: p.hops):
        last = path.claims[-1]
        ends = {_end(last, "subject"), _end(last, "object")}
        parent = next(iter(ends - {path.key}), centre)
        if path.key not in nodes:
            nodes[path.key] = Node(path.key, path.name, path.kind, path.hops, parent)
        for claim in path.claims:
            edges[claim.pk] = Edge(
                claim_id=claim.pk, source=_end(claim, "subject"), target=_end(claim, "object"),
                predicate=claim.predicate, current=claim.status == VALID_NOW,
            )  # fmt: skip
    return layout(list(nodes.values()), list(edges.values()))
