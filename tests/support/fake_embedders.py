"""Hand-written `retrieval.ports.Embedder` fakes whose vectors a test chooses."""

from __future__ import annotations


class FixedEmbedder:
    """Chosen vectors: "auth service" and "login gateway" at cosine 0.9 (a near miss)."""

    model = "fixed-test"
    dimension = 2
    VECTORS = {"auth service": [1.0, 0.0], "login gateway": [0.9, 0.43588989]}

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.VECTORS[text] for text in texts]
