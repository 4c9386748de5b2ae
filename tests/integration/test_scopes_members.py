"""An organisation runs itself through the REST API: owners and admins open, rename and
archive workspaces, workspace admins open projects, admins add members and change or
revoke roles, and every refusal says why. Real Postgres (RLS as the app role)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import ApiKey, AuditEvent, Membership
from tenants.services.scopes import membership_grant
from tests.support.tenancy import PASSWORD, Tenant

pytestmark = pytest.mark.django_db


def _owner(tenant: Tenant, name: str = "owner"):
    user = get_user_model().objects.create_user(
        username=f"{tenant.org.name.split()[0].lower()}-{name}",
        email=f"{name}@{tenant.org.name.split()[0].lower()}.example.org",
        password=PASSWORD,
    )
    membership_grant(user_id=user.pk, scope_id=tenant.org.pk, role=Role.OWNER)
    return user


def _as(client: Client, user) -> Client:
    client.force_login(user)
    return client


def _post(client: Client, url: str, **body: object):
    return client.post(url, body, content_type="application/json")


def _patch(client: Client, url: str, **body: object):
    return client.patch(url, body, content_type="application/json")


def _open(client: Client, kind: str, name: str, parent: str):
    return _post(client, "/api/v1/scopes", kind=kind, name=name, parent=parent)


def test_owners_open_workspaces_and_workspace_admins_open_projects(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    owner = _owner(tenant_a)
    opened = _open(_as(client, owner), "workspace", "  Platform   team ", tenant_a.org.group_id)
    assert opened.status_code == 201, opened.content
    workspace = opened.json()
    assert (workspace["kind"], workspace["name"], workspace["role"]) == (
        "workspace", "Platform team", "owner",
    )  # fmt: skip
    assert workspace["group_id"].startswith("w:")
    assert workspace["parent"] == tenant_a.org.group_id
    # The new workspace is reachable at once, and listed.
    listed = {s["group_id"]: s for s in client.get("/api/v1/scopes").json()}
    assert listed[workspace["group_id"]]["role"] == "owner"
    # The same name twice under one organisation: refused, whatever its case.
    again = _open(client, "workspace", "platform TEAM", tenant_a.org.group_id)
    assert again.status_code == 400
    assert "already has a scope named" in again.json()["name"]

    # A workspace admin opens a project in their workspace, not a workspace beside it.
    admin = _as(client, tenant_a.admin)
    project = _open(admin, "project", "Migration", tenant_a.workspace.group_id)
    assert project.status_code == 201, project.content
    assert project.json()["group_id"].startswith("p:")
    beside = _open(admin, "workspace", "Shadow", tenant_a.org.group_id)
    assert beside.status_code == 404  # the organisation is not theirs to see
    # A viewer cannot open a project; an admin of A cannot act in B (not even see it).
    viewer = _open(_as(client, tenant_a.viewer), "project", "Mine", tenant_a.workspace.group_id)
    assert viewer.status_code == 403
    assert "only an owner or admin of the workspace" in viewer.json()["detail"]
    other = _open(_as(client, tenant_a.admin), "project", "Theirs", tenant_b.workspace.group_id)
    assert other.status_code == 404
    # A project under a project, an organisation, nonsense: 400 with the reason.
    nested = _open(admin, "project", "Deeper", project.json()["group_id"])
    assert nested.status_code in (400, 403)
    assert _open(admin, "organisation", "Mine", tenant_a.org.group_id).status_code == 400
    assert _post(admin, "/api/v1/scopes", kind="project").status_code == 400
    assert _open(admin, "project", " ", tenant_a.workspace.group_id).status_code == 400

    with rls.tenant_context(tenant_a.principal(owner)):
        assert AuditEvent.objects.filter(
            action="scope.open", group_id=tenant_a.org.group_id
        ).count() == 1  # fmt: skip


def test_renaming_and_archiving_belong_to_the_scope_above_and_archiving_freezes_keys(
    client: Client, tenant_a: Tenant
) -> None:
    owner = _owner(tenant_a)
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}"
    # The workspace's own admin neither renames nor archives it: its organisation does.
    refused = _patch(_as(client, tenant_a.admin), url, name="Renamed")
    assert refused.status_code == 403
    renamed = _patch(_as(client, owner), url, name="Renamed")
    assert (renamed.status_code, renamed.json()["name"]) == (200, "Renamed")
    assert _patch(client, url).json()["name"] == "Renamed"  # nothing to change

    key = tenant_a.issue_key(owner=tenant_a.viewer)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {key.plaintext}"}
    assert Client().get("/api/v1/me", **bearer).status_code == 200
    archived = _patch(_as(client, owner), url, archived=True, reason="team disbanded")
    assert archived.status_code == 200
    assert archived.json()["archived_at"]
    # Its keys stop at once; its members read only (an admin's role counts as a viewer's).
    assert Client().get("/api/v1/me", **bearer).status_code == 401
    me = _as(Client(), tenant_a.admin).get("/api/v1/me").json()
    assert me["roles"][tenant_a.workspace.group_id] == "viewer"
    blocked = _open(_as(client, owner), "project", "Late", tenant_a.workspace.group_id)
    assert blocked.status_code == 403
    # Restored by the organisation: keys and roles come back.
    assert _patch(client, url, archived=False).status_code == 200
    assert Client().get("/api/v1/me", **bearer).status_code == 200
    with rls.tenant_context(tenant_a.principal(owner)):
        actions = set(
            AuditEvent.objects.filter(group_id=tenant_a.workspace.group_id).values_list(
                "action", flat=True
            )
        )
    assert {"scope.rename", "scope.archive", "scope.restore"} <= actions


def test_members_are_added_changed_and_removed_within_the_rules(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    owner = _owner(tenant_a)
    members = f"/api/v1/scopes/{tenant_a.workspace.group_id}/members"
    colleague = get_user_model().objects.create_user(
        username="colleague", email="colleague@example.org", password=PASSWORD
    )
    admin = _as(client, tenant_a.admin)
    # Listing: admins only.
    assert _as(Client(), tenant_a.viewer).get(members).status_code == 403
    listed = admin.get(members).json()
    assert {m["username"]: m["role"] for m in listed}["acme-viewer"] == "viewer"

    # Adding an existing user by email; never above the adder's own role.
    above = _post(admin, members, user="colleague@example.org", role="owner")
    assert above.status_code == 403
    assert "nobody grants above their own role" in above.json()["detail"]
    added = _post(admin, members, user="COLLEAGUE@example.org", role="contributor")
    assert added.status_code == 201, added.content
    assert (added.json()["username"], added.json()["role"]) == ("colleague", "contributor")
    assert _post(admin, members, user="nobody@example.org", role="viewer").status_code == 404
    assert _post(admin, members, role="viewer").status_code == 400
    assert _post(admin, members, user="colleague", role="emperor").status_code == 400

    # A role change takes effect on the member's next request.
    theirs = _as(Client(), colleague)
    assert theirs.get("/api/v1/me").json()["roles"][tenant_a.workspace.group_id] == "contributor"
    member = f"{members}/{colleague.pk}"
    assert _patch(admin, member, role="reviewer").status_code == 200
    assert theirs.get("/api/v1/me").json()["roles"][tenant_a.workspace.group_id] == "reviewer"

    # An admin cannot change or remove an owner; an admin of A cannot act in B.
    membership_grant(user_id=owner.pk, scope_id=tenant_a.workspace.pk, role=Role.OWNER)
    assert _patch(admin, f"{members}/{owner.pk}", role="viewer").status_code == 403
    assert admin.delete(f"{members}/{owner.pk}").status_code == 403
    other = f"/api/v1/scopes/{tenant_b.workspace.group_id}/members/{tenant_b.viewer.pk}"
    assert _patch(admin, other, role="admin").status_code == 404
    assert admin.delete(other).status_code == 404
    assert _patch(admin, f"{members}/999999", role="viewer").status_code == 404

    # Removing a member revokes their keys in the scope at once.
    key = tenant_a.issue_key(owner=colleague, role=Role.VIEWER)
    assert admin.delete(member).status_code == 204
    assert (
        Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {key.plaintext}").status_code == 401
    )
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert ApiKey.objects.get(pk=key.key.pk).revoked_at is not None
    assert tenant_a.workspace.group_id not in theirs.get("/api/v1/me").json()["roles"]


def test_the_last_owner_stays(client: Client, tenant_a: Tenant) -> None:
    owner = _owner(tenant_a)
    members = f"/api/v1/scopes/{tenant_a.org.group_id}/members"
    mine = f"{members}/{owner.pk}"
    owning = _as(client, owner)
    demoted = _patch(owning, mine, role="admin")
    assert demoted.status_code == 403
    assert "last owner" in demoted.json()["detail"]
    left = owning.delete(mine)
    assert left.status_code == 403
    assert "last owner cannot leave" in left.json()["detail"]
    # With a second owner, the first may leave.
    get_user_model().objects.create_user(username="second", password=PASSWORD)
    assert _post(owning, members, user="second", role="owner").status_code == 201
    assert owning.delete(mine).status_code == 204
    assert not Membership.objects.filter(user=owner, scope=tenant_a.org).exists()


def test_deactivation_is_the_organisations_and_stops_keys_and_sessions(
    client: Client, tenant_a: Tenant, tenant_b: Tenant
) -> None:
    owner = _owner(tenant_a)
    org = tenant_a.org.group_id
    key = tenant_a.issue_key(owner=tenant_a.viewer)
    session = _as(Client(), tenant_a.viewer)
    assert session.get("/api/v1/me").status_code == 200
    url = f"/api/v1/scopes/{org}/members/{tenant_a.viewer.pk}/deactivate"
    # Not from a workspace, not by its admin, not someone of another organisation.
    workspace = f"/api/v1/scopes/{tenant_a.workspace.group_id}/members/{tenant_a.viewer.pk}"
    assert _post(_as(client, tenant_a.admin), f"{workspace}/deactivate").status_code == 403
    assert _post(_as(client, tenant_a.admin), url).status_code == 404  # the org is not theirs
    outsider = f"/api/v1/scopes/{org}/members/{tenant_b.viewer.pk}/deactivate"
    assert _post(_as(client, owner), outsider).status_code == 404
    assert _post(client, f"/api/v1/scopes/{org}/members/{owner.pk}/deactivate").status_code == 403

    done = _post(client, url)
    assert done.status_code == 200, done.content
    assert done.json() == {"user_id": tenant_a.viewer.pk, "active": False, "keys_revoked": 1}
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {key.plaintext}"}
    assert Client().get("/api/v1/me", **bearer).status_code == 401
    assert session.get("/api/v1/me").status_code in (401, 403)  # the session is gone too
    with rls.tenant_context(tenant_a.principal(owner)):
        assert AuditEvent.objects.filter(action="user.deactivate", group_id=org).exists()


def test_a_key_acts_with_its_ceiling_never_its_owners_full_role(
    client: Client, tenant_a: Tenant
) -> None:
    low = Client(HTTP_AUTHORIZATION=f"Bearer {tenant_a.issue_key(owner=tenant_a.admin).plaintext}")
    ws = tenant_a.workspace.group_id
    body = {"kind": "project", "name": "From a key", "parent": ws}
    assert low.post("/api/v1/scopes", body, content_type="application/json").status_code == 403
    assert low.get(f"/api/v1/scopes/{ws}/members").status_code == 403
    add = {"user": tenant_a.reviewer.username, "role": "viewer"}
    assert (
        low.post(f"/api/v1/scopes/{ws}/members", add, content_type="application/json").status_code
        == 403
    )
    invite = {"email": "x@example.org", "role": "viewer"}
    url = f"/api/v1/scopes/{ws}/invitations"
    assert low.post(url, invite, content_type="application/json").status_code == 403
    # Leaving through a key is not leaving: a key never removes its owner.
    assert low.delete(f"/api/v1/scopes/{ws}/members/{tenant_a.admin.pk}").status_code == 403
    assert Membership.objects.filter(user=tenant_a.admin, scope=tenant_a.workspace).exists()
