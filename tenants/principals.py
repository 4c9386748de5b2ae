"""Who is asking: the principal of a Django request or a DRF request, looked up once.

Not an entrypoint, so every app's views, API and admin may use it (the middleware does).
"""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.request import Request

from tenants.domain.access import ANONYMOUS, Principal
from tenants.selectors import principal_for_user


def request_principal(request: HttpRequest) -> Principal:
    """The session user's principal, computed once per request."""
    cached = getattr(request, "_vera_principal", None)
    if isinstance(cached, Principal):
        return cached
    user = request.user
    principal = (
        principal_for_user(user.pk, label=f"user:{user.get_username()}")
        if user.is_authenticated
        else ANONYMOUS
    )
    request._vera_principal = principal  # type: ignore[attr-defined]  # a per-request cache
    return principal


def principal_of(request: Request) -> Principal:
    """The authenticated principal: a key's or token's, else the session user's."""
    if isinstance(request.auth, Principal):
        return request.auth
    return request_principal(request._request)
