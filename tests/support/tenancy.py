"""Two tenants, built through the real services, for isolation tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.selectors import principal_for_user
from tenants.services.api_keys import IssuedKey, api_key_issue
from tenants.services.scopes import membership_grant, scope_create

PASSWORD = "a-long-test-password"


@dataclass
class Tenant:
    """An organisation with one workspace, its admin, a reviewer and a viewer."""

    org: Scope
    workspace: Scope
    admin: AbstractBaseUser
    reviewer: AbstractBaseUser
    viewer: AbstractBaseUser

    def principal(self, user: AbstractBaseUser) -> Principal:
        return principal_for_user(user.pk, label=f"user:{user.get_username()}")

    def issue_key(self, *, owner: AbstractBaseUser, role: Role = Role.VIEWER) -> IssuedKey:
        actor = self.principal(self.admin)
        with rls.tenant_context(actor):
            return api_key_issue(
                actor=actor,
                owner_id=owner.pk,
                scope_id=self.workspace.pk,
                name=f"{owner.get_username()}-key",
                role_ceiling=role,
            )


def admin_site_login(client: Client, user: AbstractBaseUser) -> None:
    """Sign `client` in to the Django admin as `user`, made staff and superuser: the admin's
    own permission checks pass, while RLS and the services' role checks still apply."""
    user.is_staff = user.is_superuser = True  # type: ignore[attr-defined]
    user.save()
    client.force_login(user)


def make_tenant(name: str) -> Tenant:
    users = get_user_model().objects
    org = scope_create(kind=ScopeKind.ORGANISATION, name=f"{name} Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name=f"{name} WS", parent_id=org.pk)
    people = {}
    for role in (Role.ADMIN, Role.REVIEWER, Role.VIEWER):
        username = f"{name.lower()}-{role.name.lower()}"
        user = users.create_user(
            username=username, email=f"{username}@example.org", password=PASSWORD
        )
        membership_grant(user_id=user.pk, scope_id=workspace.pk, role=role)
        people[role] = user
    return Tenant(org, workspace, people[Role.ADMIN], people[Role.REVIEWER], people[Role.VIEWER])


def create_source(
    actor: Principal, *, group_id: str, kind: str, name: str, config: dict[str, Any], tier: int
) -> int:
    """A source of `kind` created by `actor` in the scope `group_id` through the real
    `source_create` (its checks included); returns its id."""
    from curation.services.sources import source_create

    with rls.tenant_context(actor):
        source = source_create(
            actor=actor, group_id=group_id, name=name, kind=kind, config=config, trust_tier=tier
        )
    return source.pk


def markdown_source(tenant: Tenant, root: object, *, tier: int, name: str = "docs") -> int:
    """A Markdown source over `root` created by the tenant's admin; returns its id."""
    return create_source(
        tenant.principal(tenant.admin), group_id=tenant.workspace.group_id, kind="markdown",
        name=name, config={"root": str(root)}, tier=tier,
    )  # fmt: skip


def cmdb_source(
    tenant: Tenant, export: Path, *, tier: int = 1, name: str = "cmdb", **config: object
) -> int:
    """A CMDB source over the CSV `export` created by the tenant's admin, with `config`
    (a `mapping`, validity columns ...) beside the path; returns its id."""
    return create_source(
        tenant.principal(tenant.admin), group_id=tenant.workspace.group_id, kind="cmdb",
        name=name, config={"path": str(export), **config}, tier=tier,
    )  # fmt: skip
