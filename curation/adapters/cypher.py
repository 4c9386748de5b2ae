"""Cypher shared by the graph backends (FalkorDB and Neo4j speak the same subset)."""

from __future__ import annotations

from curation.domain.graph import GraphEdge

# An edge whose ends changed (an entity merge re-points a claim) is dropped first, so a
# claim is always exactly one edge, between the nodes it is about now.
UPSERT = """
OPTIONAL MATCH (:Node)-[old:CLAIM {claim_id: $claim_id}]->(:Node)
WHERE old IS NOT NULL AND NOT (startNode(old).key = $s_key AND endNode(old).key = $o_key)
DELETE old
WITH count(*) AS dropped
MERGE (s:Node {key: $s_key}) SET s.name = $s_name, s.kind = $s_kind, s.group_id = $group_id
MERGE (o:Node {key: $o_key}) SET o.name = $o_name, o.kind = $o_kind, o.group_id = $group_id
MERGE (s)-[r:CLAIM {claim_id: $claim_id}]->(o)
SET r.predicate = $predicate, r.fact = $fact, r.valid_from = $valid_from,
    r.group_id = $group_id, r.episode_ids = $episode_ids
"""
REMOVE = """
MATCH (s)-[r:CLAIM {claim_id: $claim_id}]->(o)
DELETE r
WITH o WHERE o.kind = 'value' DELETE o
"""


def edge_params(edge: GraphEdge) -> dict[str, object]:
    """Query parameters shared by the Cypher backends."""
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
        "episode_ids": list(edge.episode_ids),
    }
