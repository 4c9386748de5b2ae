"""The refusals every app's use cases raise and every entrypoint renders (403, 404)."""

from __future__ import annotations


class PermissionDenied(Exception):
    """The principal's role does not allow the action."""


class NotFound(Exception):
    """No such record (a scope, a member, a claim ...) that the caller may see."""
