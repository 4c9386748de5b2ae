"""DRF authentication: `Authorization: Bearer <api key | OIDC access token>`."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from tenants import replicas, rls
from tenants.domain import api_keys as keys
from tenants.domain.access import Principal
from tenants.usecases import api_key_authenticate

logger = logging.getLogger(__name__)

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
    """Counts failed authentications in the cache, per client address and per key prefix.

    A failure counts against the address it came from and, for a `vera_` key, against
    the prefix it presented, each in its own counter; past either limit a failure is
    answered 429 instead of 401. A credential that verifies is never refused for the
    counters: ten bad keys from behind a shared NAT, or someone hammering a known
    prefix, must not lock out the valid keys of everyone else. The secret (256 bits)
    is what resists guessing; the counters slow scanners down and make them visible.
    """

    def __init__(self) -> None:
        self.limit = settings.VERA_AUTH_FAILURE__LIMIT
        self.window = settings.VERA_AUTH_FAILURE__WINDOW_S

    @staticmethod
    def _keys(ip: str, prefix: str | None) -> list[str]:
        keys = [f"authfail:ip:{ip}"]
        if prefix:
            keys.append(f"authfail:key:{prefix}")
        return keys

    def failed(self, *, ip: str, prefix: str | None = None) -> exceptions.APIException:
        """Count one failure; the error to answer it with (429 once a counter is over)."""
        over = [self._count(key) > self.limit for key in self._keys(ip, prefix)]
        if any(over):
            return exceptions.Throttled(
                wait=self.window, detail="Too many failed authentication attempts."
            )
        return exceptions.AuthenticationFailed(INVALID)

    def _count(self, key: str) -> int:
        try:
            return self._counted(key)
        except Exception as error:  # the cache (Redis) is down: the failure stays a 401
            logger.warning("failed-authentication counter unavailable: %s", type(error).__name__)
            return 0

    def _counted(self, key: str) -> int:
        if cache.add(key, 1, timeout=self.window):
            return 1
        try:
            return int(cache.incr(key))
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=self.window)
            return 1


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
        principal = api_key_authenticate(token)
        if principal is None:
            parsed = keys.parse(token)
            raise FailureLimiter().failed(
                ip=client_ip(request), prefix=parsed[0] if parsed else None
            )
        rls.activate(principal)
        replicas.read_request(request._request, principal)
        return PrincipalUser(principal), principal

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="vera"'
