"""API keys through the REST API: issue, use, rotate, revoke; failures look alike."""

from __future__ import annotations

import datetime as dt
import logging
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import ApiKey
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
INVALID = {"detail": "Invalid, expired or revoked credentials."}


@pytest.fixture(autouse=True)
def _fresh_failure_counters() -> None:
    cache.clear()  # the cache has its own Redis database


def _bearer(key: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def _issue(client: Client, tenant: Tenant, **overrides: object) -> dict[str, object]:
    client.force_login(tenant.admin)
    body = {
        "name": "ci",
        "scope": tenant.workspace.group_id,
        "owner": tenant.viewer.get_username(),
        "role_ceiling": "viewer",
        **overrides,
    }
    response = client.post("/api/v1/keys", body, content_type="application/json")
    client.logout()
    return {**response.json(), "http_status": response.status_code}


def test_admin_issues_a_key_that_authenticates_as_its_owner(
    client: Client, tenant_a: Tenant
) -> None:
    issued = _issue(client, tenant_a)
    assert issued["http_status"] == 201
    key = str(issued["key"])
    assert key.startswith("vera_")
    assert len(key) == 5 + 8 + 1 + 43
    response = client.get("/api/v1/me", **_bearer(key))
    assert response.status_code == 200
    me = response.json()
    assert me["user_id"] == tenant_a.viewer.pk
    assert me["roles"] == {tenant_a.workspace.group_id: "viewer"}


def test_key_reach_is_capped_by_its_ceiling(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a, owner=tenant_a.reviewer.get_username(), role_ceiling="viewer")
    me = client.get("/api/v1/me", **_bearer(str(issued["key"]))).json()
    assert me["roles"][tenant_a.workspace.group_id] == "viewer"


def test_issue_is_refused_when_the_ceiling_exceeds_the_owners_role(
    client: Client, tenant_a: Tenant
) -> None:
    issued = _issue(client, tenant_a, role_ceiling="admin")
    assert issued["http_status"] == 403
    assert "beyond" in str(issued["detail"])


def test_issue_is_refused_when_the_caller_is_not_admin(client: Client, tenant_a: Tenant) -> None:
    client.force_login(tenant_a.reviewer)
    response = client.post(
        "/api/v1/keys",
        {"name": "x", "scope": tenant_a.workspace.group_id, "owner": "acme-viewer",
         "role_ceiling": "viewer"},
        content_type="application/json",
    )  # fmt: skip
    assert response.status_code == 403


def test_issue_into_another_tenants_scope_is_refused(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    issued = _issue(client, tenant_a, scope=tenant_b.workspace.group_id)
    assert issued["http_status"] == 403


@pytest.mark.parametrize(
    ("field", "value"),
    [("role_ceiling", "god"), ("scope", ""), ("name", ""), ("expires_at", "yesterday")],
)
def test_issue_with_bad_input_is_a_400_with_the_field(
    client: Client, tenant_a: Tenant, field: str, value: str
) -> None:
    issued = _issue(client, tenant_a, **{field: value})
    assert issued["http_status"] == 400
    assert field in issued


def test_issue_with_an_expiry_in_the_past_is_a_400(client: Client, tenant_a: Tenant) -> None:
    past = (timezone.now() - dt.timedelta(days=1)).isoformat()
    assert _issue(client, tenant_a, expires_at=past)["http_status"] == 400


def test_the_secret_is_shown_once_and_never_listed(client: Client, tenant_a: Tenant) -> None:
    key = str(_issue(client, tenant_a)["key"])
    client.force_login(tenant_a.admin)
    listing = client.get("/api/v1/keys")
    assert listing.status_code == 200
    assert key.split("_", 2)[2] not in listing.content.decode()
    assert "secret_hash" not in listing.content.decode()
    assert listing.json()["results"][0]["key_prefix"] == f"vera_{key.split('_')[1]}_…"


def test_a_key_says_its_scope_as_group_id_and_still_as_scope(
    client: Client, tenant_a: Tenant
) -> None:
    group = tenant_a.workspace.group_id
    issued = _issue(client, tenant_a)
    client.force_login(tenant_a.admin)
    listed = {key["id"]: key for key in client.get("/api/v1/keys").json()["results"]}
    for shown in (issued, listed[issued["id"]]):
        assert (shown["group_id"], shown["scope"]) == (group, group)


def test_revoked_key_fails_on_the_very_next_request(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a)
    key = str(issued["key"])
    assert client.get("/api/v1/me", **_bearer(key)).status_code == 200
    client.force_login(tenant_a.admin)
    assert client.post(f"/api/v1/keys/{issued['id']}/revoke").status_code == 200
    client.logout()
    response = client.get("/api/v1/me", **_bearer(key))
    assert response.status_code == 401
    assert response.json() == INVALID


def test_rotation_replaces_the_secret(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a)
    client.force_login(tenant_a.admin)
    rotated = client.post(f"/api/v1/keys/{issued['id']}/rotate").json()
    client.logout()
    assert client.get("/api/v1/me", **_bearer(str(issued["key"]))).status_code == 401
    assert client.get("/api/v1/me", **_bearer(rotated["key"])).status_code == 200


def test_owner_may_revoke_their_own_key(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a)
    response = client.post(f"/api/v1/keys/{issued['id']}/revoke", **_bearer(str(issued["key"])))
    assert response.status_code == 200
    assert response.json()["status"] == "revoked"


def _admin_and_viewer_keys(client: Client, tenant: Tenant) -> tuple[dict, dict]:
    """Two keys of the workspace admin: one with the admin ceiling, one with viewer."""
    owner = tenant.admin.get_username()
    admin_key = _issue(client, tenant, owner=owner, role_ceiling="admin", name="deploy")
    viewer_key = _issue(client, tenant, owner=owner, role_ceiling="viewer", name="dashboard")
    assert admin_key["http_status"] == viewer_key["http_status"] == 201
    return admin_key, viewer_key


@pytest.mark.parametrize("action", ["rotate", "revoke"])
def test_a_viewer_key_cannot_act_on_its_owners_admin_key_when_the_ceiling_is_above_it(
    client: Client, tenant_a: Tenant, action: str
) -> None:
    admin_key, viewer_key = _admin_and_viewer_keys(client, tenant_a)
    response = client.post(
        f"/api/v1/keys/{admin_key['id']}/{action}", **_bearer(str(viewer_key["key"]))
    )
    assert response.status_code == 403
    assert "ceiling (admin) is above this credential's role (viewer)" in response.json()["detail"]
    assert "key" not in response.json()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        row = ApiKey.objects.get(pk=admin_key["id"])
        assert row.revoked_at is None
        assert not ApiKey.objects.filter(rotated_from=row).exists()
    assert client.get("/api/v1/me", **_bearer(str(admin_key["key"]))).status_code == 200


def test_a_key_may_rotate_itself_when_its_ceiling_is_within_its_role(
    client: Client, tenant_a: Tenant
) -> None:
    _, viewer_key = _admin_and_viewer_keys(client, tenant_a)
    response = client.post(
        f"/api/v1/keys/{viewer_key['id']}/rotate", **_bearer(str(viewer_key["key"]))
    )
    assert response.status_code == 201
    assert client.get("/api/v1/me", **_bearer(response.json()["key"])).status_code == 200


def test_an_admins_viewer_key_cannot_revoke_another_members_key_when_it_lacks_admin(
    client: Client, tenant_a: Tenant
) -> None:
    reviewer_key = _issue(
        client, tenant_a, owner=tenant_a.reviewer.get_username(), role_ceiling="reviewer"
    )
    _, viewer_key = _admin_and_viewer_keys(client, tenant_a)
    # The admin's viewer key acts with the viewer role: another member's key is out of
    # its sight (404, as for a key that does not exist) and out of reach.
    response = client.post(
        f"/api/v1/keys/{reviewer_key['id']}/revoke", **_bearer(str(viewer_key["key"]))
    )
    assert response.status_code == 404
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert ApiKey.objects.get(pk=reviewer_key["id"]).revoked_at is None


def test_a_key_lists_only_its_owners_keys_within_its_reach(
    client: Client, tenant_a: Tenant
) -> None:
    owner = tenant_a.admin.get_username()
    org_key = _issue(
        client, tenant_a, owner=owner, role_ceiling="viewer", scope=tenant_a.org.group_id
    )
    # The admin is a workspace admin only: an organisation key cannot be issued to them.
    assert org_key["http_status"] == 403
    _, viewer_key = _admin_and_viewer_keys(client, tenant_a)
    listed = client.get("/api/v1/keys", **_bearer(str(viewer_key["key"]))).json()["results"]
    assert {row["name"] for row in listed} == {"deploy", "dashboard"}


def test_a_deactivated_members_key_is_refused_when_it_was_valid_before(
    client: Client, tenant_a: Tenant
) -> None:
    issued = _issue(client, tenant_a)
    assert client.get("/api/v1/me", **_bearer(str(issued["key"]))).status_code == 200
    tenant_a.viewer.is_active = False
    tenant_a.viewer.save(update_fields=["is_active"])
    response = client.get("/api/v1/me", **_bearer(str(issued["key"])))
    assert response.status_code == 401
    assert response.json() == INVALID


def test_another_tenants_admin_cannot_see_or_revoke_a_key(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    issued = _issue(client, tenant_a)
    client.force_login(tenant_b.admin)
    assert client.get("/api/v1/keys").json()["results"] == []
    assert client.post(f"/api/v1/keys/{issued['id']}/revoke").status_code == 404
    assert client.post(f"/api/v1/keys/{issued['id']}/rotate").status_code == 404


def test_expired_key_is_refused(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        ApiKey.objects.filter(pk=issued["id"]).update(
            expires_at=timezone.now() - dt.timedelta(seconds=1)
        )
    response = client.get("/api/v1/me", **_bearer(str(issued["key"])))
    assert (response.status_code, response.json()) == (401, INVALID)


def test_key_dies_when_its_owner_leaves_the_workspace(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a)
    tenant_a.viewer.memberships.all().delete()
    assert client.get("/api/v1/me", **_bearer(str(issued["key"]))).status_code == 401


def test_failures_are_indistinguishable(client: Client, tenant_a: Tenant) -> None:
    key = str(_issue(client, tenant_a)["key"])
    _, prefix, secret = key.split("_", 2)
    wrong_secret = f"vera_{prefix}_{'A' * 43}"
    unknown_prefix = f"vera_{'a' * 8}_{secret}"
    responses, queries = {}, {}
    for name, token in (("wrong", wrong_secret), ("unknown", unknown_prefix)):
        with CaptureQueriesContext(connection) as captured:
            responses[name] = client.get("/api/v1/me", **_bearer(token))
        queries[name] = [
            re.sub(r'"s\d+_x\d+"', "SAVEPOINT", q["sql"]).replace(prefix, "a" * 8)
            for q in captured.captured_queries
        ]
    assert queries["wrong"] == queries["unknown"]  # the same statements on both paths
    malformed = client.get("/api/v1/me", **_bearer("vera_nonsense"))
    bodies = {
        (r.status_code, r.content, r["WWW-Authenticate"]) for r in (*responses.values(), malformed)
    }
    assert bodies == {(401, b'{"detail":"Invalid, expired or revoked credentials."}',
                       'Bearer realm="vera"')}  # fmt: skip


def test_repeated_failures_from_one_address_are_throttled_when_over_the_limit(
    client: Client, tenant_a: Tenant, settings
) -> None:
    settings.VERA_AUTH_FAILURE__LIMIT = 3
    codes = [
        client.get("/api/v1/me", **_bearer(f"vera_{c * 8}_{'B' * 43}")).status_code
        for c in "bcde"  # four prefixes: only the address counter can be over
    ]
    assert codes == [401, 401, 401, 429]


def test_a_valid_key_passes_when_its_address_is_over_the_failure_limit(
    client: Client, tenant_a: Tenant, settings
) -> None:
    settings.VERA_AUTH_FAILURE__LIMIT = 3
    key = str(_issue(client, tenant_a)["key"])
    for _ in range(5):  # a neighbour behind the same NAT guesses keys
        client.get("/api/v1/me", **_bearer(f"vera_{'b' * 8}_{'B' * 43}"))
    assert client.get("/api/v1/me", **_bearer(f"vera_{'b' * 8}_{'B' * 43}")).status_code == 429
    response = client.get("/api/v1/me", **_bearer(key))
    assert response.status_code == 200
    assert response.json()["user_id"] == tenant_a.viewer.pk


def test_failures_on_one_prefix_are_throttled_from_any_address_when_over_the_limit(
    client: Client, tenant_a: Tenant, settings
) -> None:
    settings.VERA_AUTH_FAILURE__LIMIT = 3
    key = str(_issue(client, tenant_a)["key"])
    _, prefix, _ = key.split("_", 2)
    guess = f"vera_{prefix}_{'G' * 43}"
    codes = [
        client.get("/api/v1/me", REMOTE_ADDR=f"10.0.0.{n}", **_bearer(guess)).status_code
        for n in range(1, 5)
    ]
    assert codes == [401, 401, 401, 429]
    throttled = client.get("/api/v1/me", REMOTE_ADDR="10.0.0.9", **_bearer(guess))
    assert int(throttled["Retry-After"]) > 0
    # The key's owner is not locked out by the guesses made against its prefix.
    assert client.get("/api/v1/me", REMOTE_ADDR="10.0.0.1", **_bearer(key)).status_code == 200


def test_the_secret_is_not_stored_nor_logged(
    client: Client, tenant_a: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = str(_issue(client, tenant_a)["key"])
    secret = key.split("_", 2)[2]
    client.get("/api/v1/me", **_bearer(key))
    assert secret not in caplog.text
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)), connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - names from the catalogue
            assert secret not in repr(cursor.fetchall()), table


def test_audit_trail_records_issue_and_revoke(client: Client, tenant_a: Tenant) -> None:
    issued = _issue(client, tenant_a)
    client.force_login(tenant_a.admin)
    client.post(f"/api/v1/keys/{issued['id']}/revoke")
    events = client.get("/api/v1/audit-events").json()["results"]
    actions = [event["action"] for event in events if event["action"].startswith("api_key.")]
    assert actions == ["api_key.revoke", "api_key.issue"]
    client.force_login(tenant_a.viewer)  # not an admin of the workspace
    viewer_actions = {e["action"] for e in client.get("/api/v1/audit-events").json()["results"]}
    assert "api_key.issue" not in viewer_actions


def test_roles_ordering_is_total() -> None:
    assert sorted(Role) == [Role.VIEWER, Role.CONTRIBUTOR, Role.REVIEWER, Role.ADMIN, Role.OWNER]


def test_a_key_authenticated_request_costs_few_round_trips(
    client: Client, tenant_a: Tenant
) -> None:
    key = str(_issue(client, tenant_a)["key"])
    client.logout()
    assert client.get("/api/v1/me", **_bearer(key)).status_code == 200  # last_used_at set
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/api/v1/me", **_bearer(key)).status_code == 200
    statements = [q["sql"].split()[0].upper() for q in captured.captured_queries]
    # BEGIN; the request's context (the old setting read and the new one set at once); the
    # key's row (its prefix admitted, read, withdrawn); the owner's memberships; one
    # subtree query for them and the key's scope; the caller's groups; COMMIT. Nine in
    # production: no savepoints, no restoring a setting the commit ends anyway. Here the
    # test's transaction encloses the request: a savepoint pair and one restore instead.
    assert "SAVEPOINT" not in statements[1:-1]
    assert len(captured.captured_queries) <= 10, statements
