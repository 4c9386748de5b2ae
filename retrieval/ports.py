"""Ports of the retrieval app: the external capabilities it needs, as Protocols.

The Embedder port lives in `curation.ports` (ingestion embeds too); the stage-3
Reranker, which only search uses, lives here.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from curation.ports import Embedder
from retrieval.domain.query import Query
from retrieval.domain.ranking import WeightChoice
from retrieval.domain.results import Result
from retrieval.domain.usage import UsageTotal

MAX_RERANK_TOP_N = 100  # stage 3 is bounded: it re-scores at most this many candidates


class Search(Protocol):
    """The read path's search with the configured embedder and reranker bound: what the
    entrypoints (retrieval.bootstrap.search) and the golden-set evaluator call."""

    def __call__(
        self,
        *,
        query: Query,
        now: dt.datetime,
        user_id: int | None = None,
        weights: WeightChoice | None = None,
        record: bool = True,
    ) -> Result: ...


@runtime_checkable
class EmbedderCatalog(Protocol):
    """The embedding models an operator offers, by provider name ("minilm", "e5" ...).

    A workspace is indexed with one of them (its `GroupEmbedding` pin); a new workspace
    gets `default`. Each model has a passage role (what is indexed) and a query role.
    """

    @property
    def default(self) -> str: ...

    def choices(self) -> tuple[str, ...]:
        """Every provider a workspace may choose, the default first."""
        ...

    def passage(self, provider: str) -> Embedder:
        """The provider's embedder for indexed texts; KeyError when it is not offered."""
        ...

    def query(self, provider: str) -> Embedder:
        """The provider's embedder for search queries; KeyError when it is not offered."""
        ...


class Reranker(Protocol):
    """Scores how directly each document answers a query (the stage-3 cross-encoder)."""

    model: str

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance in [0, 1] per document, in input order; RerankerError if it cannot."""
        ...


class RerankerError(Exception):
    """The reranker could not score (provider down, malformed answer, circuit open...)."""


@dataclass(frozen=True)
class Reranking:
    """Stage 3 as configured: final = (1 - weight) * normalised_blend + weight * ce."""

    reranker: Reranker
    top_n: int  # how many stage-2 candidates are re-scored, 1..MAX_RERANK_TOP_N
    weight: float  # the cross-encoder's share of the final score, 0..1

    def __post_init__(self) -> None:
        top_n = self.top_n
        if isinstance(top_n, bool) or not isinstance(top_n, int):
            raise ValueError(f"top_n must be an integer, not {type(top_n).__name__}")
        if not 1 <= top_n <= MAX_RERANK_TOP_N:
            raise ValueError(f"top_n must be between 1 and {MAX_RERANK_TOP_N}, not {top_n}")
        weight = self.weight
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(f"weight must be a number, not {type(weight).__name__}")
        if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
            raise ValueError(f"weight must be between 0 and 1, not {weight}")


@runtime_checkable
class EmbeddingCache(Protocol):
    """An embedder's cache of vectors by text: its keys can be forgotten (erasure)."""

    def key(self, text: str) -> str:
        """The key a text's vector is cached under (a hash of the text, no text)."""
        ...

    def forget(self, keys: Sequence[str]) -> None:
        """Drop these keys everywhere the vectors are cached; raises if a store refuses."""

    def holds(self, keys: Sequence[str]) -> list[str]:
        """The keys still cached somewhere."""
        ...


class UsageLedger(Protocol):
    """Provider usage totals collected from every process until a flush writes them."""

    def add(self, total: UsageTotal) -> None:
        """Add one batch's usage (never raises: metering must not fail an embedding)."""
        ...

    def drain(self) -> list[UsageTotal]:
        """Take every total collected so far, leaving none behind."""
        ...

    def restore(self, totals: Sequence[UsageTotal]) -> None:
        """Put drained totals back (their write failed)."""
        ...


class Tokenizer(Protocol):
    """Counts a text's tokens as a prompt's budget is counted (context packs)."""

    name: str  # which tokenizer counts, as a pack reports it

    def count(self, text: str) -> int:
        """The number of tokens in `text` (no special tokens added)."""
        ...
