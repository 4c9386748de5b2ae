"""What the portal's views of every app ask of an HTMX request."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


def htmx_partial(request: HttpRequest) -> bool:
    """An HTMX swap gets a fragment; a boosted navigation gets the full page."""
    htmx = getattr(request, "htmx", None)  # set by django-htmx's middleware
    return isinstance(htmx, HtmxDetails) and bool(htmx) and not htmx.boosted
