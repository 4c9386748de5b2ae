"""An entity's neighbourhood as a picture: a radial layout, drawn as SVG by a template (pure).

The entity sits in the middle; what is one hop away lies on the first ring, two hops
on the second, three on the third. A node is placed near the node it was reached from,
so the branches of the neighbourhood stay apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SIZE = 640
RING = 95.0  # pixels between rings


@dataclass(frozen=True)
class PlacedNode:
    key: str
    name: str
    kind: str
    hops: int
    x: float
    y: float
    entity_id: int | None  # links to its page; None for a literal value


@dataclass(frozen=True)
class PlacedEdge:
    claim_id: int
    predicate: str
    x1: float
    y1: float
    x2: float
    y2: float
    current: bool  # valid now (drawn solid) or valid only at the chosen instant

    @property
    def mx(self) -> float:
        return round((self.x1 + self.x2) / 2, 1)

    @property
    def my(self) -> float:
        return round((self.y1 + self.y2) / 2, 1)


@dataclass(frozen=True)
class Picture:
    size: int
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]


@dataclass(frozen=True)
class Node:
    key: str
    name: str
    kind: str
    hops: int
    parent: str | None  # the node it was reached from (None for the centre)


@dataclass(frozen=True)
class Edge:
    claim_id: int
    source: str
    target: str
    predicate: str
    current: bool


def layout(nodes: list[Node], edges: list[Edge], *, size: int = SIZE) -> Picture:
    """Place the nodes on rings by hop count and draw the edges between placed nodes."""
    centre = size / 2
    placed: dict[str, tuple[float, float, float]] = {}  # key -> (x, y, angle)
    by_hops: dict[int, list[Node]] = {}
    for node in nodes:
        by_hops.setdefault(node.hops, []).append(node)
    for hops in sorted(by_hops):
        ring = by_hops[hops]
        if hops == 0:
            for node in ring:
                placed[node.key] = (centre, centre, 0.0)
            continue

        # Children near their parent's angle: sort by it, then spread evenly.
        def parent_angle(node: Node) -> float:
            return placed.get(node.parent or "", (0.0, 0.0, 0.0))[2]

        ring.sort(key=lambda node: (parent_angle(node), node.key))
        offset = parent_angle(ring[0]) if hops > 1 else -math.pi / 2
        for index, node in enumerate(ring):
            angle = offset + 2 * math.pi * index / len(ring)
            radius = RING * hops
            placed[node.key] = (
                centre + radius * math.cos(angle),
                centre + radius * math.sin(angle),
                angle,
            )
    out_nodes = tuple(_node(node, *placed[node.key][:2]) for node in nodes if node.key in placed)
    out_edges = tuple(
        _edge(edge, placed[edge.source], placed[edge.target])
        for edge in edges
        if edge.source in placed and edge.target in placed
    )
    return Picture(size=size, nodes=out_nodes, edges=out_edges)


def _node(node: Node, x: float, y: float) -> PlacedNode:
    entity_id = int(node.key[2:]) if node.key.startswith("e:") else None
    return PlacedNode(node.key, node.name, node.kind, node.hops, round(x, 1), round(y, 1),
                      entity_id)  # fmt: skip


def _edge(
    edge: Edge, source: tuple[float, float, float], target: tuple[float, float, float]
) -> PlacedEdge:
    return PlacedEdge(
        claim_id=edge.claim_id, predicate=edge.predicate,
        x1=round(source[0], 1), y1=round(source[1], 1),
        x2=round(target[0], 1), y2=round(target[1], 1), current=edge.current,
    )  # fmt: skip
