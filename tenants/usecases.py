"""tenants' use cases: what every entrypoint calls.

The portal, the REST API, the admin, the sign-in receivers, commands and the MCP server
act on scopes, members, invitations, API keys and the audit trail through these
functions, never a service: one door per app. Each delegates to its service in
`tenants.services`, which checks the actor and audits; the results an entrypoint
renders (`IssuedKey`, `SentInvitation`) and the session key of a followed invitation
are named here too. A refusal is `common.errors.PermissionDenied` or `NotFound` (or a
ValueError for a bad value), as everywhere.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from tenants.domain import invitations as invitation_rules
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import ApiKey, AuditEvent, Invitation, Membership, Scope
from tenants.services import api_keys, audit, invitations, scopes

IssuedKey = api_keys.IssuedKey
SentInvitation = invitations.SentInvitation
# The token of the invitation a browser follows, kept in its session meanwhile.
SESSION_KEY = invitations.SESSION_KEY

# --- API keys ----------------------------------------------------------------------------


def api_key_issue(
    *,
    actor: Principal,
    owner_id: int,
    scope_id: int,
    name: str,
    role_ceiling: Role,
    expires_at: dt.datetime | None = None,
    ip_address: str | None = None,
) -> IssuedKey:
    """Issue a key for a member of a scope; admins of the scope may, never with more reach
    than their own role or the owner's. The plaintext is in the result only."""
    return api_keys.api_key_issue(
        actor=actor,
        owner_id=owner_id,
        scope_id=scope_id,
        name=name,
        role_ceiling=role_ceiling,
        expires_at=expires_at,
        ip_address=ip_address,
    )


def api_key_rotate(*, actor: Principal, key_id: int, ip_address: str | None = None) -> IssuedKey:
    """Replace a key by a new secret with the same owner, scope, ceiling and expiry; its
    owner or an admin of its scope may, with a credential reaching the key's ceiling."""
    return api_keys.api_key_rotate(actor=actor, key_id=key_id, ip_address=ip_address)


def api_key_revoke(*, actor: Principal, key_id: int, ip_address: str | None = None) -> ApiKey:
    """Revoke a key at once (idempotent); its owner or an admin of its scope may."""
    return api_keys.api_key_revoke(actor=actor, key_id=key_id, ip_address=ip_address)


def api_key_authenticate(token: str) -> Principal | None:
    """The principal a presented key acts as, or None for any key that does not work
    (unknown, wrong secret, revoked, expired, its owner gone)."""
    return api_keys.api_key_authenticate(token)


# --- scopes and members ------------------------------------------------------------------


def scope_visible(actor: Principal, group_id: str) -> Scope:
    """The scope, if the actor has a role in it; else NotFound, disclosing nothing."""
    return scopes.scope_visible(actor, group_id)


def organisation_create(*, name: str, owner: int | str, by: str) -> Scope:
    """Open an organisation with its first owner (an active user's id, username or email);
    an operator does it (a superuser, a command), named by `by` in its audit trail."""
    return scopes.organisation_create(name=name, owner=owner, by=by)


def scope_open(*, actor: Principal, kind: ScopeKind, name: str, parent_group_id: str) -> Scope:
    """Open a workspace under an organisation or a project under a workspace; admins of
    the scope above may."""
    return scopes.scope_open(actor=actor, kind=kind, name=name, parent_group_id=parent_group_id)


def scope_rename(*, actor: Principal, group_id: str, name: str) -> Scope:
    """Rename a workspace or project; its managers (admins of the scope above) may."""
    return scopes.scope_rename(actor=actor, group_id=group_id, name=name)


def scope_archive(
    *, actor: Principal, group_id: str, archived: bool = True, reason: str = ""
) -> Scope:
    """Archive a workspace or project with everything under it, or restore it; its
    managers (admins of the scope above) may."""
    return scopes.scope_archive(actor=actor, group_id=group_id, archived=archived, reason=reason)


def scope_create(*, kind: ScopeKind, name: str, parent_id: int | None = None) -> Scope:
    """Create a scope under the right kind of parent, unchecked and unaudited: for the
    system's provisioning and seeding, never on a person's request."""
    return scopes.scope_create(kind=kind, name=name, parent_id=parent_id)


def personal_scope_ensure(*, user_id: int, username: str) -> Scope:
    """The user's personal scope, created with them as its owner on first use (at sign-in)."""
    return scopes.personal_scope_ensure(user_id=user_id, username=username)


def membership_grant(
    *,
    user_id: int,
    scope_id: int,
    role: Role,
    actor: Principal | None = None,
    audited_as: Principal | None = None,
) -> Membership:
    """Give a user a role on a scope, replacing any role there; audited. With an `actor`,
    an admin of the scope up to their own role; without one, the system (seeding)."""
    return scopes.membership_grant(
        user_id=user_id, scope_id=scope_id, role=role, actor=actor, audited_as=audited_as
    )


def member_set_role(*, actor: Principal, group_id: str, user: int | str, role: Role) -> Membership:
    """Add a member (a user id, username or verified email) or change their role; admins
    of the scope may, never above their own role, and the last owner stays owner."""
    return scopes.member_set_role(actor=actor, group_id=group_id, user=user, role=role)


def member_remove(*, actor: Principal, group_id: str, user_id: int) -> None:
    """Take a member off a scope with their keys there, or leave it oneself; admins may
    remove members up to their own role, never the last owner."""
    scopes.member_remove(actor=actor, group_id=group_id, user_id=user_id)


def member_deactivate(*, actor: Principal, group_id: str, user_id: int) -> int:
    """Deactivate a member's account and revoke all their keys (how many is returned);
    admins of their organisation may, for a member whose roles are all within it."""
    return scopes.member_deactivate(actor=actor, group_id=group_id, user_id=user_id)


# --- invitations -------------------------------------------------------------------------


def invitation_send(
    *,
    actor: Principal,
    group_id: str,
    email: str,
    role: Role,
    lifetime: dt.timedelta = invitation_rules.LIFETIME,
    base_url: str = "",
) -> SentInvitation:
    """Invite an address to a scope with a role and email it the link; admins of the scope
    may, never above their own role."""
    return invitations.invitation_send(
        actor=actor, group_id=group_id, email=email, role=role, lifetime=lifetime,
        base_url=base_url,
    )  # fmt: skip


def invitation_check(token: str, *, email: str | None = None) -> Invitation:
    """The invitation a link names, if it can still be accepted (by `email`); anyone
    holding the link may ask."""
    return invitations.invitation_check(token, email=email)


def invitation_accept(*, token: str, user_id: int, signed_up_by_link: bool = False) -> Membership:
    """Give the signed-in user the invited role and use the invitation up; the person whose
    verified address it was sent to may."""
    return invitations.invitation_accept(
        token=token, user_id=user_id, signed_up_by_link=signed_up_by_link
    )


def invitation_revoke(*, actor: Principal, group_id: str, invitation_id: int) -> Invitation:
    """Withdraw an invitation not yet used (idempotent); admins of its scope may."""
    return invitations.invitation_revoke(
        actor=actor, group_id=group_id, invitation_id=invitation_id
    )


# --- the audit trail ---------------------------------------------------------------------


def audit_record(
    *,
    actor: Principal,
    group_id: str,
    action: str,
    target: tuple[str, object] | None = None,
    data: dict[str, Any] | None = None,
    ip_address: str | None = None,
) -> AuditEvent:
    """Append one event to a group's trail, in the caller's transaction and tenant context;
    whatever acts in that group records what it did (a sign-in, an admin's edit)."""
    return audit.audit_record(
        actor=actor, group_id=group_id, action=action, target=target, data=data,
        ip_address=ip_address,
    )  # fmt: skip
