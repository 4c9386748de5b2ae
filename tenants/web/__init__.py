"""HTMX pages of the tenants app."""
