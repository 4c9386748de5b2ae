"""Where retrieval's entrypoints get their adapters: the composition root installs them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from curation.ports import Embedder, GraphProjection, ObjectStore
from retrieval.domain.query import Query
from retrieval.domain.ranking import WeightChoice
from retrieval.domain.results import Result
from retrieval.ports import EmbedderCatalog, Reranking, Search, Tokenizer, UsageLedger
from retrieval.services.context import Packing
from retrieval.services.search import pipeline


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

    def search_observed(self, timings: Mapping[str, float]) -> None:
        """Export a live search's stage timings (the metrics live in the project)."""
        ...

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
    """The read path's one live search (every entrypoint's, through `usecases.search`,
    and the golden-set evaluator's): the pipeline with the installed adapters bound."""
    return _live_search


def _live_search(
    *,
    query: Query,
    now: dt.datetime,
    user_id: int | None = None,
    weights: WeightChoice | None = None,
    record: bool = True,
) -> Result:
    """`pipeline.search` with the embedders, reranker and fusion weights the providers
    give (read per call: a test that installs other providers changes them here too);
    its stage timings exported once, here, for every entrypoint."""
    installed = providers()
    result = pipeline.search(
        query=query, now=now, user_id=user_id, weights=weights, record=record,
        embedder=installed.embedders(), reranking=installed.reranking(),
        fusion=installed.fusion(),
    )  # fmt: skip
    installed.search_observed(result.timings)
    return result


def packing() -> Packing:
    """What `context_pack` searches and counts with (the API, later the MCP server)."""
    installed = providers()
    return Packing(
        search=search(), tokenizer=installed.tokenizer(),
        catalog=installed.embedders(), reranking=installed.reranking(),
    )  # fmt: skip
