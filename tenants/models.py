"""Tenancy persistence: scopes (group ids) and memberships."""

from __future__ import annotations

from django.conf import settings
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

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "scope"], name="membership_one_per_scope"),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="membership_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} {Role(self.role).name.lower()} on {self.scope}"
