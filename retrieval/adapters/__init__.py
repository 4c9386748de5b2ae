"""Adapters: the only place this app touches infrastructure libraries."""
