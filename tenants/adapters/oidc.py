"""OpenID Connect: web sign-in, bearer access tokens and just-in-time provisioning.

Both ways in share one JWT check (`decode_jwt`: asymmetric algorithm pinned by
OIDC_RP_SIGN_ALGO, key from the live JWKS or a fixed PEM, issuer, audience, exp/iat)
and one way to turn claims into a user (`user_for_claims`).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Any

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.db.models import Field
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from tenants.domain.idp import parse_group_roles, wanted_roles
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.services.scopes import (
    membership_grant,
    memberships_from_idp,
    personal_scope_ensure,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser
    from django.db.models import QuerySet

logger = logging.getLogger(__name__)

LEEWAY_S = 30
JWKS_TIMEOUT_S = 5
JWKS_LIFESPAN_S = 300
# An unknown `kid` forces a JWKS refetch at most this often (per process): a rotated
# key is picked up at once, forged kids cannot hammer the provider.
JWKS_REFRESH_COOLDOWN_S = 1.0
# Only asymmetric algorithms: never "none", never a shared HMAC secret.
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


class InvalidAccessToken(Exception):
    """A token or its claims were rejected (any reason: signature, claims, JWKS, user)."""


@functools.lru_cache(maxsize=8)
def _jwks_client(url: str) -> jwt.PyJWKClient:
    return jwt.PyJWKClient(
        url,
        lifespan=JWKS_LIFESPAN_S,
        timeout=JWKS_TIMEOUT_S,
        cooldown_duration=JWKS_REFRESH_COOLDOWN_S,
    )


def _verification_key(token: str) -> jwt.PyJWK | str:
    if settings.OIDC_RP_IDP_SIGN_KEY:
        return str(settings.OIDC_RP_IDP_SIGN_KEY)
    if not settings.OIDC_OP_JWKS_ENDPOINT:
        raise InvalidAccessToken("neither OIDC_RP_IDP_SIGN_KEY nor OIDC_OP_JWKS_ENDPOINT is set")
    return _jwks_client(settings.OIDC_OP_JWKS_ENDPOINT).get_signing_key_from_jwt(token)


def decode_jwt(token: str, *, audience: str, issuer: str | None) -> dict[str, Any]:
    """The verified claims of a JWT from the provider, or InvalidAccessToken."""
    algorithm = settings.OIDC_RP_SIGN_ALGO
    if algorithm not in ASYMMETRIC_ALGORITHMS:
        raise InvalidAccessToken(f"OIDC_RP_SIGN_ALGO={algorithm!r} is not an asymmetric algorithm")
    if not audience:
        raise InvalidAccessToken("no audience configured")
    try:
        # Checked before any key lookup, so "none"/HS* tokens never cause a JWKS fetch.
        if jwt.get_unverified_header(token).get("alg") != algorithm:
            raise InvalidAccessToken("unexpected algorithm")
        return jwt.decode(
            token,
            _verification_key(token),
            algorithms=[algorithm],
            audience=audience,
            issuer=issuer,
            leeway=LEEWAY_S,
            options={"require": ["exp", "iat", "iss", "aud"]},
        )
    except (jwt.PyJWTError, ValueError, TypeError) as error:
        raise InvalidAccessToken(str(error)) from error


def verify_access_token(token: str) -> dict[str, Any]:
    """The claims of a bearer access token issued for VERA's API, or InvalidAccessToken."""
    if not settings.VERA_OIDC__ISSUER:
        raise InvalidAccessToken("VERA_OIDC__ISSUER is not set")
    return decode_jwt(
        token, audience=settings.VERA_OIDC__AUDIENCE, issuer=settings.VERA_OIDC__ISSUER
    )


def _email(claims: dict[str, Any]) -> str | None:
    email = claims.get("email")
    # An address the provider itself says is unverified must not match an account.
    if not isinstance(email, str) or "@" not in email or claims.get("email_verified") is False:
        return None
    return email


def _unique_username(wanted: str) -> str:
    user_model = get_user_model()
    field = user_model._meta.get_field(user_model.USERNAME_FIELD)
    limit = (field.max_length if isinstance(field, Field) else None) or 150
    base = _USERNAME_UNSAFE.sub("-", wanted)[:limit] or "user"
    candidate, n = base, 1
    while user_model._default_manager.filter(
        **{f"{user_model.USERNAME_FIELD}__iexact": candidate}
    ).exists():
        n += 1
        suffix = f"-{n}"
        candidate = f"{base[: limit - len(suffix)]}{suffix}"
    return candidate


def _join_default_organisation(user_id: int) -> None:
    group_id = settings.VERA_OIDC__ORGANISATION
    if not group_id:
        return
    scope = Scope.objects.filter(group_id=group_id, kind=ScopeKind.ORGANISATION).first()
    if scope is None:
        logger.warning("VERA_OIDC__ORGANISATION=%s is no organisation; no role granted", group_id)
        return
    role = Role[settings.VERA_OIDC__DEFAULT_ROLE.upper()]
    membership_grant(user_id=user_id, scope_id=scope.pk, role=role)


@transaction.atomic
def provision_user(claims: dict[str, Any]) -> AbstractUser:
    """Just-in-time account: unusable password, personal scope, default organisation role."""
    email = _email(claims)
    if email is None:
        raise InvalidAccessToken("no usable email claim")
    wanted = claims.get("preferred_username")
    if not isinstance(wanted, str) or not wanted.strip():
        wanted = email.split("@", 1)[0]
    user = get_user_model()._default_manager.create_user(
        username=_unique_username(wanted.strip()), email=email, password=None
    )
    personal_scope_ensure(user_id=user.pk, username=user.get_username())
    _join_default_organisation(user.pk)
    sync_group_roles(user.pk, claims)
    return user


def sync_group_roles(user_id: int, claims: dict[str, Any]) -> None:
    """The roles the provider's groups give (VERA_OIDC__GROUP_ROLES), granted or taken back;
    nothing changes when the claims carry no groups claim at all."""
    mapping = parse_group_roles(settings.VERA_OIDC__GROUP_ROLES)
    groups = claims.get(settings.VERA_OIDC__GROUPS_CLAIM)
    if not mapping or groups is None:
        return
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        logger.warning("the %s claim is not a list of names; roles unchanged",
                       settings.VERA_OIDC__GROUPS_CLAIM)  # fmt: skip
        return
    memberships_from_idp(
        user_id=user_id,
        wanted=wanted_roles(mapping, groups),
        mapped={rule.group_id for rule in mapping},
    )


def _users_matching(claims: dict[str, Any]) -> QuerySet[AbstractUser]:
    email = _email(claims)
    manager = get_user_model()._default_manager
    return manager.filter(email__iexact=email) if email else manager.none()


def user_for_claims(claims: dict[str, Any]) -> AbstractUser:
    """The user with the claims' email (case-insensitive), provisioned if there is none."""
    if _email(claims) is None:
        raise InvalidAccessToken("no usable email claim")
    users = list(_users_matching(claims)[:2])
    if len(users) > 1:
        raise InvalidAccessToken("several users share this email")
    return users[0] if users else provision_user(claims)


class VeraOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]  # no type hints upstream
    """Authorization-code sign-in; users matched by email and provisioned on first sign-in."""

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return _email(claims) is not None

    def filter_users_by_claims(self, claims: dict[str, Any]) -> QuerySet[AbstractUser]:
        return _users_matching(claims)

    def create_user(self, claims: dict[str, Any]) -> AbstractUser:
        return provision_user(claims)

    def update_user(self, user: AbstractUser, claims: dict[str, Any]) -> AbstractUser:
        """A returning person: their provider-granted roles follow their groups."""
        sync_group_roles(user.pk, claims)
        return user

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The ID token through the same JWT check as access tokens (audience: this client)."""
        try:
            payload = decode_jwt(
                token,
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.VERA_OIDC__ISSUER or None,
            )
        except InvalidAccessToken as error:
            raise SuspiciousOperation(f"ID token rejected: {error}") from None
        if self.get_settings("OIDC_USE_NONCE", True) and kwargs.get("nonce") != payload.get(
            "nonce"
        ):
            raise SuspiciousOperation("ID token nonce mismatch")
        return payload
