"""Reranker on Voyage AI's rerank API (rerank-2.5 by default)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import voyageai.client

from retrieval.adapters.embedders.metering import Meter
from retrieval.adapters.embedders.voyage import VOYAGE_TRANSIENT_ERRORS
from retrieval.adapters.rerankers.base import unit_score
from retrieval.ports import RerankerError

# The SDK indexes the request's documents with each answered index while it builds its
# result, so a malformed answer surfaces from `rerank` as one of these.
_MALFORMED_ANSWER = (AttributeError, IndexError, KeyError, TypeError)


class VoyageReranker:
    """Reranker port on `voyageai.Client.rerank`, one request per `batch_size` documents.

    Voyage answers in relevance order; the scores are put back in input order and
    clamped to [0, 1]. A malformed answer (an index missing, repeated or out of range)
    raises RerankerError; SDK errors propagate for ResilientReranker to retry and wrap.
    The tokens Voyage bills for each answer (`total_tokens`) go to `meter`.
    """

    transient_errors = VOYAGE_TRANSIENT_ERRORS

    def __init__(
        self,
        *,
        client: voyageai.client.Client,
        model: str = "rerank-2.5",
        batch_size: int = 1000,
        meter: Meter | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._client = client
        self.model = model
        self.batch_size = batch_size  # the API takes up to 1,000 documents per request
        self.meter = meter

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance in [0, 1] per document, in input order; no request for none."""
        scores: list[float] = []
        for batch in itertools.batched(documents, self.batch_size):
            try:
                result = self._client.rerank(
                    query=query, documents=list(batch), model=self.model, truncation=True
                )
            except _MALFORMED_ANSWER as error:
                raise RerankerError(
                    f"Voyage {self.model} answered a malformed ranking ({type(error).__name__})"
                ) from None
            if self.meter is not None:  # billed, whatever the ranking turns out to hold
                self.meter.record(
                    provider=type(self).__name__, model=self.model, texts=batch,
                    tokens=result.total_tokens, calls=1,
                )  # fmt: skip
            scores += self._in_input_order(result.results, expected=len(batch))
        return scores

    def _in_input_order(self, results: Sequence[Any], *, expected: int) -> list[float]:
        provider = f"Voyage {self.model}"
        scores: dict[int, float] = {}
        for result in results:
            index = result.index
            if isinstance(index, bool) or not isinstance(index, int):
                raise RerankerError(f"{provider} answered a {type(index).__name__} index")
            if not 0 <= index < expected:
                raise RerankerError(f"{provider} answered index {index} for {expected} documents")
            if index in scores:
                raise RerankerError(f"{provider} answered index {index} twice")
            scores[index] = unit_score(
                result.relevance_score, clamp=True, provider=provider, position=index
            )
        if len(scores) != expected:
            missing = sorted(set(range(expected)) - scores.keys())
            raise RerankerError(f"{provider} did not score documents {missing}")
        return [scores[index] for index in range(expected)]
