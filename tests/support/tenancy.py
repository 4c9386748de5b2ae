"""Two tenants, built through the real services, for isolation tests."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

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


def markdown_source(tenant: Tenant, root: object, *, tier: int, name: str = "docs") -> int:
    """A Markdown source over `root` created by the tenant's admin; returns its id."""
    from curation.services.sources import source_create

    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=tenant.workspace.group_id, name=name, kind="markdown",
            config={"root": str(root)}, trust_tier=tier,
        )  # fmt: skip
    return source.pk
