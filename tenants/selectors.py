"""Read-side queries: principals, scopes a user administers, keys and audit events."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Q, QuerySet

from tenants.domain.access import (
    Principal,
    ScopeNode,
    cap_roles,
    effective_roles,
    subtree_groups,
)
from tenants.domain.limits import Budget, ScopeLimits
from tenants.domain.scopes import Role
from tenants.models import ApiKey, AuditEvent, Membership, Scope

# The scopes under (and including) the roots and the scopes above `up_from`, in one round
# trip (a request computes its principal with it: the level-by-level walk was two or
# three queries per call).
_TREE = """
    WITH RECURSIVE tree AS (
        SELECT id, parent_id, group_id, archived_at IS NOT NULL AS archived
        FROM tenants_scope WHERE id = ANY(%s)
        UNION
        SELECT s.id, s.parent_id, s.group_id, s.archived_at IS NOT NULL
        FROM tenants_scope s JOIN tree t ON s.parent_id = t.id
    ),
    above AS (
        SELECT s.id, s.parent_id, s.group_id FROM tenants_scope s
        WHERE s.id IN (SELECT parent_id FROM tenants_scope WHERE id = ANY(%s))
        UNION
        SELECT s.id, s.parent_id, s.group_id FROM tenants_scope s JOIN above a ON s.id = a.parent_id
    )
    SELECT id, parent_id, group_id, archived, false FROM tree
    UNION ALL
    SELECT id, parent_id, group_id, false, true FROM above
"""


def _scope_tree(
    root_ids: set[int], *, up_from: set[int] | None = None
) -> tuple[list[ScopeNode], set[str]]:
    """The scopes under (and including) `root_ids`, and the group ids of the scopes above
    `up_from` (whose published knowledge reaches down to their members)."""
    if not root_ids:
        return [], set()
    with connection.cursor() as cursor:
        cursor.execute(_TREE, [sorted(root_ids), sorted(up_from or ())])
        rows = cursor.fetchall()
    nodes = [ScopeNode(*row[:4]) for row in rows if not row[4]]
    return nodes, {row[2] for row in rows if row[4]}


def _memberships(user_id: int) -> list[tuple[int, Role]]:
    # Raw SQL: every authenticated request reads this, and the ORM's compilation cost
    # several times the read (the membership table is not under row-level security).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT scope_id, role FROM tenants_membership WHERE user_id = %s", [user_id]
        )
        return [(scope_id, Role(role)) for scope_id, role in cursor.fetchall()]


def _user_reach(user_id: int) -> tuple[dict[str, Role], frozenset[str]]:
    memberships = _memberships(user_id)
    if not memberships:
        return {}, frozenset()
    scopes = {scope for scope, _ in memberships}
    nodes, above = _scope_tree(scopes, up_from=scopes)
    roles = effective_roles(nodes, memberships)
    return roles, frozenset(above - set(roles))


def user_roles(user_id: int) -> dict[str, Role]:
    """Every group id the user's memberships reach, with the role that reaches it."""
    return _user_reach(user_id)[0]


def principal_for_user(user_id: int, *, label: str) -> Principal:
    """The principal a signed-in user acts as: its roles, and the scopes above its own
    whose published knowledge it reads."""
    roles, reads = _user_reach(user_id)
    return Principal(label=label, user_id=user_id, roles=roles, reads=reads)


@dataclass(frozen=True)
class PresentedKey:
    """The API key row a presented prefix names, with its owner's state: what
    authentication checks and the principal is computed from."""

    pk: int
    prefix: str
    secret_hash: str
    owner_id: int
    owner_active: bool
    scope_id: int
    group_id: str
    role_ceiling: int
    expires_at: dt.datetime | None
    last_used_at: dt.datetime | None
    revoked_at: dt.datetime | None


_PRESENTED_KEY = """
    SELECT k.id, k.prefix, k.secret_hash, k.owner_id, u.is_active, k.scope_id, k.group_id,
           k.role_ceiling, k.expires_at, k.last_used_at, k.revoked_at
    FROM tenants_apikey k JOIN auth_user u ON u.id = k.owner_id
    WHERE k.prefix = %s
"""


def presented_key(prefix: str) -> PresentedKey | None:
    """The key row with this prefix that row-level security lets the caller see (inside
    `rls.api_key_lookup`), in one raw read: every API request makes it."""
    with connection.cursor() as cursor:
        cursor.execute(_PRESENTED_KEY, [prefix])
        row = cursor.fetchone()
    return PresentedKey(*row) if row else None


def principal_for_api_key(key: ApiKey | PresentedKey) -> Principal:
    """An API key acts as its owner, capped by its ceiling and limited to its scope's subtree.

    One subtree query serves both: the owner's membership scopes and the key's scope are
    its roots, so the key's scope and everything under it are among the nodes it returns.
    A key of an archived scope reaches nothing.
    """
    memberships = _memberships(key.owner_id)
    nodes, above = _scope_tree(
        {scope for scope, _ in memberships} | {key.scope_id}, up_from={key.scope_id}
    )
    within = subtree_groups(nodes, key.scope_id)
    owner = effective_roles(nodes, memberships) if memberships else {}
    roles = cap_roles(owner, ceiling=Role(key.role_ceiling), within=within)
    if any(node.id == key.scope_id and node.archived for node in nodes):
        roles = {}  # an archived scope's keys reach nothing (authentication refuses them)
    # What the key's scope reads above it, when the owner holds a role in that scope.
    reads = frozenset(above) if key.group_id in roles else frozenset()
    return Principal(
        label=f"api-key:{key.prefix}", user_id=key.owner_id, roles=roles, api_key_id=key.pk,
        reads=reads,
    )  # fmt: skip


def principal_within(principal: Principal, group_id: str) -> Principal | None:
    """The principal narrowed to one scope it has a role in and the scopes under it (what a
    `scope=` argument asks for), or None when it has no role there. Never wider."""
    if group_id in principal.reads:  # a scope above its own: its published knowledge
        return replace(principal, roles={}, reads=frozenset({group_id}))
    if principal.role_in(group_id) is None:
        return None
    scope_id = Scope.objects.filter(group_id=group_id).values_list("pk", flat=True).first()
    if scope_id is None:
        return None
    within = subtree_groups(_scope_tree({scope_id})[0], scope_id)
    roles = {group: role for group, role in principal.roles.items() if group in within}
    return replace(principal, roles=roles, reads=frozenset())


def scopes_reached(principal: Principal) -> QuerySet[Scope]:
    """Every scope the principal has a role in, by kind then name."""
    return (
        Scope.objects.filter(group_id__in=sorted(principal.group_ids))
        .select_related("parent")
        .order_by("kind", "name")
    )


def members_of(scope: Scope) -> QuerySet[Membership]:
    """The scope's own members (not those whose role reaches it from above), with their
    live keys in the scope; the highest roles first."""
    live = Q(user__api_keys__scope=scope, user__api_keys__revoked_at__isnull=True)
    return (
        Membership.objects.filter(scope=scope)
        .select_related("user")
        .annotate(keys=Count("user__api_keys", filter=live))
        .order_by("-role", "user__username")
    )


def scopes_administered(principal: Principal) -> QuerySet[Scope]:
    """Scopes where the principal holds admin or above."""
    return Scope.objects.filter(group_id__in=principal.groups_at_least(Role.ADMIN)).order_by("name")


def api_keys_visible(principal: Principal) -> QuerySet[ApiKey]:
    """Keys in scopes the principal administers, plus the principal's own (RLS applies too).

    Through an API key, the owner's own keys only within that key's reach: a key never
    lists (nor acts on) its owner's keys of scopes it cannot see.
    """
    own = ApiKey.objects.filter(owner_id=principal.user_id)
    if principal.api_key_id is not None:
        own = own.filter(group_id__in=sorted(principal.group_ids))
    return (
        (ApiKey.objects.filter(group_id__in=principal.groups_at_least(Role.ADMIN)) | own)
        .select_related("owner", "scope", "created_by")
        .order_by("-created_at")
    )


def audit_events(principal: Principal) -> QuerySet[AuditEvent]:
    """Audit events of the groups the principal administers (its personal scope included)."""
    administered = principal.groups_at_least(Role.ADMIN)
    return AuditEvent.objects.filter(group_id__in=administered).order_by("-created_at")


def principal_system(label: str, *, group_ids: list[str] | None = None) -> Principal:
    """A background job acting for the given groups, or for every group when None.

    For system processes that serve tenants; user-facing code never uses it. None lists
    every scope into the tenant setting, which grows with the number of workspaces: the
    periodic jobs (outbox, scheduler, backpressure, snapshot sweep, index catch-up, the
    nightly calibration and evaluation) instead find the groups that have work through a
    system finder (`rls.system_finder`) and act for just those; None remains for operator
    commands.
    """
    scopes = (
        Scope.objects.all() if group_ids is None else Scope.objects.filter(group_id__in=group_ids)
    )
    return Principal(
        label=f"system:{label}",
        roles=dict.fromkeys(scopes.values_list("group_id", flat=True), Role.OWNER),
    )


_LIMIT_ROOTS = """
    SELECT s.group_id, s.search_limit, s.write_limit, s.principal_search_limit,
           s.principal_write_limit
    FROM tenants_scope s LEFT JOIN tenants_scope parent ON parent.id = s.parent_id
    WHERE s.group_id = ANY(%s) AND (parent.id IS NULL OR NOT parent.group_id = ANY(%s))
    ORDER BY s.group_id
"""


def rate_limit_scopes(principal: Principal) -> list[ScopeLimits]:
    """The roots of the principal's reach (scopes whose parent it does not reach), with
    their own rate limits, in one query: the scopes a request of its is charged to.

    The scope registry is not under row-level security, so this reads the same inside
    any tenant context.
    """
    groups = sorted(principal.group_ids)
    if not groups:
        return []
    # Raw SQL: every rate-limited request reads this (see `_memberships`).
    with connection.cursor() as cursor:
        cursor.execute(_LIMIT_ROOTS, [groups, groups])
        rows = cursor.fetchall()
    return [
        ScopeLimits(
            group_id=group_id,
            workspace={Budget.SEARCH: search, Budget.WRITE: write},
            principal={Budget.SEARCH: own_search, Budget.WRITE: own_write},
        )
        for group_id, search, write, own_search, own_write in rows
    ]


def verified_emails(user_id: int) -> set[str]:
    """The addresses a person has shown they hold, lower-cased. Addresses managed in the
    account pages (allauth's records) count once verified; a person without any such
    record has the one address an operator or the identity provider gave them."""
    records = list(
        apps.get_model("account", "EmailAddress")
        .objects.filter(user_id=user_id)
        .values_list("email", "verified")
    )
    if records:
        return {email.lower() for email, verified in records if verified}
    email = get_user_model().objects.filter(pk=user_id).values_list("email", flat=True).first()
    return {email.lower()} if email else set()


def users_with_verified_email(email: str) -> list[int]:
    """The active people who have verified `email` (see `verified_emails`)."""
    wanted = email.strip().lower()
    recorded = apps.get_model("account", "EmailAddress").objects.filter(email__iexact=wanted)
    candidates = set(
        get_user_model()
        .objects.filter(Q(email__iexact=wanted) | Q(pk__in=recorded.values("user_id")))
        .filter(is_active=True)
        .values_list("pk", flat=True)
    )
    return sorted(pk for pk in candidates if wanted in verified_emails(pk))
