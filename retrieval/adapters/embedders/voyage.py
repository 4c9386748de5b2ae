"""Embedder on Voyage AI's embeddings API (voyage-3.5 by default, dim 1024)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, get_args

import voyageai.client
import voyageai.error

from retrieval.adapters.embedders.base import EmbedResult, checked

InputType = Literal["document", "query"]

# Errors that say "try again later"; a 4xx other than 429 means the request is wrong.
VOYAGE_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    voyageai.error.APIConnectionError,
    voyageai.error.Timeout,
    voyageai.error.TryAgain,
    voyageai.error.RateLimitError,
    voyageai.error.ServerError,
    voyageai.error.ServiceUnavailableError,
)


class VoyageEmbedder:
    """Embedder port on `voyageai.Client.embed`, in batches of `batch_size` texts.

    Voyage embeds a query and a document differently (`input_type` adds a retrieval
    prompt), so the two are separate embedders of one model and dimension, and their
    cache entries are kept apart by `cache_variant`. `for_queries()` and
    `for_documents()` give the sibling that shares this one's client.
    """

    transient_errors = VOYAGE_TRANSIENT_ERRORS

    def __init__(
        self,
        *,
        client: voyageai.client.Client,
        model: str = "voyage-3.5",
        dimension: int = 1024,
        input_type: InputType = "document",
        batch_size: int = 128,
    ) -> None:
        if input_type not in get_args(InputType):
            raise ValueError(f"input_type must be 'document' or 'query', not {input_type!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._client = client
        self.model = model
        self.dimension = dimension
        self.input_type: InputType = input_type
        self.batch_size = batch_size  # the API takes up to 1,000 inputs per request

    @property
    def cache_variant(self) -> str:
        return self.input_type

    def for_queries(self) -> VoyageEmbedder:
        return self._with_input_type("query")

    def for_documents(self) -> VoyageEmbedder:
        return self._with_input_type("document")

    def _with_input_type(self, input_type: InputType) -> VoyageEmbedder:
        return VoyageEmbedder(
            client=self._client,
            model=self.model,
            dimension=self.dimension,
            input_type=input_type,
            batch_size=self.batch_size,
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_with_usage(texts).vectors

    def embed_with_usage(self, texts: Sequence[str]) -> EmbedResult:
        """One request per batch; vectors in input order, tokens as Voyage counted them."""
        vectors: list[list[float]] = []
        tokens = calls = 0
        for batch in itertools.batched(texts, self.batch_size):
            result = self._client.embed(
                list(batch),
                model=self.model,
                input_type=self.input_type,
                truncation=True,
                output_dimension=self.dimension,
            )
            vectors += checked(
                [[float(value) for value in vector] for vector in result.embeddings],
                expected=len(batch),
                dimension=self.dimension,
                provider=f"Voyage {self.model}",
            )
            tokens += result.total_tokens
            calls += 1
        return EmbedResult(vectors=vectors, tokens=tokens, calls=calls)
