"""Tenancy persistence: scopes (group ids), memberships, API keys, the audit trail."""

from __future__ import annotations

import pgtrigger
from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from .domain.scopes import Role, ScopeKind


class Scope(models.Model):
    """An organisation, workspace, project or personal space, named by an opaque group id."""

    group_id = models.CharField(max_length=40, unique=True, editable=False)
    kind = models.CharField(max_length=1, choices=[(k.value, k.name.title()) for k in ScopeKind])
    name = models.CharField(max_length=200)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Archived: read-only for its members (their roles there count as viewer's), its API
    # keys refused; set on the scope and everything under it (`scope_archive`).
    archived_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Requests per VERA_RATE_LIMIT__WINDOW_S for this scope (blank: the server default),
    # for all its principals together and for each one; they apply where the scope is the
    # root of a principal's reach (an API key's own scope, a member's top scope).
    search_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Searches per window by all principals together; blank: the server default.",
    )
    write_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Writes per window by all principals together; blank: the server default.",
    )
    principal_search_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Searches per window by each API key or user; blank: the server default.",
    )
    principal_write_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Writes per window by each API key or user; blank: the server default.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(group_id__startswith=models.F("kind")),
                name="scope_group_id_prefix_matches_kind",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["o", "u"], parent__isnull=True)
                | Q(kind__in=["w", "p"], parent__isnull=False),
                name="scope_parent_by_kind",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.group_id})"


class Membership(models.Model):
    """A user's role on a scope; it reaches the scope's descendants."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    scope = models.ForeignKey(Scope, on_delete=models.CASCADE, related_name="memberships")
    role = models.PositiveSmallIntegerField(choices=[(r.value, r.name.title()) for r in Role])
    created_at = models.DateTimeField(auto_now_add=True)
    # Granted from the identity provider's groups (VERA_OIDC__GROUP_ROLES): each sign-in
    # brings it in line with them, and removes it when the group goes. Others stay.
    via_idp = models.BooleanField(default=False, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "scope"], name="membership_one_per_scope"),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="membership_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} {Role(self.role).name.lower()} on {self.scope}"


class Invitation(models.Model):
    """A single-use link that gives whoever signs in with `email` a role on a scope.

    Only the SHA-256 of the link's token is stored. Accepted once, before `expires_at`,
    unless revoked (`tenants.domain.invitations`)."""

    group_id = models.CharField(max_length=40, editable=False)
    scope = models.ForeignKey(Scope, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254)
    role = models.PositiveSmallIntegerField(choices=[(r.value, r.name.title()) for r in Role])
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True, editable=False)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+", editable=False,
    )  # fmt: skip
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="invitation_role_known"
            ),
            models.CheckConstraint(
                condition=Q(token_hash__regex=r"^[0-9a-f]{64}$"),  # noqa: S106 - a pattern
                name="invitation_hash_is_sha256",
            ),
        ]
        indexes = [models.Index(fields=["group_id", "-created_at"], name="invitation_group_idx")]

    def __str__(self) -> str:
        return f"{self.email} as {Role(self.role).name.lower()} on {self.scope_id}"


class ApiKey(models.Model):
    """A machine credential: public prefix + SHA-256 of a 256-bit secret, never the secret."""

    prefix = models.CharField(max_length=8, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    name = models.CharField(max_length=100)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="api_keys")
    # The scope's group id, denormalised so row-level security can filter this table.
    group_id = models.CharField(max_length=40, editable=False)
    role_ceiling = models.PositiveSmallIntegerField(
        choices=[(r.value, r.name.title()) for r in Role]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    rotated_from = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="rotated_to"
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(role_ceiling__in=[r.value for r in Role]), name="apikey_role_known"
            ),
            models.CheckConstraint(
                condition=Q(secret_hash__regex=r"^[0-9a-f]{64}$"),  # noqa: S106 - a pattern
                name="apikey_hash_is_sha256",
            ),
        ]
        indexes = [models.Index(fields=["group_id"], name="apikey_group_idx")]

    def __str__(self) -> str:
        return f"{self.name} (vera_{self.prefix}_…)"

    @property
    def display(self) -> str:
        """What may be shown of a key after creation: its public prefix."""
        return f"vera_{self.prefix}_…"


class AuditEvent(models.Model):
    """Append-only record of security-relevant actions (sign-ins, keys, roles, reviews)."""

    group_id = models.CharField(max_length=40)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        # The trail outlives deleted users: no FK constraint, no cascade, no SET NULL
        # (the append-only trigger would refuse the update anyway).
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
    )
    actor_label = models.CharField(max_length=200)
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["group_id", "-created_at"], name="audit_group_time_idx")]
        triggers = [
            pgtrigger.Protect(
                name="audit_event_append_only", operation=pgtrigger.Update | pgtrigger.Delete
            )
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action}"
