"""Who may open, rename or archive a scope and change whose role on it (pure rules).

Each rule returns why an action is refused, or None when it is allowed, so that every
entrypoint (REST, portal, admin) says the same thing. Roles are the credential's on
the scope in question (inherited from above included); `owners_left` counts the owners a
scope would keep after the change, its own and those inherited from the scopes above.
"""

from __future__ import annotations

from kernel.names import checked_name
from tenants.domain.scopes import PARENT_KIND, Role, ScopeKind

NAME_MAX = 200

# Who manages a scope of each kind, on which scope: an organisation's workspaces are its
# owners' and admins' to open, rename and archive; a workspace's projects its admins'.
# An organisation itself is the operator's (`manage.py`), and a personal scope nobody's.
MANAGED_FROM: dict[ScopeKind, str] = {
    ScopeKind.WORKSPACE: "organisation",
    ScopeKind.PROJECT: "workspace",
}


def scope_name(name: object) -> str:
    """A scope's name, stripped; ValueError when blank, too long or not text."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a scope needs a name")
    cleaned = " ".join(checked_name(name).split())  # checked as typed: a line break too
    if len(cleaned) > NAME_MAX:
        raise ValueError(f"a scope's name is at most {NAME_MAX} characters")
    return cleaned


def manage_refusal(kind: ScopeKind, *, role_on_parent: Role | None) -> str | None:
    """Why a credential with `role_on_parent` may not open, rename or archive a scope of
    `kind` under its parent, or None."""
    if kind not in MANAGED_FROM:
        return f"{kind.name.lower()} scopes are not opened, renamed or archived here"
    if role_on_parent is None or role_on_parent < Role.ADMIN:
        parent = PARENT_KIND[kind]
        assert parent is not None  # noqa: S101 - every managed kind has a parent
        return (
            f"only an owner or admin of the {parent.name.lower()} can open, rename or "
            f"archive its {kind.name.lower()}s"
        )
    return None


def grant_refusal(
    *, actor: Role | None, held: Role | None, new: Role, owners_left: int
) -> str | None:
    """Why a credential with role `actor` on a scope may not set a member's role there from
    `held` (None: not a member yet) to `new`, or None."""
    if actor is None or actor < Role.ADMIN:
        return "changing roles needs admin on the scope"
    if new > actor:
        return f"nobody grants above their own role ({actor.name.lower()})"
    if held is not None and held > actor:
        return f"a member with a role above yours ({held.name.lower()}) is changed by an owner"
    if held == Role.OWNER and new < Role.OWNER and owners_left < 1:
        return "the last owner keeps the role: make someone else owner first"
    return None


def revoke_refusal(
    *, actor: Role | None, held: Role, owners_left: int, leaving: bool
) -> str | None:
    """Why a credential with role `actor` may not take a member (role `held`) off a scope,
    or None; `leaving` when members take themselves off."""
    if held == Role.OWNER and owners_left < 1:
        return "the last owner cannot leave: make someone else owner first"
    if leaving:
        return None
    if actor is None or actor < Role.ADMIN:
        return "removing a member needs admin on the scope"
    if held > actor:
        return f"a member with a role above yours ({held.name.lower()}) is removed by an owner"
    return None
