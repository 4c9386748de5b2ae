"""An embedder decorator that sends each provider request through breaker, bucket, retry."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

from common.guarded import Guarded
from curation.ports import Embedder
from retrieval.adapters.embedders.base import EmbedResult, embed_with_usage, sum_tokens


class ResilientEmbedder(Guarded[Embedder]):
    """Embedder port around a provider: circuit breaker, rate limit and full-jitter retries.

    It splits the input into the provider's own batches (`inner.batch_size`) and guards
    each request separately, so a failure on the seventh batch retries that batch alone.
    Transient errors default to the provider's `transient_errors`. Wrap it in a
    CachedEmbedder, not the other way round, so cache hits never wait for a token.
    """

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def languages(self) -> frozenset[str] | None:
        languages: frozenset[str] | None = getattr(self.inner, "languages", None)
        return languages

    @property
    def cache_variant(self) -> str | None:
        variant: str | None = getattr(self.inner, "cache_variant", None)
        return variant

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_with_usage(texts).vectors

    def embed_with_usage(self, texts: Sequence[str]) -> EmbedResult:
        """The inner embedder's result, batch by batch, each batch guarded on its own."""
        batch_size: int = getattr(self.inner, "batch_size", 0) or max(len(texts), 1)
        vectors: list[list[float]] = []
        tokens: list[int | None] = []
        calls = 0
        for batch in itertools.batched(texts, batch_size):
            result = self._guarded(functools.partial(embed_with_usage, self.inner, batch))
            vectors += result.vectors
            tokens.append(result.tokens)
            calls += result.calls
        return EmbedResult(vectors=vectors, tokens=sum_tokens(tokens), calls=calls)
