"""Ports of the curation app: the external capabilities it needs, as Protocols."""

from __future__ import annotations

from typing import Protocol


class GraphProjection(Protocol):
    """The graph that published claims are projected into (rebuildable, never the record)."""

    backend: str

    def ping(self) -> None:
        """Round-trip a trivial query; raise if the graph server cannot answer."""

    def close(self) -> None:
        """Release connections."""
