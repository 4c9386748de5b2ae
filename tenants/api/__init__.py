"""REST entrypoints of the tenants app."""
