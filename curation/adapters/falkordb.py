"""FalkorDB (a Redis module) as the graph projection."""

from __future__ import annotations

from falkordb import FalkorDB


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

    def close(self) -> None:
        self._db.connection.close()
