"""Per-request tenancy: one transaction per request with the caller's groups set in Postgres."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from tenants import replicas, rls
from tenants.principals import request_principal


def tenant_exempt(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view that must answer without a database transaction (e.g. /healthz)."""
    view.tenant_exempt = True  # type: ignore[attr-defined]  # a marker, as csrf_exempt sets
    return view


def _exempt(request: HttpRequest) -> bool:
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    return bool(getattr(match.func, "tenant_exempt", False))


class TenantContextMiddleware:
    """Runs each request in a transaction whose RLS setting is the session user's groups;
    a GET request reads on a hot standby when one is configured and fit to serve it
    (tenants.replicas).

    DRF authentication (API keys, OIDC bearer tokens) later re-activates the setting
    for the principal it authenticated, inside the same transaction. The setting is
    transaction-local, so nothing survives into the next request on this connection.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _exempt(request):
            return self.get_response(request)
        # tenant_context restores the previous setting on exit, so even a request
        # nested in an outer transaction (tests, management code) leaves nothing behind.
        principal = request_principal(request)
        rls.trace_groups(principal)
        with rls.tenant_context(principal), replicas.request_reads(request, principal):
            return self.get_response(request)
