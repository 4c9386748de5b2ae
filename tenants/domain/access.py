"""Who may do what where: principals and the reach of roles down the scope tree (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tenants.domain.scopes import Role


@dataclass(frozen=True)
class ScopeNode:
    """A scope as the access rules see it: its id, parent and opaque group id."""

    id: int
    parent_id: int | None
    group_id: str
    archived: bool = False  # read-only: a role there counts as a viewer's


@dataclass(frozen=True)
class Principal:
    """An authenticated caller and its effective role per group id.

    `roles` holds every group the caller may read; the RLS setting is its keys.
    """

    label: str
    user_id: int | None = None
    roles: Mapping[str, Role] = field(default_factory=dict)
    api_key_id: int | None = None
    # Groups whose published knowledge it reads, and nothing more of them: the scopes
    # above those it has a role in (a workspace member reads its organisation's facts).
    reads: frozenset[str] = frozenset()

    @property
    def group_ids(self) -> frozenset[str]:
        return frozenset(self.roles)

    def role_in(self, group_id: str) -> Role | None:
        return self.roles.get(group_id)

    def groups_at_least(self, role: Role) -> list[str]:
        """The groups where the principal holds `role` or above, sorted."""
        return sorted(group for group, held in self.roles.items() if held >= role)

    def can(self, role: Role, group_id: str) -> bool:
        held = self.roles.get(group_id)
        return held is not None and held >= role


ANONYMOUS = Principal(label="anonymous")


def subtree_groups(scopes: Iterable[ScopeNode], root_id: int) -> set[str]:
    """The group ids of scope `root_id` and every scope under it, among `scopes`."""
    nodes = list(scopes)
    children: dict[int, list[ScopeNode]] = {}
    for node in nodes:
        if node.parent_id is not None:
            children.setdefault(node.parent_id, []).append(node)
    found: set[str] = set()
    todo = [node for node in nodes if node.id == root_id]
    while todo:
        node = todo.pop()
        if node.group_id not in found:
            found.add(node.group_id)
            todo.extend(children.get(node.id, ()))
    return found


def effective_roles(
    scopes: Iterable[ScopeNode], memberships: Iterable[tuple[int, Role]]
) -> dict[str, Role]:
    """Each group id the memberships reach, with the highest role reaching it.

    A role on a scope reaches every descendant; several memberships on one path
    combine by taking the highest role. On an archived scope any role reads only.
    """
    nodes = {scope.id: scope for scope in scopes}
    children: dict[int, list[int]] = {}
    for scope in nodes.values():
        if scope.parent_id is not None:
            children.setdefault(scope.parent_id, []).append(scope.id)
    reach: dict[str, Role] = {}
    for scope_id, role in memberships:
        stack = [scope_id]
        while stack:
            current = stack.pop()
            node = nodes.get(current)
            if node is None:
                continue
            here = min(role, Role.VIEWER) if node.archived else role
            if reach.get(node.group_id, Role.VIEWER - 1) < here:
                reach[node.group_id] = Role(here)
            stack.extend(children.get(current, ()))
    return reach


def cap_roles(
    roles: Mapping[str, Role], *, ceiling: Role, within: Iterable[str]
) -> dict[str, Role]:
    """Roles limited to the groups in `within`, none above `ceiling` (an API key's reach)."""
    allowed = set(within)
    return {group: min(role, ceiling) for group, role in roles.items() if group in allowed}
