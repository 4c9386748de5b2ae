"""Neo4j (Bolt) as the graph projection; the same Cypher as FalkorDB (see `cypher`)."""

from __future__ import annotations

from typing import Any

import neo4j

from curation.adapters.cypher import CypherGraph


class Neo4jGraphProjection(CypherGraph):
    """GraphProjection over a Neo4j server."""

    backend = "neo4j"
    _schema = (
        "CREATE CONSTRAINT vera_node_uid IF NOT EXISTS FOR (n:Node) REQUIRE n.uid IS UNIQUE",
        "CREATE INDEX vera_node_group IF NOT EXISTS FOR (n:Node) ON (n.group_id)",
        "CREATE INDEX vera_claim_id IF NOT EXISTS FOR ()-[r:CLAIM]-() ON (r.claim_id)",
    )

    def __init__(
        self, *, uri: str, user: str, password: str, database: str, timeout_s: float = 2.0
    ) -> None:
        self._driver = neo4j.GraphDatabase.driver(
            uri, auth=(user, password), connection_timeout=timeout_s
        )
        self._database = database
        self._indexed = False

    def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if not self._indexed:
            self._indexed = True
            self.ensure_schema()
        records, _, _ = self._driver.execute_query(query, params or {}, database_=self._database)
        return [list(record.values()) for record in records]

    def clear(self) -> None:
        self._run("MATCH (n:Node) DETACH DELETE n")

    def close(self) -> None:
        self._driver.close()
