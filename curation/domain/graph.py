"""The shape of claims in the graph projection, and what the graph answers (pure).

The graph is a read model of Postgres: every claim that is or was valid (published or
superseded) is one edge between the nodes of what it is about, carrying its validity,
so the graph answers "as of" as the record does. Retracted and erased claims leave it.
Every node and edge carries its group id, and every read names the groups it may see.
Times are epoch milliseconds (UTC), so every backend compares them as numbers.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

MAX_HOPS = 3


def epoch_ms(at: dt.datetime) -> int:
    """An aware datetime as integer epoch milliseconds."""
    if at.tzinfo is None:
        raise ValueError("graph times must be timezone-aware")
    return round(at.timestamp() * 1000)


@dataclass(frozen=True)
class GraphNode:
    """An entity node, or a literal value node (kind "value")."""

    key: str  # "e:<entity id>" (the canonical entity, after merges) or "v:<claim id>"
    name: str
    kind: str  # entity type, or "value"


@dataclass(frozen=True)
class GraphEdge:
    """A claim as an edge, stitched back to its entities and episodes."""

    claim_id: int
    group_id: str
    subject: GraphNode
    object: GraphNode
    predicate: str
    fact: str
    valid_from: int  # epoch ms
    episode_ids: tuple[int, ...]
    valid_to: int | None = None  # epoch ms; None while the fact holds
    status: str = "published"
    tier: int = 1


@dataclass(frozen=True)
class Neighbour:
    """A node reached from the start node, and the claims on the path that reached it."""

    node: GraphNode
    hops: int
    claim_ids: tuple[int, ...]  # in path order, from the start node


@dataclass(frozen=True)
class GraphDump:
    """A group's projection in canonical form (sorted, every property): equal graphs
    have equal dumps, whatever order their writes came in."""

    nodes: tuple[tuple[object, ...], ...]
    edges: tuple[tuple[object, ...], ...]


def check_hops(hops: int) -> int:
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be an integer from 1 to {MAX_HOPS}, not {hops!r}")
    return hops
