"""Single sign-on and bearer access tokens against a real local OpenID provider.

Everything goes over real HTTP on 127.0.0.1 with real RS256 signing and verification.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import SESSION_KEY, get_user_model
from django.test import Client
from pytest_django.fixtures import Settings

from tenants import rls
from tenants.adapters.oidc import JWKS_REFRESH_COOLDOWN_S
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import AuditEvent, Membership, Scope
from tenants.selectors import principal_for_user
from tenants.services.scopes import scope_create
from tests.support.oidc_provider import OIDCProvider, SigningKey

pytestmark = pytest.mark.django_db

INVALID_BODY = {"detail": "Invalid, expired or revoked credentials."}
ME = "/api/v1/me"


@pytest.fixture
def oidc_provider() -> Iterator[OIDCProvider]:
    with OIDCProvider() as provider:
        yield provider


@pytest.fixture
def organisation() -> Scope:
    return scope_create(kind=ScopeKind.ORGANISATION, name="Acme")


@pytest.fixture
def oidc(settings: Settings, oidc_provider: OIDCProvider, organisation: Scope) -> OIDCProvider:
    """Django pointed at the provider, as the OIDC_* environment variables would."""
    settings.OIDC_RP_CLIENT_ID = oidc_provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = oidc_provider.client_secret
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = oidc_provider.authorization_endpoint
    settings.OIDC_OP_TOKEN_ENDPOINT = oidc_provider.token_endpoint
    settings.OIDC_OP_USER_ENDPOINT = oidc_provider.userinfo_endpoint
    settings.OIDC_OP_JWKS_ENDPOINT = oidc_provider.jwks_endpoint
    settings.OIDC_RP_SIGN_ALGO = "RS256"
    settings.OIDC_RP_IDP_SIGN_KEY = None
    settings.OIDC_TIMEOUT = 5
    settings.VERA_OIDC__ISSUER = oidc_provider.issuer
    settings.VERA_OIDC__AUDIENCE = oidc_provider.api_audience
    settings.VERA_OIDC__ORGANISATION = organisation.group_id
    settings.VERA_OIDC__DEFAULT_ROLE = "viewer"
    backend = "tenants.adapters.oidc.VeraOIDCBackend"
    settings.AUTHENTICATION_BACKENDS = [
        *(name for name in settings.AUTHENTICATION_BACKENDS if name != backend),
        backend,
    ]
    # A private failure counter per test, so rejections in one test never throttle another.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"oidc-{uuid.uuid4()}",
        }
    }
    return oidc_provider


def sso_sign_in(client: Client, provider: OIDCProvider) -> Any:
    """The browser's part of the code flow: VERA -> provider -> VERA's callback."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302
    assert start["Location"].startswith(provider.authorization_endpoint)
    authorize = requests.get(start["Location"], allow_redirects=False, timeout=5)
    assert authorize.status_code == 302
    return client.get(authorize.headers["Location"])


def me(client: Client, token: str) -> Any:
    return client.get(ME, HTTP_AUTHORIZATION=f"Bearer {token}")


def alice() -> Any:
    return get_user_model().objects.get(email__iexact="alice@example.org")


# --- web sign-in ----------------------------------------------------------------------


def test_user_is_signed_in_when_the_sso_flow_completes(client: Client, oidc: OIDCProvider) -> None:
    response = sso_sign_in(client, oidc)
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert int(client.session[SESSION_KEY]) == alice().pk


def test_user_is_provisioned_without_a_password_when_new(
    client: Client, oidc: OIDCProvider
) -> None:
    sso_sign_in(client, oidc)
    user = alice()
    assert user.username == "alice"
    assert not user.has_usable_password()


def test_user_gets_a_personal_scope_when_provisioned(client: Client, oidc: OIDCProvider) -> None:
    sso_sign_in(client, oidc)
    personal = Membership.objects.get(user=alice(), scope__kind=ScopeKind.PERSONAL)
    assert personal.role == Role.OWNER


def test_user_joins_the_organisation_as_viewer_when_provisioned(
    client: Client, oidc: OIDCProvider, organisation: Scope
) -> None:
    sso_sign_in(client, oidc)
    membership = Membership.objects.get(user=alice(), scope=organisation)
    assert membership.role == Role.VIEWER


def test_role_grant_is_audited_when_a_user_is_provisioned(
    client: Client, oidc: OIDCProvider, organisation: Scope
) -> None:
    sso_sign_in(client, oidc)
    user = alice()
    with rls.tenant_context(principal_for_user(user.pk, label="test")):
        event = AuditEvent.objects.get(
            group_id=organisation.group_id, action="role.grant", target_id=str(user.pk)
        )
    assert event.actor_label == "system"
    assert event.data == {"role": "viewer", "new": True}


def test_existing_user_is_reused_when_the_same_email_signs_in_again(
    client: Client, oidc: OIDCProvider
) -> None:
    sso_sign_in(client, oidc)
    first = alice()
    client.logout()
    oidc.user = {**oidc.user, "email": "Alice@Example.ORG"}
    sso_sign_in(client, oidc)
    assert get_user_model().objects.count() == 1
    assert int(client.session[SESSION_KEY]) == first.pk


def test_username_is_made_unique_when_preferred_username_is_taken(
    client: Client, oidc: OIDCProvider
) -> None:
    get_user_model().objects.create_user(username="alice", email="other-alice@example.org")
    sso_sign_in(client, oidc)
    assert alice().username == "alice-2"


def test_email_local_part_is_the_username_when_preferred_username_is_missing(
    client: Client, oidc: OIDCProvider
) -> None:
    oidc.user = {**oidc.user, "preferred_username": None, "email": "bob.smith@example.org"}
    sso_sign_in(client, oidc)
    assert get_user_model().objects.get(email="bob.smith@example.org").username == "bob.smith"


def test_no_role_is_granted_when_the_configured_organisation_is_missing(
    client: Client, oidc: OIDCProvider, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    settings.VERA_OIDC__ORGANISATION = "o:" + "0" * 32
    sso_sign_in(client, oidc)
    assert not Membership.objects.filter(user=alice(), scope__kind=ScopeKind.ORGANISATION).exists()
    assert "no role granted" in caplog.text


def test_sign_in_is_refused_when_the_id_token_is_for_another_client(
    client: Client, oidc: OIDCProvider
) -> None:
    oidc.id_token_overrides = {"aud": "another-client"}
    response = sso_sign_in(client, oidc)
    assert response.status_code == 400
    assert SESSION_KEY not in client.session
    assert not get_user_model().objects.exists()


def test_sign_in_is_refused_when_the_email_is_unverified(
    client: Client, oidc: OIDCProvider
) -> None:
    oidc.user = {**oidc.user, "email_verified": False}
    response = sso_sign_in(client, oidc)
    assert response.status_code == 302  # to the failure page
    assert SESSION_KEY not in client.session
    assert not get_user_model().objects.exists()


# --- bearer access tokens on the API ------------------------------------------------------


def test_me_answers_as_the_oidc_principal_when_the_access_token_is_valid(
    client: Client, oidc: OIDCProvider, organisation: Scope
) -> None:
    response = me(client, oidc.mint_access_token())
    assert response.status_code == 200
    body = response.json()
    assert body["principal"] == "oidc:alice"
    assert body["user_id"] == alice().pk
    assert body["roles"][organisation.group_id] == "viewer"


def test_access_token_from_the_token_endpoint_is_accepted_when_presented_to_the_api(
    client: Client, oidc: OIDCProvider
) -> None:
    start = client.get("/oidc/authenticate/")
    authorize = requests.get(start["Location"], allow_redirects=False, timeout=5)
    callback = urlsplit(authorize.headers["Location"])
    tokens = requests.post(
        oidc.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": parse_qs(callback.query)["code"][0],
            "redirect_uri": f"{callback.scheme}://{callback.netloc}{callback.path}",
            "client_id": oidc.client_id,
            "client_secret": oidc.client_secret,
        },
        timeout=5,
    ).json()
    assert me(Client(), tokens["access_token"]).status_code == 200


def test_existing_user_is_reused_when_a_bearer_token_carries_their_email(
    client: Client, oidc: OIDCProvider
) -> None:
    existing = get_user_model().objects.create_user(username="al", email="ALICE@example.org")
    response = me(client, oidc.mint_access_token())
    assert response.json()["user_id"] == existing.pk
    assert response.json()["principal"] == "oidc:al"


def test_bearer_token_is_rejected_when_expired(client: Client, oidc: OIDCProvider) -> None:
    now = int(time.time())
    response = me(client, oidc.mint_access_token(iat=now - 600, exp=now - 60))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_the_issuer_is_wrong(
    client: Client, oidc: OIDCProvider
) -> None:
    response = me(client, oidc.mint_access_token(iss="https://evil.example"))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_the_audience_is_wrong(
    client: Client, oidc: OIDCProvider
) -> None:
    response = me(client, oidc.mint_access_token(aud=["some-other-api"]))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_iat_is_missing(client: Client, oidc: OIDCProvider) -> None:
    response = me(client, oidc.mint_access_token(iat=None))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_signed_by_a_key_not_in_the_jwks(
    client: Client, oidc: OIDCProvider
) -> None:
    response = me(client, oidc.mint_access_token(key=SigningKey.generate()))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_a_foreign_key_claims_a_published_kid(
    client: Client, oidc: OIDCProvider
) -> None:
    forged = SigningKey.generate(kid=oidc.current_key.kid)
    response = me(client, oidc.mint_access_token(key=forged))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


@pytest.mark.parametrize(
    ("algorithm", "secret"), [("none", None), ("HS256", "s3cret-shared-by-nobody-0123456789")]
)
def test_bearer_token_is_rejected_when_not_signed_with_rs256(
    client: Client, oidc: OIDCProvider, algorithm: str, secret: str | None
) -> None:
    token = oidc.sign(
        oidc.access_token_claims(),
        algorithm=algorithm,
        secret=secret,
        headers={"kid": oidc.current_key.kid},
    )
    response = me(client, token)
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.e30.AAAA"])
def test_bearer_token_is_rejected_when_it_is_garbage(
    client: Client, oidc: OIDCProvider, token: str
) -> None:
    response = me(client, token)
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_rejection_body_is_the_api_key_one_when_the_token_is_invalid(
    client: Client, oidc: OIDCProvider
) -> None:
    bad_key = me(client, "vera_abcdefgh_" + "x" * 43)
    bad_token = me(client, oidc.mint_access_token(aud=["some-other-api"]))
    assert bad_key.status_code == bad_token.status_code == 401
    assert bad_key.json() == bad_token.json() == INVALID_BODY
    assert bad_token["WWW-Authenticate"] == 'Bearer realm="vera"'


def test_no_user_is_provisioned_when_the_token_is_rejected(
    client: Client, oidc: OIDCProvider
) -> None:
    me(client, oidc.mint_access_token(aud=["some-other-api"]))
    assert not get_user_model().objects.exists()


def test_bearer_token_is_rejected_when_the_email_is_unverified(
    client: Client, oidc: OIDCProvider
) -> None:
    response = me(client, oidc.mint_access_token(email_verified=False))
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_the_user_is_inactive(
    client: Client, oidc: OIDCProvider
) -> None:
    get_user_model().objects.create_user(
        username="alice", email="alice@example.org", is_active=False
    )
    response = me(client, oidc.mint_access_token())
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_the_user_is_deactivated_after_first_use(
    client: Client, oidc: OIDCProvider
) -> None:
    token = oidc.mint_access_token()
    assert me(client, token).status_code == 200
    get_user_model().objects.filter(email__iexact="alice@example.org").update(is_active=False)
    response = me(client, token)
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_bearer_token_is_rejected_when_the_jwks_endpoint_is_unreachable(
    client: Client, oidc: OIDCProvider
) -> None:
    token = oidc.mint_access_token()
    oidc.stop()
    response = me(client, token)
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_token_signed_with_a_new_key_is_accepted_when_the_provider_rotates(
    client: Client, oidc: OIDCProvider
) -> None:
    assert me(client, oidc.mint_access_token()).status_code == 200  # caches the old JWKS
    fetches = oidc.jwks_requests
    oidc.rotate_key(retire_old=True)
    time.sleep(JWKS_REFRESH_COOLDOWN_S + 0.2)  # the refetch cooldown of unknown kids
    response = me(client, oidc.mint_access_token())
    assert response.status_code == 200
    assert oidc.jwks_requests == fetches + 1


def test_token_is_verified_with_the_fixed_key_when_a_pem_is_configured(
    client: Client, oidc: OIDCProvider, settings: Settings
) -> None:
    settings.OIDC_RP_IDP_SIGN_KEY = oidc.current_key.public_pem()
    settings.OIDC_OP_JWKS_ENDPOINT = "http://127.0.0.1:9/jwks"  # nothing listens there
    assert me(client, oidc.mint_access_token()).status_code == 200
    assert oidc.jwks_requests == 0


def test_token_is_rejected_when_a_pem_is_configured_and_another_key_signed_it(
    client: Client, oidc: OIDCProvider, settings: Settings
) -> None:
    settings.OIDC_RP_IDP_SIGN_KEY = SigningKey.generate().public_pem()
    response = me(client, oidc.mint_access_token())
    assert response.status_code == 401
    assert response.json() == INVALID_BODY


def test_failures_are_throttled_when_they_exceed_the_limit(
    client: Client, oidc: OIDCProvider, settings: Settings
) -> None:
    settings.VERA_AUTH_FAILURE__LIMIT = 2
    assert me(client, "garbage").status_code == 401
    assert me(client, "garbage").status_code == 401
    assert me(client, "garbage").status_code == 429


def test_a_valid_token_passes_when_its_address_is_over_the_failure_limit(
    client: Client, oidc: OIDCProvider, settings: Settings
) -> None:
    settings.VERA_AUTH_FAILURE__LIMIT = 2
    for _ in range(3):
        me(client, "garbage")  # someone else behind the same address
    assert me(client, oidc.mint_access_token()).status_code == 200


def test_bearer_jwt_is_not_accepted_when_oidc_issuer_is_not_configured(
    client: Client, oidc: OIDCProvider, settings: Settings
) -> None:
    settings.VERA_OIDC__ISSUER = ""
    response = me(client, oidc.mint_access_token())
    assert response.status_code == 401
    assert response.json() == {"detail": "Authentication credentials were not provided."}
    assert not get_user_model().objects.exists()


# --- roles from the provider's groups ----------------------------------------------------


def test_provider_groups_give_roles_at_sign_in_and_take_them_back_when_the_group_goes(
    client: Client, oidc: OIDCProvider, organisation: Scope, settings: Settings
) -> None:
    platform = scope_create(kind=ScopeKind.WORKSPACE, name="Platform", parent_id=organisation.pk)
    data = scope_create(kind=ScopeKind.WORKSPACE, name="Data", parent_id=organisation.pk)
    settings.VERA_OIDC__ORGANISATION = ""  # no default role reaching every workspace
    settings.VERA_OIDC__GROUP_ROLES = (
        f"platform-admins={platform.group_id}:admin, platform={platform.group_id}:contributor,"
        f"data-team={data.group_id}:reviewer"
    )
    oidc.user = {**oidc.user, "groups": ["platform", "platform-admins", "other"]}
    sso_sign_in(client, oidc)
    roles = principal_for_user(alice().pk, label="t").roles
    assert roles[platform.group_id] == Role.ADMIN  # the highest of its groups' roles
    assert data.group_id not in roles
    # An admin gives her a role on Data by hand: the provider never takes that one.
    Membership.objects.create(user=alice(), scope=data, role=Role.VIEWER)

    oidc.user = {**oidc.user, "groups": ["platform"]}
    client.logout()
    sso_sign_in(client, oidc)
    roles = principal_for_user(alice().pk, label="t").roles
    assert roles[platform.group_id] == Role.CONTRIBUTOR
    oidc.user = {**oidc.user, "groups": ["data-team"]}
    client.logout()
    sso_sign_in(client, oidc)
    roles = principal_for_user(alice().pk, label="t").roles
    assert platform.group_id not in roles  # the group went: so did the role
    assert roles[data.group_id] == Role.VIEWER  # granted by hand, left alone
    # Without a groups claim at all, nothing changes.
    oidc.user = {k: v for k, v in oidc.user.items() if k != "groups"}
    client.logout()
    sso_sign_in(client, oidc)
    assert principal_for_user(alice().pk, label="t").roles[data.group_id] == Role.VIEWER
    with rls.tenant_context(Principal(label="t", roles={platform.group_id: Role.OWNER})):
        grants = list(
            AuditEvent.objects.filter(group_id=platform.group_id)
            .order_by("pk")
            .values_list("action", "data")
        )
    assert [action for action, _ in grants] == ["role.grant", "role.grant", "role.revoke"]
    assert all(data["via"] == "oidc" for _, data in grants)


def test_a_bad_group_mapping_stops_the_start() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**os.environ, "VERA_OIDC__GROUP_ROLES": "admins=w:nope:admin"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "VERA_OIDC__GROUP_ROLES" in result.stderr
