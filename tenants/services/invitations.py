"""Invitations: an admin invites an address with a role; the person following the link
signs up (or in) with that address and lands with that role. Single use, expiring,
revocable, audited; the link is shown to the inviter once and sent by email."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from common.errors import NotFound, PermissionDenied
from tenants import rls
from tenants.domain import invitations as rules
from tenants.domain import members
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Invitation, Membership
from tenants.selectors import verified_emails
from tenants.services.audit import audit_record
from tenants.services.scopes import membership_grant, scope_visible

logger = logging.getLogger(__name__)

# The token of the invitation a browser follows, kept in its session while the person
# signs up or in.
SESSION_KEY = "vera_invitation"


@dataclass(frozen=True)
class SentInvitation:
    """An invitation row and its link's path, which exists only here and in the email."""

    invitation: Invitation
    path: str
    emailed: bool


def invitation_path(token: str) -> str:
    return reverse("invitation", kwargs={"token": token})


@transaction.atomic
def invitation_send(
    *,
    actor: Principal,
    group_id: str,
    email: str,
    role: Role,
    lifetime: dt.timedelta = rules.LIFETIME,
    base_url: str = "",
) -> SentInvitation:
    """Invite an address to a scope with a role (never above the inviter's); the email
    carries the link (`base_url` + path). Refused for archived and personal scopes."""
    scope = scope_visible(actor, group_id)
    if scope.kind == ScopeKind.PERSONAL:
        raise PermissionDenied("nobody is invited to a personal scope")
    if scope.archived_at is not None:
        raise PermissionDenied("an archived scope takes no new members")
    if actor.user_id is None:
        raise PermissionDenied("only a signed-in user or their key can invite")
    refusal = members.grant_refusal(
        actor=actor.role_in(scope.group_id), held=None, new=role, owners_left=1
    )
    if refusal:
        raise PermissionDenied(refusal)
    address = rules.normal_email(email)
    if not dt.timedelta(0) < lifetime <= rules.MAX_LIFETIME:
        raise ValueError(f"an invitation lasts at most {rules.MAX_LIFETIME.days} days")
    token, digest = rules.new_token()
    invitation = Invitation.objects.create(
        group_id=scope.group_id, scope=scope, email=address, role=int(role),
        token_hash=digest, invited_by_id=actor.user_id,
        expires_at=timezone.now() + lifetime,
    )  # fmt: skip
    audit_record(
        actor=actor, group_id=scope.group_id, action="invitation.send",
        target=("invitation", invitation.pk),
        data={"email": address, "role": role.name.lower(),
              "expires_at": invitation.expires_at.isoformat()},
    )  # fmt: skip
    path = invitation_path(token)
    emailed = _email(address, scope.name, role, f"{base_url}{path}", invitation.expires_at)
    return SentInvitation(invitation=invitation, path=path, emailed=emailed)


def _email(address: str, scope: str, role: Role, link: str, expires_at: dt.datetime) -> bool:
    """Send the link; a mail server that refuses is logged, the inviter still has the link."""
    try:
        send_mail(
            subject=f"You are invited to {scope} on VERA",
            message=(
                f"You are invited to {scope} as {role.name.lower()}.\n\n"
                f"Follow this link to sign up or sign in with this address ({address}):\n"
                f"{link}\n\nIt can be used once, until {expires_at:%Y-%m-%d %H:%M} UTC.\n"
            ),
            from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=[address],
        )
    except OSError as error:
        logger.warning("invitation email to %s not sent: %s", address, error)
        return False
    return True


def _find(token: str) -> Invitation:
    if not rules.well_formed(token):
        raise NotFound("no such invitation")
    with rls.invitation_lookup(rules.token_hash(token)):
        found = (
            Invitation.objects.select_for_update(of=("self",))
            .select_related("scope")
            .filter(token_hash=rules.token_hash(token))
            .first()
        )
    if found is None:
        raise NotFound("no such invitation")
    return found


def invitation_check(token: str, *, email: str | None = None) -> Invitation:
    """The invitation the link names, if it can still be accepted (by `email`); else
    NotFound, or PermissionDenied saying why (used, expired, withdrawn, another address)."""
    with transaction.atomic():
        invitation = _find(token)
    refusal = rules.acceptance_refusal(
        now=timezone.now(), expires_at=invitation.expires_at,
        accepted_at=invitation.accepted_at, revoked_at=invitation.revoked_at,
        invited=invitation.email, accepting=email,
    )  # fmt: skip
    if refusal:
        raise PermissionDenied(refusal)
    return invitation


@transaction.atomic
def invitation_accept(*, token: str, user_id: int, signed_up_by_link: bool = False) -> Membership:
    """Give the signed-in user the invited role (never lowering a higher one they hold
    there) and use the invitation up; audited.

    The invited address must be one the person has verified (`verified_emails`): an
    address merely added to an account and made primary does not take an invitation.
    An account opened through the link itself (`signed_up_by_link`) has its address
    verified by it: the link was sent there."""
    user = get_user_model().objects.get(pk=user_id)
    invitation = _find(token)  # locked: two tabs cannot both use it
    verified = verified_emails(user_id)
    if signed_up_by_link and user.email:
        verified.add(user.email.lower())
    accepting = invitation.email if invitation.email in verified else (user.email or "")
    refusal = rules.acceptance_refusal(
        now=timezone.now(), expires_at=invitation.expires_at,
        accepted_at=invitation.accepted_at, revoked_at=invitation.revoked_at,
        invited=invitation.email, accepting=accepting,
    ) or (
        None if invitation.email in verified else
        f"this invitation is for {invitation.email}, which this account has not verified: "
        "verify it (Account, Email addresses) and follow the link again"
    )  # fmt: skip
    if refusal:
        raise PermissionDenied(refusal)
    scope = invitation.scope
    held = Membership.objects.filter(scope=scope, user_id=user_id).first()
    role = max(Role(invitation.role), Role(held.role)) if held else Role(invitation.role)
    as_invitee = Principal(label=f"user:{user.get_username()}", user_id=user_id)
    membership = membership_grant(
        user_id=user_id, scope_id=scope.pk, role=role, audited_as=as_invitee
    )
    system = Principal(label="invitation", roles={scope.group_id: Role.OWNER})
    with rls.tenant_context(system), rls.invitation_lookup(invitation.token_hash):
        Invitation.objects.filter(pk=invitation.pk).update(
            accepted_at=timezone.now(), accepted_by_id=user_id
        )
        audit_record(
            actor=as_invitee, group_id=scope.group_id, action="invitation.accept",
            target=("invitation", invitation.pk),
            data={"email": invitation.email, "role": role.name.lower()},
        )  # fmt: skip
    return membership


@transaction.atomic
def invitation_revoke(*, actor: Principal, group_id: str, invitation_id: int) -> Invitation:
    """Withdraw an invitation not yet used (admins of its scope); audited. Idempotent."""
    scope = scope_visible(actor, group_id)
    if not actor.can(Role.ADMIN, scope.group_id):
        raise PermissionDenied("withdrawing an invitation needs admin on the scope")
    invitation = (
        Invitation.objects.select_for_update().filter(pk=invitation_id, scope=scope).first()
    )
    if invitation is None:
        raise NotFound("no such invitation in this scope")
    if invitation.accepted_at is not None:
        raise ValueError("this invitation has been used already")
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor, group_id=scope.group_id, action="invitation.revoke",
            target=("invitation", invitation.pk), data={"email": invitation.email},
        )  # fmt: skip
    return invitation


def pending_token(session: Mapping[str, Any]) -> str | None:
    """The invitation a browser session is following, if it can still be accepted."""
    token = session.get(SESSION_KEY)
    if not isinstance(token, str):
        return None
    try:
        invitation_check(token)
    except (NotFound, PermissionDenied):
        return None
    return token
