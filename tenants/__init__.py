"""Tenants: scopes and group ids, memberships and roles, API keys, identity, RLS plumbing."""
