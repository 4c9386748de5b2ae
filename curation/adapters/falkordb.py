"""FalkorDB (a Redis module) as the graph projection."""

from __future__ import annotations

from falkordb import FalkorDB
from redis.exceptions import ResponseError

from curation.adapters.cypher import REMOVE, UPSERT, edge_params
from curation.domain.graph import GraphEdge


class FalkorDBGraphProjection:
    """GraphProjection over FalkorDB; one named graph per deployment."""

    backend = "falkordb"

    def __init__(self, *, url: str, graph_name: str, timeout_s: float = 2.0) -> None:
        self._db = FalkorDB.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self._graph = self._db.select_graph(graph_name)

    def ping(self) -> None:
        result = self._graph.query("RETURN 1")
        if result.result_set != [[1]]:
            raise RuntimeError(f"unexpected FalkorDB answer: {result.result_set!r}")

    def upsert_claim(self, edge: GraphEdge) -> None:
        self._graph.query(UPSERT, edge_params(edge))

    def remove_claim(self, claim_id: int) -> None:
        self._graph.query(REMOVE, {"claim_id": claim_id})

    def clear(self) -> None:
        try:
            self._graph.delete()
        except ResponseError as error:
            if "empty key" not in str(error).lower() and "invalid graph" not in str(error).lower():
                raise

    def count_claims(self) -> int:
        result = self._graph.query("MATCH ()-[r:CLAIM]->() RETURN count(r)")
        return int(result.result_set[0][0])

    def close(self) -> None:
        self._db.connection.close()
