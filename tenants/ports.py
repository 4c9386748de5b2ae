"""Ports of the tenants app (token verification arrives with the identity issue)."""
