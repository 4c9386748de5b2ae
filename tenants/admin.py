"""Django admin for tenancy: scopes, memberships, API keys (never secrets), the audit trail.

Admin pages run inside the request's RLS context, so key and audit rows of other
tenants are invisible here exactly as everywhere else. The admin is an entrypoint like
any other: what a use case writes (roles, keys, the trail) is read-only here, and the
actions call the use cases.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from common.admin import WrittenByServices, apply_each
from common.errors import NotFound, PermissionDenied
from tenants.models import ApiKey, AuditEvent, Membership, Scope
from tenants.principals import request_principal
from tenants.usecases import api_key_revoke, scope_archive, scope_rename


class MembershipInline(WrittenByServices, admin.TabularInline[Membership, Scope]):
    """Roles are granted by `membership_grant`, which checks the granter and audits."""

    model = Membership
    extra = 0
    fields = ("user", "role", "created_at")
    readonly_fields = fields


@admin.register(Scope)
class ScopeAdmin(admin.ModelAdmin[Scope]):
    """Scopes: the name and rate limits are editable; group id, kind and parent decide who
    sees what."""

    list_display = ["name", "kind", "group_id", "parent", "created_at", "archived_at"]
    list_filter = ["kind"]
    search_fields = ["name", "group_id"]
    readonly_fields = ["group_id", "kind", "parent", "created_at", "archived_at"]
    actions = ["archive_selected", "restore_selected"]
    fieldsets = [
        (None, {"fields": ["name", "group_id", "kind", "parent", "created_at", "archived_at"]}),
        (
            "Rate limits of the REST API",
            {
                "description": "Requests per window (VERA_RATE_LIMIT__WINDOW_S) charged to "
                "this scope where it is the root of a caller's reach, e.g. an API key's "
                "own workspace. Blank: the server's default. Applies from the next request.",
                "fields": [
                    ("search_limit", "principal_search_limit"),
                    ("write_limit", "principal_write_limit"),
                ],
            },
        ),
    ]
    inlines = [MembershipInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # scopes are created by the services, which assign group ids

    def save_model(self, request: HttpRequest, obj: Scope, form: Any, change: bool) -> None:
        """A new name goes through `scope_rename` (its managers only, unique among its
        siblings, audited); the rate limits are saved as they are."""
        if change and "name" in form.changed_data:
            wanted, obj.name = obj.name, Scope.objects.get(pk=obj.pk).name
            try:
                scope_rename(actor=request_principal(request), group_id=obj.group_id, name=wanted)
            except (ValueError, PermissionDenied, NotFound) as error:
                self.message_user(request, f"Not renamed: {error}", messages.ERROR)
            else:
                obj.name = wanted
        obj.save(update_fields=[f for f in form.changed_data if f != "name"] or None)

    def _archive(self, request: HttpRequest, queryset: QuerySet[Scope], *, archived: bool) -> None:
        actor = request_principal(request)
        groups = dict(queryset.values_list("pk", "group_id"))
        apply_each(
            self, request, groups,
            lambda pk: scope_archive(actor=actor, group_id=groups[pk], archived=archived,
                                     reason="the admin"),
            done="scope(s) archived" if archived else "scope(s) restored",
        )  # fmt: skip

    @admin.action(description="Archive the selected scopes (read-only, keys refused)")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Scope]) -> None:
        self._archive(request, queryset, archived=True)

    @admin.action(description="Restore the selected scopes")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Scope]) -> None:
        self._archive(request, queryset, archived=False)

    def has_delete_permission(self, request: HttpRequest, obj: Scope | None = None) -> bool:
        return False  # a scope's rows (and their audit trail) outlive a click


@admin.register(Membership)
class MembershipAdmin(WrittenByServices, admin.ModelAdmin[Membership]):
    """Who holds which role where; granted through `membership_grant` (audited)."""

    list_display = ["user", "scope", "role", "created_at"]
    list_filter = ["role", "scope__kind"]
    search_fields = ["user__username", "scope__name", "scope__group_id"]


@admin.register(ApiKey)
class ApiKeyAdmin(WrittenByServices, admin.ModelAdmin[ApiKey]):
    """Keys by public prefix only; neither the secret nor its hash is ever shown.

    Issued through the key pages or the API, which show the secret once; never deleted
    (the row is evidence); revoked by the action, through `api_key_revoke`.
    """

    list_display = ["name", "display", "owner", "scope", "role_ceiling", "expires_at",
                    "last_used_at", "revoked_at"]  # fmt: skip
    list_filter = ["role_ceiling", "revoked_at"]
    search_fields = ["name", "prefix", "owner__username"]
    fields = (
        "name", "display", "owner", "scope", "group_id", "role_ceiling", "created_by",
        "created_at", "expires_at", "last_used_at", "revoked_at", "rotated_from",
    )  # fmt: skip
    readonly_fields = fields
    actions = ["revoke_selected"]

    @admin.action(description="Revoke the selected keys")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        actor, ip = request_principal(request), request.META.get("REMOTE_ADDR")
        apply_each(
            self,
            request,
            queryset.filter(revoked_at__isnull=True).values_list("pk", flat=True),
            lambda pk: api_key_revoke(actor=actor, key_id=pk, ip_address=ip),
            done="key(s) revoked",
        )


@admin.register(AuditEvent)
class AuditEventAdmin(WrittenByServices, admin.ModelAdmin[AuditEvent]):
    """The append-only trail, read-only."""

    list_display = ["created_at", "actor_label", "action", "target_type", "target_id", "group_id"]
    list_filter = ["action"]
    search_fields = ["actor_label", "action", "target_id", "group_id"]
    date_hierarchy = "created_at"
