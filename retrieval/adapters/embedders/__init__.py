"""Embedder port adapters: local models, hosted providers, and the cache and resilience
decorators that wrap them (compose as `CachedEmbedder(ResilientEmbedder(provider))`).

The provider adapters are imported on first use, so that choosing one provider does not
load the SDKs (or the ONNX runtime) of the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from retrieval.adapters.embedders.base import EmbeddingError, EmbedResult
from retrieval.adapters.embedders.cached import CachedEmbedder
from retrieval.adapters.embedders.catalog import Catalog
from retrieval.adapters.embedders.metering import (
    CHAT_PRICES_USD_PER_MTOK,
    PRICES_USD_PER_MTOK,
    Meter,
    Usage,
)
from retrieval.adapters.embedders.resilient import ResilientEmbedder
from retrieval.adapters.hashing_embedder import HashingEmbedder

if TYPE_CHECKING:  # the lazy names below, for type checkers and IDEs
    from retrieval.adapters.embedders.e5 import E5Embedder
    from retrieval.adapters.embedders.minilm import MiniLMEmbedder
    from retrieval.adapters.embedders.openai import OpenAIEmbedder
    from retrieval.adapters.embedders.voyage import VoyageEmbedder

__all__ = [
    "CHAT_PRICES_USD_PER_MTOK",
    "PRICES_USD_PER_MTOK",
    "CachedEmbedder",
    "Catalog",
    "E5Embedder",
    "EmbedResult",
    "EmbeddingError",
    "HashingEmbedder",
    "Meter",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "ResilientEmbedder",
    "Usage",
    "VoyageEmbedder",
]

_LAZY = {
    "E5Embedder": "retrieval.adapters.embedders.e5",
    "MiniLMEmbedder": "retrieval.adapters.embedders.minilm",
    "OpenAIEmbedder": "retrieval.adapters.embedders.openai",
    "VoyageEmbedder": "retrieval.adapters.embedders.voyage",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
