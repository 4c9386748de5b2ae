"""Use cases on scopes and members: open, rename and archive scopes; add members, change
and revoke their roles. Every one is checked by `tenants.domain.members` and audited in
the scope it changes."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from common.errors import NotFound, PermissionDenied
from tenants import rls
from tenants.domain import members as rules
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind, check_parent, new_group_id
from tenants.models import ApiKey, Membership, Scope
from tenants.selectors import users_with_verified_email
from tenants.services.api_keys import revoke_past_issuers
from tenants.services.audit import audit_record


def locked_for[M: Model](
    actor: Principal, rows: QuerySet[M], pk: int, *, role: Role, refusal: str
) -> M:
    """The row `pk` of `rows`, locked for an update the actor's `role` in its group allows.

    The role is checked on the row as the actor reads it, before the lock: a row the
    actor may read but not write (an organisation's claim read from a workspace, through
    published reads) is refused with `refusal`, never a DoesNotExist from the lock's
    narrower row-level security. A row the actor cannot read at all is DoesNotExist.
    """
    row = rows.get(pk=pk)
    group_id = getattr(row, "group_id")  # noqa: B009 - every tenant table has one (RLS)
    if not actor.can(role, group_id):
        raise PermissionDenied(refusal)
    return rows.select_for_update(of=("self",)).get(pk=pk)


def scope_create(*, kind: ScopeKind, name: str, parent_id: int | None = None) -> Scope:
    """Create a scope with a fresh opaque group id under the right kind of parent."""
    parent = Scope.objects.get(pk=parent_id) if parent_id is not None else None
    check_parent(kind, ScopeKind(parent.kind) if parent else None)
    return Scope.objects.create(
        kind=kind.value, name=name, parent=parent, group_id=new_group_id(kind)
    )


PERSONAL_REFUSAL = "a personal scope is its owner's alone: it takes no other members"


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
    *,
    user_id: int,
    scope_id: int,
    role: Role,
    actor: Principal | None = None,
    audited_as: Principal | None = None,
) -> Membership:
    """Give a user a role on a scope (replacing any role there); audited.

    With an `actor`, the actor must be admin on the scope and cannot grant above its
    own role; without one it is a system action (provisioning, seeding), or a use case's
    that checked its caller (`member_set_role`, recorded as `audited_as`).
    """
    scope = Scope.objects.get(pk=scope_id)
    if scope.kind == ScopeKind.PERSONAL:
        raise PermissionDenied(PERSONAL_REFUSAL)
    if actor is not None:
        held = actor.role_in(scope.group_id)
        if held is None or held < Role.ADMIN or role > held:
            raise PermissionDenied("granting this role needs admin on the scope and at least it")
    membership, created = Membership.objects.update_or_create(
        user_id=user_id, scope_id=scope_id, defaults={"role": int(role)}
    )
    system = Principal(label="system", roles={scope.group_id: Role.OWNER})
    with rls.tenant_context(actor or system):
        audit_record(
            actor=actor or audited_as or system,
            group_id=scope.group_id,
            action="role.grant",
            target=("user", user_id),
            data={"role": role.name.lower(), "new": created},
        )
    return membership


def _system(scope: Scope) -> Principal:
    return Principal(label="system", roles={scope.group_id: Role.OWNER})


def _audit(actor: Principal, scope: Scope, action: str, **fields: object) -> None:
    """Record `action` in the scope's own trail (under the actor's RLS context, widened to
    the scope: a scope's trail is written by what changes it)."""
    roles = {**actor.roles, scope.group_id: actor.roles.get(scope.group_id, Role.VIEWER)}
    with rls.tenant_context(Principal(label=actor.label, user_id=actor.user_id, roles=roles)):
        audit_record(actor=actor, group_id=scope.group_id, action=action, **fields)  # type: ignore[arg-type]


def scope_visible(actor: Principal, group_id: str) -> Scope:
    """The scope, if the actor has a role in it (else NotFound: no scope is disclosed)."""
    scope = Scope.objects.filter(group_id=group_id).select_related("parent").first()
    if scope is None or actor.role_in(scope.group_id) is None:
        raise NotFound("no such scope")
    return scope


def _require_manager(actor: Principal, scope_kind: ScopeKind, parent: Scope) -> None:
    refusal = rules.manage_refusal(scope_kind, role_on_parent=actor.role_in(parent.group_id))
    if refusal:
        raise PermissionDenied(refusal)


@transaction.atomic
def organisation_create(*, name: str, owner: int | str, by: str) -> Scope:
    """Open a deployment's organisation with its first owner (a user id, username or
    email of an active user): what an operator does before anyone can invite anyone.
    `by` names the operator (a superuser's username, a command); audited in the new
    organisation. Names follow the scope name rule and are unique among organisations,
    whatever the case."""
    cleaned = rules.scope_name(name)
    taken = Scope.objects.filter(kind=ScopeKind.ORGANISATION, name__iexact=cleaned).exists()
    if taken:
        raise ValueError(f"an organisation named {cleaned!r} exists already")
    user_id = owner if isinstance(owner, int) else _user(owner)
    if not get_user_model().objects.filter(pk=user_id, is_active=True).exists():
        raise NotFound("no such active user")
    scope = scope_create(kind=ScopeKind.ORGANISATION, name=cleaned)
    operator = Principal(label=f"operator:{by}", roles={scope.group_id: Role.OWNER})
    with rls.tenant_context(operator):
        audit_record(
            actor=operator, group_id=scope.group_id, action="scope.open",
            target=("scope", scope.group_id), data={"kind": "organisation", "name": cleaned},
        )  # fmt: skip
    membership_grant(user_id=user_id, scope_id=scope.pk, role=Role.OWNER, audited_as=operator)
    return scope


@transaction.atomic
def scope_open(*, actor: Principal, kind: ScopeKind, name: str, parent_group_id: str) -> Scope:
    """Open a workspace under an organisation or a project under a workspace; audited in
    both. The opener's role reaches it from above (no membership is added)."""
    parent = scope_visible(actor, parent_group_id)
    if parent.archived_at is not None:
        raise PermissionDenied("an archived scope takes no new scopes")
    _require_manager(actor, kind, parent)
    check_parent(kind, ScopeKind(parent.kind))
    cleaned = rules.scope_name(name)
    if parent.children.filter(name__iexact=cleaned).exists():
        raise ValueError(f"{parent.name} already has a scope named {cleaned!r}")
    scope = scope_create(kind=kind, name=cleaned, parent_id=parent.pk)
    _audit(
        actor,
        parent,
        "scope.open",
        target=("scope", scope.group_id),
        data={"kind": kind.name.lower(), "name": cleaned},
    )
    _audit(
        actor,
        scope,
        "scope.open",
        target=("scope", scope.group_id),
        data={"kind": kind.name.lower(), "name": cleaned, "parent": parent.group_id},
    )
    return scope


def _managed(actor: Principal, group_id: str) -> Scope:
    scope = scope_visible(actor, group_id)
    if scope.parent is None:
        raise PermissionDenied(rules.manage_refusal(ScopeKind(scope.kind), role_on_parent=None))
    _require_manager(actor, ScopeKind(scope.kind), scope.parent)
    return scope


@transaction.atomic
def scope_rename(*, actor: Principal, group_id: str, name: str) -> Scope:
    """Rename a workspace or project (its managers: admins of the scope above); audited."""
    scope = _managed(actor, group_id)
    cleaned = rules.scope_name(name)
    if (
        scope.parent
        and scope.parent.children.filter(name__iexact=cleaned).exclude(pk=scope.pk).exists()
    ):
        raise ValueError(f"{scope.parent.name} already has a scope named {cleaned!r}")
    before, scope.name = scope.name, cleaned
    scope.save(update_fields=["name"])
    _audit(
        actor,
        scope,
        "scope.rename",
        target=("scope", scope.group_id),
        data={"from": before, "to": cleaned},
    )
    return scope


def _subtree_ids(scope: Scope) -> list[int]:
    ids, todo = [], [scope.pk]
    while todo:
        ids += todo
        todo = list(Scope.objects.filter(parent_id__in=todo).values_list("pk", flat=True))
    return ids


@transaction.atomic
def scope_archive(
    *, actor: Principal, group_id: str, archived: bool = True, reason: str = ""
) -> Scope:
    """Archive a workspace or project with everything under it (read-only for members, its
    keys refused from the next request), or restore it; audited."""
    scope = _managed(actor, group_id)
    if archived and scope.parent is not None and scope.parent.archived_at is not None:
        raise ValueError("its parent is archived: restore the parent first")
    ids = _subtree_ids(scope)
    when = timezone.now() if archived else None
    Scope.objects.filter(pk__in=ids).update(archived_at=when)
    scope.refresh_from_db()
    _audit(
        actor,
        scope,
        "scope.archive" if archived else "scope.restore",
        target=("scope", scope.group_id),
        data={"reason": reason[:500], "scopes": len(ids)},
    )
    return scope


# --- Members ----------------------------------------------------------------------------


def _owners_left(scope: Scope, user_id: int) -> int:
    """The owners the scope keeps without this user's own membership on it: owners on it
    or above it (the user too, when an owner above)."""
    chain: list[int] = []
    node: Scope | None = scope
    while node is not None:
        chain.append(node.pk)
        node = node.parent
    return (
        Membership.objects.filter(scope_id__in=chain, role=Role.OWNER)
        .exclude(user_id=user_id, scope_id=scope.pk)
        .values("user_id")
        .distinct()
        .count()
    )


def _user(identifier: str) -> int:
    """An existing, active user by username or by an email address they have verified
    (an address someone merely typed into their account names nobody); else NotFound."""
    by_name = get_user_model().objects.filter(username__iexact=identifier, is_active=True)
    found = sorted(
        set(by_name.values_list("pk", flat=True)[:2]) | set(users_with_verified_email(identifier))
    )
    if len(found) != 1:
        raise NotFound("no single active user has that name or email")
    return found[0]


@transaction.atomic
def member_set_role(*, actor: Principal, group_id: str, user: int | str, role: Role) -> Membership:
    """Add a member (a user id, username or email) or change their role on a scope.

    Nobody grants above their own role nor changes a member above it; the last owner
    stays owner. Takes effect on the member's next request; audited.
    """
    scope = scope_visible(actor, group_id)
    if scope.kind == ScopeKind.PERSONAL:
        raise PermissionDenied(PERSONAL_REFUSAL)
    user_id = user if isinstance(user, int) else _user(user)
    if isinstance(user, int) and not get_user_model().objects.filter(pk=user_id).exists():
        raise NotFound("no such user")
    current = Membership.objects.select_for_update().filter(scope=scope, user_id=user_id).first()
    held = Role(current.role) if current else None
    refusal = rules.grant_refusal(
        actor=actor.role_in(scope.group_id), held=held, new=role,
        owners_left=_owners_left(scope, user_id),
    )  # fmt: skip
    if refusal:
        raise PermissionDenied(refusal)
    granted = membership_grant(user_id=user_id, scope_id=scope.pk, role=role, audited_as=actor)
    if held is not None and role < held:  # what they issued for others may be past them now
        revoke_past_issuers(issuer_id=user_id, reason="role.change")
    return granted


@transaction.atomic
def member_remove(*, actor: Principal, group_id: str, user_id: int) -> None:
    """Take a member off a scope (or leave it oneself); their keys of that scope are revoked
    with it. An admin cannot remove an owner; the last owner cannot leave. Audited."""
    scope = scope_visible(actor, group_id)
    current = Membership.objects.select_for_update().filter(scope=scope, user_id=user_id).first()
    if current is None:
        raise NotFound("no such member of this scope")
    held = Role(current.role)
    refusal = rules.revoke_refusal(
        actor=actor.role_in(scope.group_id), held=held,
        owners_left=_owners_left(scope, user_id),
        leaving=user_id == actor.user_id and actor.api_key_id is None,
    )  # fmt: skip
    if refusal:
        raise PermissionDenied(refusal)
    current.delete()
    revoked = ApiKey.objects.filter(
        owner_id=user_id, scope_id__in=_subtree_ids(scope), revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    revoked += revoke_past_issuers(issuer_id=user_id, reason="role.revoke")
    _audit(
        actor,
        scope,
        "role.revoke",
        target=("user", user_id),
        data={"role": held.name.lower(), "keys_revoked": revoked},
    )


@transaction.atomic
def member_deactivate(*, actor: Principal, group_id: str, user_id: int) -> int:
    """Deactivate a person's account from an organisation they belong to: sign-in, sessions
    and every key stop at once (their keys are revoked). Its owners and admins may, for a
    member whose every role is within the organisation and not above their own. Returns
    the keys revoked; audited."""
    scope = scope_visible(actor, group_id)
    if scope.kind != ScopeKind.ORGANISATION:
        raise PermissionDenied("people are deactivated from their organisation")
    held = actor.role_in(scope.group_id)
    if held is None or held < Role.ADMIN:
        raise PermissionDenied("deactivating a member needs admin on the organisation")
    if user_id == actor.user_id:
        raise PermissionDenied("nobody deactivates themselves")
    inside = set(_subtree_ids(scope))
    roles = list(
        Membership.objects.filter(user_id=user_id)
        .exclude(scope__kind=ScopeKind.PERSONAL)
        .values_list("scope_id", "role")
    )
    if not any(scope_id in inside for scope_id, _ in roles):
        raise NotFound("no such member of this organisation")
    if any(scope_id not in inside for scope_id, _ in roles):
        raise PermissionDenied("they belong to another organisation too: its admins decide")
    if any(role > held for _, role in roles):
        raise PermissionDenied("a member with a role above yours is deactivated by an owner")
    user = get_user_model().objects.select_for_update().get(pk=user_id)
    user.is_active = False
    user.save(update_fields=["is_active"])
    revoked = ApiKey.objects.filter(owner_id=user_id, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    revoked += revoke_past_issuers(issuer_id=user_id, reason="user.deactivate")
    _audit(
        actor, scope, "user.deactivate", target=("user", user_id), data={"keys_revoked": revoked}
    )
    return revoked


def _revoke_for_provider(scope: Scope, user_id: int, *, owned: bool = True) -> int:
    """At sign-in no principal holds the scope: the keys a lost provider role ends are
    revoked as the system, over the scope and the scopes below it. `owned`: the person's
    own keys there too (their membership went), not only those they issued for others."""
    ids = _subtree_ids(scope)
    groups = Scope.objects.filter(pk__in=ids).values_list("group_id", flat=True)
    system = Principal(label="system:oidc", roles=dict.fromkeys(groups, Role.OWNER))
    with rls.tenant_context(system):
        revoked = 0
        if owned:
            revoked = ApiKey.objects.filter(
                owner_id=user_id, scope_id__in=ids, revoked_at__isnull=True
            ).update(revoked_at=timezone.now())
        return revoked + revoke_past_issuers(issuer_id=user_id, reason="oidc")


@transaction.atomic
def memberships_from_idp(*, user_id: int, wanted: dict[str, Role], mapped: set[str]) -> None:
    """Bring a person's provider-granted roles in line with their provider groups at sign-in:
    on each `mapped` scope, the `wanted` role (none: the membership goes, with their keys
    there). A membership granted otherwise (by an admin, an invitation) is left as it is.
    Audited as the identity provider's."""
    provider = Principal(label="oidc", user_id=None)
    for scope in Scope.objects.filter(group_id__in=sorted(mapped)).select_related("parent"):
        current = (
            Membership.objects.select_for_update().filter(scope=scope, user_id=user_id).first()
        )
        want = wanted.get(scope.group_id)
        if current is not None and not current.via_idp:
            continue
        if want is None:
            if current is not None:
                current.delete()
                revoked = _revoke_for_provider(scope, user_id)
                _audit(provider, scope, "role.revoke", target=("user", user_id),
                       data={"role": Role(current.role).name.lower(), "via": "oidc",
                             "keys_revoked": revoked})  # fmt: skip
            continue
        if current is not None and current.role == want:
            continue
        Membership.objects.update_or_create(
            user_id=user_id, scope=scope, defaults={"role": int(want), "via_idp": True}
        )
        _audit(provider, scope, "role.grant", target=("user", user_id),
               data={"role": want.name.lower(), "via": "oidc", "new": current is None})  # fmt: skip
        if current is not None and want < current.role:
            _revoke_for_provider(scope, user_id, owned=False)
