"""HTMX pages of the retrieval app."""
