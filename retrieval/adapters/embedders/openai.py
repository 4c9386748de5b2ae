"""Embedder on OpenAI's embeddings API (text-embedding-3-small by default, dim 1536)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import openai

from common.chat_json import OPENAI_TRANSIENT_ERRORS
from retrieval.adapters.embedders.base import EmbedResult, checked, sum_tokens


class OpenAIEmbedder:
    """Embedder port on `client.embeddings.create`, in batches of `batch_size` texts.

    Build the client with `max_retries=0` (and a timeout) when it is wrapped in a
    ResilientEmbedder, so retries are not multiplied by the SDK's own.
    """

    transient_errors = OPENAI_TRANSIENT_ERRORS

    def __init__(
        self,
        *,
        client: openai.OpenAI,
        model: str = "text-embedding-3-small",
        dimension: int = 1536,
        batch_size: int = 256,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._client = client
        self.model = model
        self.dimension = dimension
        self.batch_size = batch_size  # the API takes up to 2,048 inputs per request

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_with_usage(texts).vectors

    def embed_with_usage(self, texts: Sequence[str]) -> EmbedResult:
        """One request per batch; vectors in input order, tokens as OpenAI counted them."""
        vectors: list[list[float]] = []
        tokens: list[int | None] = []
        for batch in itertools.batched(texts, self.batch_size):
            response = self._client.embeddings.create(
                input=list(batch), model=self.model, **self._dimension_argument()
            )
            ordered = sorted(response.data, key=lambda item: item.index)
            vectors += checked(
                [list(item.embedding) for item in ordered],
                expected=len(batch),
                dimension=self.dimension,
                provider=f"OpenAI {self.model}",
            )
            tokens.append(response.usage.prompt_tokens if response.usage else None)
        return EmbedResult(vectors=vectors, tokens=sum_tokens(tokens), calls=len(tokens))

    def _dimension_argument(self) -> dict[str, Any]:
        # Only the text-embedding-3 family can shorten its vectors; older models reject it.
        if self.model.startswith("text-embedding-3"):
            return {"dimensions": self.dimension}
        return {}
