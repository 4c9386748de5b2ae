"""A reranker decorator that sends each provider request through breaker, bucket, retry."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

from common.guarded import Guarded
from kernel.resilience import CircuitOpen
from retrieval.adapters.rerankers.base import described
from retrieval.ports import Reranker, RerankerError


class ResilientReranker(Guarded[Reranker]):
    """Reranker port around a provider: circuit breaker, rate limit and full-jitter retries.

    It splits the documents into the provider's own batches (`inner.batch_size`) and
    guards each request separately. Transient errors default to the provider's
    `transient_errors`. Every final failure, the open circuit included, is raised as
    RerankerError, so that search can fall back to the stage-2 order.
    """

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """The inner reranker's scores, batch by batch; RerankerError on any final failure."""
        batch_size: int = getattr(self.inner, "batch_size", 0) or max(len(documents), 1)
        scores: list[float] = []
        for batch in itertools.batched(documents, batch_size):
            scores += self._score_batch(query, batch)
        return scores

    def _score_batch(self, query: str, documents: Sequence[str]) -> list[float]:
        try:
            return self._guarded(functools.partial(self.inner.score, query, documents))
        except RerankerError:
            raise
        except CircuitOpen as error:
            raise RerankerError(f"reranker {self.model}: {error}") from None
        except Exception as error:
            # Whatever broke (an SDK error after the retries, a bug), search must still
            # answer; the description is the class and status, never the SDK's message.
            raise RerankerError(f"reranker {self.model} failed: {described(error)}") from None
