"""DRF authentication with OIDC bearer access tokens (`Authorization: Bearer <JWT>`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from tenants import replicas, rls
from tenants.adapters.oidc import InvalidAccessToken, user_for_claims, verify_access_token
from tenants.api.authentication import FailureLimiter, bearer_token, client_ip
from tenants.domain.access import Principal
from tenants.selectors import principal_for_user

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser

logger = logging.getLogger(__name__)


class OIDCBearerAuthentication(BaseAuthentication):
    """Access tokens from the configured provider; `vera_` API keys are left to their class.

    Active only when VERA_OIDC__ISSUER is set. Failures count towards the same per-address
    limit and answer with the same body as a bad API key; a valid token always passes.
    A deactivated user's token fails like an invalid one.
    """

    def authenticate(self, request: Request) -> tuple[AbstractUser, Principal] | None:
        if not settings.VERA_OIDC__ISSUER:
            return None
        token = bearer_token(request)
        if token is None or token.startswith("vera_"):
            return None
        ip = client_ip(request)
        try:
            user = user_for_claims(verify_access_token(token))
        except InvalidAccessToken as error:
            logger.info("OIDC bearer token rejected from %s: %s", ip, error)
            user = None
        if user is None or not user.is_active:
            raise FailureLimiter().failed(ip=ip)
        principal = principal_for_user(user.pk, label=f"oidc:{user.get_username()}")
        rls.activate(principal)
        replicas.read_request(request._request, principal)
        return user, principal

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="vera"'
