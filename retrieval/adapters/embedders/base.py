"""What the embedder adapters share: a result that carries usage, and answer checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from curation.ports import Embedder


class EmbeddingError(RuntimeError):
    """A provider answered, but not with one vector of the pinned dimension per text."""


@dataclass(frozen=True)
class EmbedResult:
    """Vectors plus what producing them cost: provider requests and tokens."""

    vectors: list[list[float]]
    tokens: int | None  # as the provider counted them; None when it does not say
    calls: int  # requests sent to the provider (0 for an empty input)


@runtime_checkable
class UsageReportingEmbedder(Embedder, Protocol):
    """An embedder that also says how many tokens and requests a call took."""

    def embed_with_usage(self, texts: Sequence[str]) -> EmbedResult:
        """Like `embed`, with the usage the provider reported."""
        ...


def embed_with_usage(embedder: Embedder, texts: Sequence[str]) -> EmbedResult:
    """Usage from embedders that report it; one call of unknown tokens from any other."""
    if isinstance(embedder, UsageReportingEmbedder):
        return embedder.embed_with_usage(texts)
    return EmbedResult(vectors=embedder.embed(texts), tokens=None, calls=1 if texts else 0)


def checked(
    vectors: list[list[float]], *, expected: int, dimension: int, provider: str
) -> list[list[float]]:
    """The vectors, once each text got one of the pinned dimension (dimensions never mix)."""
    if len(vectors) != expected:
        raise EmbeddingError(f"{provider} returned {len(vectors)} vectors for {expected} texts")
    for vector in vectors:
        if len(vector) != dimension:
            raise EmbeddingError(
                f"{provider} returned a {len(vector)}-dimensional vector; "
                f"this embedder is pinned to {dimension}"
            )
    return vectors


def sum_tokens(counts: Sequence[int | None]) -> int | None:
    """Total tokens over several requests; unknown if any request did not report."""
    if any(count is None for count in counts):
        return None
    return sum(count for count in counts if count is not None)
