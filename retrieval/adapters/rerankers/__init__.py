"""Reranker port adapters: hosted providers and the resilience decorator around them
(compose as `ResilientReranker(provider)`).

The provider adapters are imported on first use, so that choosing one provider does not
load the SDK of the other.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from retrieval.adapters.rerankers.resilient import ResilientReranker
from retrieval.ports import RerankerError

if TYPE_CHECKING:  # the lazy names below, for type checkers and IDEs
    from retrieval.adapters.rerankers.llm import LLMReranker
    from retrieval.adapters.rerankers.voyage import VoyageReranker

__all__ = ["LLMReranker", "RerankerError", "ResilientReranker", "VoyageReranker"]

_LAZY = {
    "LLMReranker": "retrieval.adapters.rerankers.llm",
    "VoyageReranker": "retrieval.adapters.rerankers.voyage",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
