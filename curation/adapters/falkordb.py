"""FalkorDB (a Redis module) as the graph projection."""

from __future__ import annotations

from typing import Any

from falkordb import FalkorDB
from redis.exceptions import ResponseError

from curation.adapters.cypher import CypherGraph


class FalkorDBGraphProjection(CypherGraph):
    """GraphProjection over FalkorDB; one named graph per deployment (see `cypher`)."""

    backend = "falkordb"
    _schema = (
        "CREATE INDEX FOR (n:Node) ON (n.uid)",
        "CREATE INDEX FOR (n:Node) ON (n.group_id)",
        "CREATE INDEX FOR ()-[r:CLAIM]-() ON (r.claim_id)",
    )

    def __init__(self, *, url: str, graph_name: str, timeout_s: float = 2.0) -> None:
        self._db = FalkorDB.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self._graph = self._db.select_graph(graph_name)
        self._indexed = False

    def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if not self._indexed:
            self._indexed = True  # first, so ensure_schema's own statements do not recurse
            self.ensure_schema()
        return list(self._graph.query(query, params or {}).result_set)

    def _create_index(self, statement: str) -> None:
        try:
            self._graph.query(statement)
        except ResponseError as error:
            if "already indexed" not in str(error):
                raise

    def clear(self) -> None:
        try:
            self._graph.delete()
        except ResponseError as error:
            if "empty key" not in str(error).lower() and "invalid graph" not in str(error).lower():
                raise
        self._indexed = False  # the indexes went with the graph

    def close(self) -> None:
        self._db.connection.close()
