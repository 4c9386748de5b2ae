"""Neo4j (Bolt) as the graph projection."""

from __future__ import annotations

import neo4j


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

    def ping(self) -> None:
        records, _, _ = self._driver.execute_query("RETURN 1 AS one", database_=self._database)
        if [record["one"] for record in records] != [1]:
            raise RuntimeError("unexpected Neo4j answer")

    def close(self) -> None:
        self._driver.close()
