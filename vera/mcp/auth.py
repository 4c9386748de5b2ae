"""Who an MCP request acts as: its bearer token, verified here and nowhere else.

VERA is a resource server only: it issues no tokens. Two kinds are accepted.

- **VERA API keys** (`vera_<prefix>_<secret>`), exactly as the REST API takes them: the
  key's owner, capped by its ceiling and limited to its scope. A viewer-ceiling key gets
  `vera:read`, a key reaching contributor or above `vera:propose` too.
- **OIDC access tokens** from VERA_OIDC__ISSUER: signature (JWKS), issuer, expiry, and an
  audience equal to this server's URL (VERA_MCP__RESOURCE_URL, RFC 8707). A token issued
  for the REST API or any other audience is refused. Its scopes (`scope` or `scp`) map
  onto roles: `vera:read` reads as a viewer, `vera:propose` may propose as a contributor,
  and never past the person's own roles.

The token goes no further than this module: no tool, provider or log sees it.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from django.conf import settings
from django.db import close_old_connections
from mcp.server.auth.provider import AccessToken

from tenants.adapters.oidc import InvalidAccessToken, decode_jwt, user_for_claims
from tenants.domain.access import Principal, cap_roles
from tenants.domain.scopes import Role
from tenants.selectors import principal_for_user
from tenants.usecases import api_key_authenticate

logger = logging.getLogger(__name__)

SCOPE_READ = "vera:read"
SCOPE_PROPOSE = "vera:propose"
SCOPES = (SCOPE_READ, SCOPE_PROPOSE)
# The role each scope lets a token act with, at most (the person's own roles cap it).
SCOPE_CEILINGS = {SCOPE_READ: Role.VIEWER, SCOPE_PROPOSE: Role.CONTRIBUTOR}
PRINCIPAL_CLAIM = "vera_principal"  # where the verified principal rides on the AccessToken


def token_scopes(claims: dict[str, Any]) -> list[str]:
    """The VERA scopes a token's claims grant (`scope`: space-separated, or `scp`: a list)."""
    granted = claims.get("scope", claims.get("scp", ""))
    names = granted.split() if isinstance(granted, str) else granted
    if not isinstance(names, list):
        return []
    return [scope for scope in SCOPES if scope in names]


def scope_ceiling(scopes: list[str]) -> Role | None:
    """The highest role the scopes allow, or None when they grant nothing of VERA's."""
    ceilings = [SCOPE_CEILINGS[scope] for scope in scopes if scope in SCOPE_CEILINGS]
    return max(ceilings) if ceilings else None


def key_scopes(principal: Principal) -> list[str]:
    """What an API key may do over MCP: read, and propose where it reaches contributor."""
    if not principal.roles:
        return []
    top = max(principal.roles.values())
    return [scope for scope in SCOPES if top >= SCOPE_CEILINGS[scope]]


def audience_matches(claims: dict[str, Any], resource: str) -> bool:
    """Whether the verified `aud` names this server (one string, or a list holding it)."""
    audience = claims.get("aud")
    names = [audience] if isinstance(audience, str) else audience or []
    return any(isinstance(name, str) and name.rstrip("/") == resource for name in names)


def _api_key(token: str) -> AccessToken | None:
    principal = api_key_authenticate(token)
    if principal is None:
        return None
    return AccessToken(
        token="",  # never kept: nothing downstream needs it
        client_id=principal.label,
        scopes=key_scopes(principal),
        resource=settings.VERA_MCP__RESOURCE_URL,
        subject=principal.label,
        claims={PRINCIPAL_CLAIM: principal},
    )


def _oidc(token: str) -> AccessToken | None:
    if not settings.VERA_OIDC__ISSUER:
        return None
    resource = settings.VERA_MCP__RESOURCE_URL
    try:
        claims = decode_jwt(token, audience=resource, issuer=settings.VERA_OIDC__ISSUER)
        if not audience_matches(claims, resource):
            raise InvalidAccessToken("audience is not this server")
        user = user_for_claims(claims)
    except InvalidAccessToken as error:
        logger.info("MCP bearer token refused: %s", error)
        return None
    if not user.is_active:
        return None
    scopes = token_scopes(claims)
    ceiling = scope_ceiling(scopes)
    own = principal_for_user(user.pk, label=f"oidc:{user.get_username()}")
    roles = cap_roles(own.roles, ceiling=ceiling, within=own.roles) if ceiling else {}
    principal = Principal(
        label=own.label, user_id=own.user_id, roles=roles, reads=own.reads if roles else frozenset()
    )
    expires = claims.get("exp")
    return AccessToken(
        token="",
        client_id=str(claims.get("azp") or claims.get("client_id") or own.label),
        scopes=scopes,
        expires_at=int(expires) if isinstance(expires, int | float) else None,
        resource=resource,
        subject=str(claims.get("sub", "")) or None,
        claims={"iss": claims.get("iss"), PRINCIPAL_CLAIM: principal},
    )


def verify(token: str) -> AccessToken | None:
    """The access a bearer token grants, or None (refused: 401). Runs the database reads
    in the calling thread, as a request would."""
    close_old_connections()
    try:
        return _api_key(token) if token.startswith("vera_") else _oidc(token)
    finally:
        close_old_connections()


class VeraTokenVerifier:
    """The MCP SDK's TokenVerifier: API keys and OIDC access tokens for this resource."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return await anyio.to_thread.run_sync(verify, token)


def principal_from(access: AccessToken | None) -> Principal | None:
    """The principal a verified token carries (None outside an authenticated request)."""
    if access is None or not access.claims:
        return None
    principal = access.claims.get(PRINCIPAL_CLAIM)
    return principal if isinstance(principal, Principal) else None
