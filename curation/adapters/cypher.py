"""Cypher shared by the graph backends (FalkorDB and Neo4j speak the same subset here).

`CypherGraph` holds every read and write; a backend supplies `_run` (a statement and
its parameters to rows of values) and its index statements, the one place where the
dialects differ (Neo4j has `IF NOT EXISTS`, FalkorDB refuses an index that exists).

Writes are batched with UNWIND: one statement drops the edges whose ends moved (an
entity merge re-points a claim), one upserts nodes and edges, one removes edges, and
one sweeps the nodes a removal or a move left without edges (a rebuild would not
create them). A batch names a claim once, so per-claim order is the caller's.
Edges are found by their claim id alone, with unlabelled ends: FalkorDB then reads the
claim-id index directly (a `:Node` label on the ends made it scan every node per row).

A node's identity is its group and key together, written as one indexed property
`uid` ("<group id>/<key>"): no write of one tenant can land on a node of another, even
if two ever shared a key, and a lookup is one index probe (FalkorDB took three times as
long to find a node by `key` and `group_id` as two properties). `ensure_schema` gives
nodes of an older graph their `uid`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from curation.domain.graph import GraphDump, GraphEdge, GraphNode, Neighbour, check_hops, epoch_ms

MOVED = """
UNWIND $edges AS e
MATCH (s)-[old:CLAIM {claim_id: e.claim_id}]->(o)
WHERE NOT (s.key = e.s_key AND o.key = e.o_key AND s.group_id = e.group_id)
WITH s.group_id AS s_group, s.key AS s_key, o.group_id AS o_group, o.key AS o_key, old
DELETE old
RETURN s_group, s_key, o_group, o_key
"""
# A node is its group's: (group id, key) is its identity, so no write of one tenant
# can ever land on a node of another, even if two ever shared a key.
UPSERT = """
UNWIND $edges AS e
MERGE (s:Node {uid: e.group_id + '/' + e.s_key})
SET s.group_id = e.group_id, s.key = e.s_key, s.name = e.s_name, s.kind = e.s_kind
MERGE (o:Node {uid: e.group_id + '/' + e.o_key})
SET o.group_id = e.group_id, o.key = e.o_key, o.name = e.o_name, o.kind = e.o_kind
MERGE (s)-[r:CLAIM {claim_id: e.claim_id}]->(o)
SET r.predicate = e.predicate, r.fact = e.fact, r.group_id = e.group_id,
    r.valid_from = e.valid_from, r.valid_to = e.valid_to, r.status = e.status,
    r.tier = e.tier, r.episode_ids = e.episode_ids
"""
REMOVE = """
UNWIND $claim_ids AS claim_id
MATCH (s)-[r:CLAIM {claim_id: claim_id}]->(o)
WITH s.group_id AS s_group, s.key AS s_key, o.group_id AS o_group, o.key AS o_key, r
DELETE r
RETURN s_group, s_key, o_group, o_key
"""
SWEEP = """
UNWIND $ends AS end
MATCH (n:Node {uid: end[0] + '/' + end[1]})
OPTIONAL MATCH (n)-[r:CLAIM]-()
WITH n, count(r) AS degree
WHERE degree = 0
DELETE n
"""
CLEAR_GROUP = """
MATCH (n:Node {group_id: $group_id})
DETACH DELETE n
"""
# Every edge of a path is in a visible group and valid at the instant (or now, when
# `$at` is null); the far node is too. Hops cannot be a parameter: `{hops}` is an int
# checked by `check_hops`.
# Ordered and cut before the claim-id lists are built, and `other` without its label (every
# node is a :Node): half the time of projecting every path first, on 1,000-2,000 paths.
# `WITH start` keeps the walk starting from the one node: without it FalkorDB planned a
# single hop from every node of the graph towards it (1.2 s instead of 1 ms).
NEIGHBOURS = """
UNWIND $groups AS group_id
MATCH (start:Node {{uid: group_id + '/' + $key}})
WITH start
MATCH p = (start)-[:CLAIM*1..{hops}]-(other)
WHERE other.group_id IN $groups AND other.key <> $key
  AND all(r IN relationships(p) WHERE r.group_id IN $groups
      AND ($predicates IS NULL OR r.predicate IN $predicates)
      AND (($at IS NULL AND r.valid_to IS NULL)
           OR ($at IS NOT NULL AND r.valid_from <= $at
               AND (r.valid_to IS NULL OR r.valid_to > $at))))
WITH p, other
ORDER BY length(p), other.key
LIMIT $limit
RETURN other.key, other.name, other.kind, length(p),
       [r IN relationships(p) | r.claim_id]
"""
DUMP_NODES = """
MATCH (n:Node {group_id: $group_id})
RETURN n.key, n.name, n.kind, n.group_id
"""
DUMP_EDGES = """
MATCH (s:Node)-[r:CLAIM]->(o:Node)
WHERE r.group_id = $group_id
RETURN r.claim_id, s.key, o.key, r.predicate, r.fact, r.status, r.tier, r.valid_from,
       r.valid_to, r.episode_ids, r.group_id
"""
COUNT = "MATCH ()-[r:CLAIM]->() RETURN count(r)"
# Nodes written before `uid` existed get theirs (a no-op once every node has one).
BACKFILL_UID = """
MATCH (n:Node) WHERE n.uid IS NULL
SET n.uid = n.group_id + '/' + n.key
"""


def edge_params(edge: GraphEdge) -> dict[str, object]:
    """One UNWIND row of an edge."""
    return {
        "claim_id": edge.claim_id,
        "group_id": edge.group_id,
        "s_key": edge.subject.key,
        "s_name": edge.subject.name,
        "s_kind": edge.subject.kind,
        "o_key": edge.object.key,
        "o_name": edge.object.name,
        "o_kind": edge.object.kind,
        "predicate": edge.predicate,
        "fact": edge.fact,
        "valid_from": edge.valid_from,
        "valid_to": edge.valid_to,
        "status": edge.status,
        "tier": edge.tier,
        "episode_ids": sorted(edge.episode_ids),
    }


class CypherGraph:
    """GraphProjection in Cypher; subclasses supply `_run` and `_schema`."""

    backend = "cypher"
    _schema: tuple[str, ...] = ()

    def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        raise NotImplementedError

    def _create_index(self, statement: str) -> None:
        self._run(statement)

    def ensure_schema(self) -> None:
        """Indexes on node identities, node groups and claim ids (idempotent); nodes of an
        older graph get their `uid`."""
        for statement in self._schema:
            self._create_index(statement)
        self._run(BACKFILL_UID)

    def ping(self) -> None:
        if self._run("RETURN 1") != [[1]]:
            raise RuntimeError(f"unexpected answer from the {self.backend} graph")

    def upsert_claim(self, edge: GraphEdge) -> None:
        self.upsert_claims([edge])

    def upsert_claims(self, edges: Sequence[GraphEdge]) -> None:
        if not edges:
            return
        rows = [edge_params(edge) for edge in edges]
        moved = self._run(MOVED, {"edges": rows})
        self._run(UPSERT, {"edges": rows})
        self._sweep(moved)

    def insert_claims(self, edges: Sequence[GraphEdge]) -> None:
        if edges:
            self._run(UPSERT, {"edges": [edge_params(edge) for edge in edges]})

    def remove_claim(self, claim_id: int) -> None:
        self.remove_claims([claim_id])

    def remove_claims(self, claim_ids: Sequence[int]) -> None:
        if claim_ids:
            self._sweep(self._run(REMOVE, {"claim_ids": list(claim_ids)}))

    def _sweep(self, rows: Iterable[Sequence[Any]]) -> None:
        """Delete the nodes at these ends ((group, key, group, key) rows) left edgeless."""
        ends = sorted({(row[i], row[i + 1]) for row in rows for i in (0, 2)})
        if ends:
            self._run(SWEEP, {"ends": [list(end) for end in ends]})

    def clear_group(self, group_id: str) -> None:
        self._run(CLEAR_GROUP, {"group_id": group_id})

    def neighbours(
        self,
        key: str,
        *,
        group_ids: Sequence[str],
        hops: int = 1,
        as_of: dt.datetime | None = None,
        predicates: Sequence[str] | None = None,
        limit: int = 200,
    ) -> list[Neighbour]:
        rows = self._run(
            NEIGHBOURS.format(hops=check_hops(hops)),
            {
                "key": key,
                "groups": list(group_ids),
                "at": None if as_of is None else epoch_ms(as_of),
                "predicates": list(predicates) if predicates else None,
                "limit": limit,
            },
        )
        return [
            Neighbour(node=GraphNode(k, name, kind), hops=int(length), claim_ids=tuple(ids))
            for k, name, kind, length, ids in rows
        ]

    def dump(self, group_id: str) -> GraphDump:
        nodes = self._run(DUMP_NODES, {"group_id": group_id})
        edges = self._run(DUMP_EDGES, {"group_id": group_id})
        return GraphDump(
            nodes=tuple(sorted(tuple(row) for row in nodes)),
            edges=tuple(sorted(_frozen(row) for row in edges)),
        )

    def count_claims(self) -> int:
        return int(self._run(COUNT)[0][0])


def _frozen(row: Sequence[Any]) -> tuple[object, ...]:
    """A row with lists as tuples, so rows sort and compare."""
    return tuple(tuple(value) if isinstance(value, list) else value for value in row)
