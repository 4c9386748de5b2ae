"""REST entrypoints of the curation app."""
