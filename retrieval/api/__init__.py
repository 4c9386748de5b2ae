"""REST entrypoints of the retrieval app."""
