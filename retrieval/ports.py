"""Ports of the retrieval app (Embedder, Reranker arrive with the search issue)."""
