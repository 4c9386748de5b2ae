"""Where retrieval's entrypoints get their adapters: the composition root installs them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from curation.ports import Embedder, GraphProjection, ObjectStore
from retrieval.ports import EmbedderCatalog, Reranking, Search, Tokenizer, UsageLedger
from retrieval.services.context import Packing


class Providers(Protocol):
    """What the composition root provides to retrieval's entrypoints."""

    def embedder(self) -> Embedder:
        """The embedder of what is indexed (passages)."""
        ...

    def query_embedder(self) -> Embedder:
        """The same model for search queries (a different role where the model has one)."""
        ...

    def embedders(self) -> EmbedderCatalog:
        """The models workspaces may be indexed with (each workspace's is its pin's)."""
        ...

    def reranking(self) -> Reranking | None: ...

    def fusion(self) -> Mapping[str, float]:
        """Stage 1's list weights by list name (weighted RRF)."""
        ...

    def search(self) -> Search: ...

    def usage_ledger(self) -> UsageLedger:
        """Where every process's metered provider usage waits for its flush to Postgres."""
        ...

    def tokenizer(self) -> Tokenizer:
        """What counts a context pack's tokens against its budget."""
        ...

    def graph(self) -> GraphProjection:
        """The graph projection (erasure cleans it and scans it for residue)."""
        ...

    def object_store(self) -> ObjectStore:
        """Where raw bytes live (erasure deletes them and scans for residue)."""
        ...


_installed: Providers | None = None


def install(providers: Providers) -> None:
    global _installed
    _installed = providers


def providers() -> Providers:
    if _installed is None:
        raise ImproperlyConfigured("the composition root has not installed retrieval's providers")
    return _installed


def search() -> Search:
    """The read path's one search function (the API, the portal, later the MCP server)."""
    return providers().search()


def packing() -> Packing:
    """What `context_pack` searches and counts with (the API, later the MCP server)."""
    installed = providers()
    return Packing(
        search=installed.search(), tokenizer=installed.tokenizer(),
        catalog=installed.embedders(), reranking=installed.reranking(),
    )  # fmt: skip
