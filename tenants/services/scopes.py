"""Use cases that create scopes and grant roles."""

from __future__ import annotations

from django.db import transaction

from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind, check_parent, new_group_id
from tenants.models import Membership, Scope
from tenants.services.audit import audit_record


class PermissionDenied(Exception):
    """The principal's role does not allow the action."""


def scope_create(*, kind: ScopeKind, name: str, parent_id: int | None = None) -> Scope:
    """Create a scope with a fresh opaque group id under the right kind of parent."""
    parent = Scope.objects.get(pk=parent_id) if parent_id is not None else None
    check_parent(kind, ScopeKind(parent.kind) if parent else None)
    return Scope.objects.create(
        kind=kind.value, name=name, parent=parent, group_id=new_group_id(kind)
    )


@transaction.atomic
def personal_scope_ensure(*, user_id: int, username: str) -> Scope:
    """The user's personal (`u:`) scope, created with an owner membership on first use."""
    membership = (
        Membership.objects.select_related("scope")
        .filter(user_id=user_id, scope__kind=ScopeKind.PERSONAL)
        .first()
    )
    if membership is not None:
        return membership.scope
    scope = scope_create(kind=ScopeKind.PERSONAL, name=f"{username} (personal)")
    Membership.objects.create(user_id=user_id, scope=scope, role=Role.OWNER)
    return scope


@transaction.atomic
def membership_grant(
    *, user_id: int, scope_id: int, role: Role, actor: Principal | None = None
) -> Membership:
    """Give a user a role on a scope (replacing any role there); audited.

    With an `actor`, the actor must be admin on the scope and cannot grant above its
    own role; without one it is a system action (provisioning, seeding).
    """
    scope = Scope.objects.get(pk=scope_id)
    if actor is not None:
        held = actor.role_in(scope.group_id)
        if held is None or held < Role.ADMIN or role > held:
            raise PermissionDenied("granting this role needs admin on the scope and at least it")
    membership, created = Membership.objects.update_or_create(
        user_id=user_id, scope_id=scope_id, defaults={"role": int(role)}
    )
    system = Principal(label="system", roles={scope.group_id: Role.OWNER})
    with rls.tenant_context(actor or system) as who:
        audit_record(
            actor=who,
            group_id=scope.group_id,
            action="role.grant",
            target=("user", user_id),
            data={"role": role.name.lower(), "new": created},
        )
    return membership
