"""Django admin for tenancy: scopes, memberships, API keys (never secrets), the audit trail.

Admin pages run inside the request's RLS context, so key and audit rows of other
tenants are invisible here exactly as everywhere else.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from tenants.models import ApiKey, AuditEvent, Membership, Scope


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Scope)
class ScopeAdmin(admin.ModelAdmin):
    """Scopes; the group id is assigned by VERA and read-only."""

    list_display = ["name", "kind", "group_id", "parent", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "group_id"]
    readonly_fields = ["group_id", "created_at"]
    inlines = [MembershipInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # scopes are created by the services, which assign group ids


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "scope", "role", "created_at"]
    list_filter = ["role", "scope__kind"]
    search_fields = ["user__username", "scope__name", "scope__group_id"]
    autocomplete_fields = ["user", "scope"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys by public prefix only; neither the secret nor its hash is ever shown."""

    list_display = ["name", "display", "owner", "scope", "role_ceiling", "expires_at",
                    "last_used_at", "revoked_at"]  # fmt: skip
    list_filter = ["role_ceiling", "revoked_at"]
    search_fields = ["name", "prefix", "owner__username"]
    fields = ["name", "display", "owner", "scope", "group_id", "role_ceiling", "created_by",
              "created_at", "expires_at", "last_used_at", "revoked_at", "rotated_from"]  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # issued through the key pages or the API, which show the secret once

    def has_change_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # revoke instead: the row is evidence


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The append-only trail, read-only."""

    list_display = ["created_at", "actor_label", "action", "target_type", "target_id", "group_id"]
    list_filter = ["action"]
    search_fields = ["actor_label", "action", "target_id", "group_id"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
