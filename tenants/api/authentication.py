"""DRF authentication: `Authorization: Bearer <api key | OIDC access token>`."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from tenants import rls
from tenants.domain.access import Principal
from tenants.services.api_keys import api_key_authenticate

# One message for every failure: nothing tells a wrong secret from an unknown key.
INVALID = "Invalid, expired or revoked credentials."


class PrincipalUser:
    """What `request.user` is for a machine caller: the key's owner, seen through its key."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.pk = self.id = principal.user_id

    def get_username(self) -> str:
        return self.principal.label

    def __str__(self) -> str:
        return self.principal.label


def client_ip(request: Request) -> str:
    return str(request.META.get("REMOTE_ADDR", "unknown"))


class FailureLimiter:
    """Counts failed authentications per client in the cache; too many -> 429."""

    def __init__(self) -> None:
        self.limit = settings.VERA_AUTH_FAILURE_LIMIT
        self.window = settings.VERA_AUTH_FAILURE_WINDOW_S

    def _key(self, ip: str) -> str:
        return f"authfail:{ip}"

    def check(self, ip: str) -> None:
        if (cache.get(self._key(ip)) or 0) >= self.limit:
            raise exceptions.Throttled(
                wait=self.window, detail="Too many failed authentication attempts."
            )

    def record_failure(self, ip: str) -> None:
        key = self._key(ip)
        if cache.add(key, 1, timeout=self.window):
            return
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=self.window)


def bearer_token(request: Request) -> str | None:
    header = get_authorization_header(request).split()
    if not header or header[0].lower() != b"bearer":
        return None
    if len(header) != 2:
        raise exceptions.AuthenticationFailed(INVALID)
    try:
        return header[1].decode()
    except UnicodeDecodeError:
        raise exceptions.AuthenticationFailed(INVALID) from None


class ApiKeyAuthentication(BaseAuthentication):
    """`Bearer vera_<prefix>_<secret>`; other bearer tokens are left to the next class."""

    def authenticate(self, request: Request) -> tuple[PrincipalUser, Principal] | None:
        token = bearer_token(request)
        if token is None or not token.startswith("vera_"):
            return None
        limiter = FailureLimiter()
        ip = client_ip(request)
        limiter.check(ip)
        principal = api_key_authenticate(token)
        if principal is None:
            limiter.record_failure(ip)
            raise exceptions.AuthenticationFailed(INVALID)
        rls.activate(principal)
        return PrincipalUser(principal), principal

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="vera"'
