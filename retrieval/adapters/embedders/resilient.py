"""An embedder decorator that sends each provider request through breaker, bucket, retry."""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections.abc import Sequence

from curation.ports import Embedder
from retrieval.adapters.embedders.base import EmbedResult, embed_with_usage, sum_tokens
from retrieval.domain.resilience import (
    CircuitBreaker,
    Sleep,
    TokenBucket,
    call_with_resilience,
)


class ResilientEmbedder:
    """Embedder port around a provider: circuit breaker, rate limit and full-jitter retries.

    It splits the input into the provider's own batches (`inner.batch_size`) and guards
    each request separately, so a failure on the seventh batch retries that batch alone.
    Transient errors default to the provider's `transient_errors`. Wrap it in a
    CachedEmbedder, not the other way round, so cache hits never wait for a token.
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        breaker: CircuitBreaker | None,
        bucket: TokenBucket | None = None,
        retries: int = 2,
        retry_on: tuple[type[BaseException], ...] | None = None,
        sleep: Sleep = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.inner = inner
        self.model = inner.model
        self.dimension = inner.dimension
        self.breaker = breaker
        self.bucket = bucket
        self.retries = retries
        self.retry_on: tuple[type[BaseException], ...] = (
            retry_on if retry_on is not None else getattr(inner, "transient_errors", ())
        )
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 - jitter only

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
            result = call_with_resilience(
                functools.partial(embed_with_usage, self.inner, batch),
                breaker=self.breaker,
                bucket=self.bucket,
                retries=self.retries,
                retry_on=self.retry_on,
                sleep=self._sleep,
                rng=self._rng,
            )
            vectors += result.vectors
            tokens.append(result.tokens)
            calls += result.calls
        return EmbedResult(vectors=vectors, tokens=sum_tokens(tokens), calls=calls)
