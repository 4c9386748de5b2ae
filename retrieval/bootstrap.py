"""Where retrieval's entrypoints get their adapters: the composition root installs them."""

from __future__ import annotations

from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from curation.ports import Embedder
from retrieval.domain.ranking import Weights
from retrieval.ports import Reranking


class Providers(Protocol):
    """What the composition root provides to retrieval's entrypoints."""

    def embedder(self) -> Embedder: ...

    def weights(self) -> Weights: ...

    def reranking(self) -> Reranking | None: ...


_installed: Providers | None = None


def install(providers: Providers) -> None:
    global _installed
    _installed = providers


def providers() -> Providers:
    if _installed is None:
        raise ImproperlyConfigured("the composition root has not installed retrieval's providers")
    return _installed
