"""HTMX pages of the curation app: review queues, claim pages."""
