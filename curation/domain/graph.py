"""The shape of a claim in the graph projection (pure)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GraphNode:
    """An entity node, or a literal value node (kind "value")."""

    key: str  # "e:<entity id>" or "v:<claim id>"
    name: str
    kind: str  # entity type, or "value"


@dataclass(frozen=True)
class GraphEdge:
    """A published claim as an edge, stitched back to its entities and episodes."""

    claim_id: int
    group_id: str
    subject: GraphNode
    object: GraphNode
    predicate: str
    fact: str
    valid_from: str
    episode_ids: tuple[int, ...]
