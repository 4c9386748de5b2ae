"""Neo4j (Bolt) as the graph projection; the same Cypher as FalkorDB."""

from __future__ import annotations

import neo4j

from curation.adapters.cypher import REMOVE, UPSERT, edge_params
from curation.domain.graph import GraphEdge


class Neo4jGraphProjection:
    """GraphProjection over a Neo4j server."""

    backend = "neo4j"

    def __init__(
        self, *, uri: str, user: str, password: str, database: str, timeout_s: float = 2.0
    ) -> None:
        self._driver = neo4j.GraphDatabase.driver(
            uri, auth=(user, password), connection_timeout=timeout_s
        )
        self._database = database

    def _run(self, query: str, params: dict[str, object] | None = None) -> list[neo4j.Record]:
        records, _, _ = self._driver.execute_query(query, params or {}, database_=self._database)
        return list(records)

    def ping(self) -> None:
        if [record["one"] for record in self._run("RETURN 1 AS one")] != [1]:
            raise RuntimeError("unexpected Neo4j answer")

    def upsert_claim(self, edge: GraphEdge) -> None:
        self._run(UPSERT, edge_params(edge))

    def remove_claim(self, claim_id: int) -> None:
        self._run(REMOVE, {"claim_id": claim_id})

    def clear(self) -> None:
        self._run("MATCH (n:Node) DETACH DELETE n")

    def count_claims(self) -> int:
        return int(self._run("MATCH ()-[r:CLAIM]->() RETURN count(r) AS n")[0]["n"])

    def close(self) -> None:
        self._driver.close()
