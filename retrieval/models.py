"""Retrieval persistence: search index projection, hits, feedback, weight sets (later issues)."""
