"""Use cases that create scopes and grant roles."""

from __future__ import annotations

from django.db import transaction

from tenants.domain.scopes import Role, ScopeKind, check_parent, new_group_id
from tenants.models import Membership, Scope


def scope_create(*, kind: ScopeKind, name: str, parent_id: int | None = None) -> Scope:
    """Create a scope with a fresh opaque group id under the right kind of parent."""
    parent = Scope.objects.get(pk=parent_id) if parent_id is not None else None
    check_parent(kind, ScopeKind(parent.kind) if parent else None)
    return Scope.objects.create(
        kind=kind.value, name=name, parent=parent, group_id=new_group_id(kind)
    )


@transaction.atomic
def membership_grant(*, user_id: int, scope_id: int, role: Role) -> Membership:
    """Give a user a role on a scope, replacing any role they had there."""
    membership, _ = Membership.objects.update_or_create(
        user_id=user_id, scope_id=scope_id, defaults={"role": int(role)}
    )
    return membership
