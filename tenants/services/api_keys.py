"""API key use cases: issue, rotate, revoke, authenticate."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from common.errors import PermissionDenied
from common.reads import incidental
from kernel.names import checked_name
from tenants import rls
from tenants.domain import api_keys as keys
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import ApiKey, Scope
from tenants.selectors import presented_key, principal_for_api_key, user_roles
from tenants.services.audit import audit_record

# Writing last_used_at on every request would turn each API read into a write.
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    """A key row and its plaintext, which exists only in this object and the response."""

    key: ApiKey
    plaintext: str


def _require_admin(actor: Principal, scope: Scope) -> Role:
    held = actor.role_in(scope.group_id)
    if held is None or held < Role.ADMIN:
        raise PermissionDenied("only an admin of this workspace can manage its keys")
    return held


@transaction.atomic
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
    """Issue a key for a member of a scope the actor administers.

    Nobody can give a key more reach than they have: the ceiling may not exceed the
    actor's role nor the owner's role on the scope, and a key in another member's name
    is for a member whose role there is not above the actor's (nobody acts as a
    stronger member). The key records its issuer; one issued for someone else is
    revoked when the issuer loses the role that allowed it (`revoke_past_issuers`).
    """
    checked_name(name)
    scope = Scope.objects.get(pk=scope_id)
    actor_role = _require_admin(actor, scope)
    owner_role = user_roles(owner_id).get(scope.group_id)
    if owner_role is None:
        raise PermissionDenied("the key owner is not a member of this scope")
    if owner_id != actor.user_id and owner_role > actor_role:
        raise PermissionDenied(
            "a key in another member's name needs a role there at least as high as theirs"
        )
    if role_ceiling > min(actor_role, owner_role):
        raise PermissionDenied("a key cannot reach beyond its owner's or its issuer's role")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValueError("the expiry must be in the future")
    issued = _store_new_key(
        actor=actor,
        name=name,
        owner_id=owner_id,
        scope_id=scope.pk,
        group_id=scope.group_id,
        role_ceiling=int(role_ceiling),
        expires_at=expires_at,
    )
    audit_record(
        actor=actor,
        group_id=scope.group_id,
        action="api_key.issue",
        target=("api_key", issued.key.prefix),
        data={"owner_id": owner_id, "ceiling": role_ceiling.name.lower(), "name": name},
        ip_address=ip_address,
    )
    return issued


def _allowed_issuer(role: Role | None, key: ApiKey, owner_role: Role | None) -> bool:
    """Whether an issuer holding `role` on the key's scope may still have issued it for
    its owner: admin there, not below the owner's role nor the key's ceiling."""
    return (
        role is not None
        and role >= Role.ADMIN
        and role >= key.role_ceiling
        and (owner_role is None or role >= owner_role)
    )


def revoke_past_issuers(*, issuer_id: int, reason: str) -> int:
    """Revoke the live keys `issuer_id` issued in other members' names that their role no
    longer allows (removed, demoted, deactivated, a provider group lost); returns how
    many. Called by every change that can take a role away, in its transaction."""
    from django.contrib.auth import get_user_model

    issued = list(
        ApiKey.objects.select_for_update()
        .filter(created_by_id=issuer_id, revoked_at__isnull=True)
        .exclude(owner_id=issuer_id)
        .select_related("scope")
    )
    if not issued:
        return 0
    active = get_user_model().objects.filter(pk=issuer_id, is_active=True).exists()
    roles = user_roles(issuer_id) if active else {}
    owners: dict[int, dict[str, Role]] = {}
    stale = []
    for key in issued:
        if key.owner_id not in owners:
            owners[key.owner_id] = user_roles(key.owner_id)
        owner_role = owners[key.owner_id].get(key.group_id)
        if not _allowed_issuer(roles.get(key.group_id), key, owner_role):
            stale.append(key)
    now = timezone.now()
    for key in stale:
        key.revoked_at = now
        key.save(update_fields=["revoked_at"])
        audit_record(
            actor=Principal(label="system:key-issuer-check", user_id=None),
            group_id=key.group_id,
            action="api_key.revoke",
            target=("api_key", key.prefix),
            data={"issuer_id": issuer_id, "owner_id": key.owner_id, "reason": reason},
        )
    return len(stale)


def _store_new_key(*, actor: Principal, **fields: object) -> IssuedKey:
    """A fresh secret for a new key row; only its hash is stored."""
    if actor.user_id is None:  # the row names the user who issued it
        raise PermissionDenied("only a signed-in user can issue or rotate a key")
    new = keys.generate()
    key = ApiKey.objects.create(
        prefix=new.prefix, secret_hash=new.secret_hash, created_by_id=actor.user_id, **fields
    )
    return IssuedKey(key=key, plaintext=new.plaintext)


def _administered_key(actor: Principal, key_id: int, *, action: str) -> ApiKey:
    """The key, locked, if the actor may `action` it; PermissionDenied says why not.

    The role that counts is the one the actor's credential carries on the key's scope
    (an API key's is capped by its ceiling): managing another member's keys needs admin
    there, and no credential acts on a key whose ceiling is above its own role, so a
    viewer key can never rotate its owner's admin key into a secret it then holds.
    A signed-in owner may always revoke a key of their own (never rotate it past
    their role): taking reach away never widens anything.
    """
    key = ApiKey.objects.select_for_update().select_related("scope").get(pk=key_id)
    own = key.owner_id == actor.user_id
    if own and action == "revoke" and actor.api_key_id is None:
        return key
    held = actor.role_in(key.group_id)
    if held is None:
        raise PermissionDenied(f"this credential has no role in the key's scope to {action} it")
    if not own and held < Role.ADMIN:
        raise PermissionDenied(f"only an admin of this workspace can {action} another's key")
    ceiling = Role(key.role_ceiling)
    if ceiling > held:
        raise PermissionDenied(
            f"the key's ceiling ({ceiling.name.lower()}) is above this credential's role "
            f"({held.name.lower()}): {action} it with a credential of that role or above"
        )
    return key


@transaction.atomic
def api_key_revoke(*, actor: Principal, key_id: int, ip_address: str | None = None) -> ApiKey:
    """Revoke a key at once; its owner or an admin of its scope may do it. Idempotent.

    Acting through an API key, only on keys whose ceiling is within that key's role.
    """
    key = _administered_key(actor, key_id, action="revoke")
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor,
            group_id=key.group_id,
            action="api_key.revoke",
            target=("api_key", key.prefix),
            ip_address=ip_address,
        )
    return key


@transaction.atomic
def api_key_rotate(*, actor: Principal, key_id: int, ip_address: str | None = None) -> IssuedKey:
    """Replace a key by a new secret with the same owner, scope, ceiling and expiry."""
    old = _administered_key(actor, key_id, action="rotate")
    if old.revoked_at is not None:
        raise ValueError("a revoked key cannot be rotated; issue a new one")
    old.revoked_at = timezone.now()
    old.save(update_fields=["revoked_at"])
    issued = _store_new_key(
        actor=actor,
        name=old.name,
        owner_id=old.owner_id,
        scope_id=old.scope_id,
        group_id=old.group_id,
        role_ceiling=old.role_ceiling,
        expires_at=old.expires_at,
        rotated_from=old,
    )
    audit_record(
        actor=actor,
        group_id=old.group_id,
        action="api_key.rotate",
        target=("api_key", issued.key.prefix),
        data={"replaces": old.prefix},
        ip_address=ip_address,
    )
    return issued


def api_key_authenticate(token: str) -> Principal | None:
    """The principal a presented key acts as, or None.

    Every failure looks the same to the caller and costs the same work: a lookup by
    prefix and one constant-time hash comparison, against a dummy hash on a miss.
    """
    parsed = keys.parse(token)
    prefix, secret = parsed if parsed else ("-" * 8, token)
    with rls.api_key_lookup(prefix):
        key = presented_key(prefix)
    matched = keys.secret_matches(secret, key.secret_hash if key else keys.DUMMY_HASH)
    now = timezone.now()
    if key is None or not matched or parsed is None:
        return None
    if not key.owner_active:
        return None  # a deactivated person's keys die with their sign-in
    if key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        return None
    principal = principal_for_api_key(key)
    if key.group_id not in principal.group_ids:
        return None  # the owner lost access to the key's scope: the key is dead too
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        with rls.tenant_context(principal), incidental():  # not a reason to read the primary
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return principal
