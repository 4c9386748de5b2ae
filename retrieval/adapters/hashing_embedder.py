"""A deterministic, offline embedder: hashed character n-grams and words (for tests, CI)."""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Sequence


class HashingEmbedder:
    """Embedder port without a model: similar spellings land near each other.

    It knows nothing about meaning (no synonyms, no translation); it exists so that
    every code path that needs vectors runs offline and reproducibly.
    """

    def __init__(self, *, dimension: int = 256) -> None:
        self.dimension = dimension
        self.model = f"hashing-v1-{dimension}"

    def _features(self, text: str) -> list[str]:
        norm = unicodedata.normalize("NFKC", text).casefold()
        padded = f" {norm} "
        grams = [padded[i : i + 3] for i in range(max(len(padded) - 2, 1))]
        return grams + [f"w:{word}" for word in norm.split()]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for feature in self._features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimension
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]
