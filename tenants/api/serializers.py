"""Serializers of the tenants API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from tenants.domain.scopes import Role
from tenants.models import ApiKey, AuditEvent
from tenants.services.api_keys import IssuedKey

ROLE_NAMES = [role.name.lower() for role in Role]


class RoleField(serializers.ChoiceField):
    """A role by its lower-case name."""

    def __init__(self, **kwargs: Any) -> None:  # ChoiceField's options, passed on
        super().__init__(choices=ROLE_NAMES, **kwargs)

    # The stubs fix a ChoiceField's value type to str; this field's value is a Role.
    def to_internal_value(self, data: Any) -> Role:  # type: ignore[override]  # a Role, not str
        return Role[str(super().to_internal_value(data)).upper()]

    def to_representation(self, value: str | int) -> str:
        return Role(int(value)).name.lower()


class MeSerializer(serializers.Serializer[None]):
    """Who the caller is (GET /me): its label, its user, its role per reachable group."""

    principal = serializers.CharField()
    user_id = serializers.IntegerField(allow_null=True)
    roles = serializers.DictField(
        child=serializers.ChoiceField(choices=ROLE_NAMES), help_text="role per group id"
    )


class ApiKeySerializer(serializers.ModelSerializer[ApiKey]):
    """A key as anyone may see it after creation: never the secret, never its hash."""

    key_prefix = serializers.CharField(source="display", read_only=True)
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    scope = serializers.CharField(source="scope.group_id", read_only=True)
    role_ceiling = RoleField(read_only=True)
    status = serializers.SerializerMethodField()

    class Meta:
        model = ApiKey
        fields = [
            "id", "name", "key_prefix", "owner", "scope", "role_ceiling",
            "created_at", "expires_at", "last_used_at", "revoked_at", "status",
        ]  # fmt: skip

    def get_status(self, key: ApiKey) -> str:
        from django.utils import timezone

        if key.revoked_at:
            return "revoked"
        if key.expires_at and key.expires_at <= timezone.now():
            return "expired"
        return "active"


class ApiKeyIssueSerializer(serializers.Serializer[None]):
    """Input for issuing a key."""

    name = serializers.CharField(max_length=100)
    scope = serializers.CharField(max_length=40, help_text="group id of the workspace")
    owner = serializers.CharField(max_length=150, help_text="username of the key's owner")
    role_ceiling = RoleField()
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class IssuedKeySerializer(ApiKeySerializer):
    """The one response that carries the plaintext key (documented shape)."""

    key = serializers.CharField(read_only=True, help_text="shown once, never again")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]

    @classmethod
    def render(cls, issued: IssuedKey) -> dict[str, object]:
        return {**ApiKeySerializer(issued.key).data, "key": issued.plaintext}


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    """An audit event."""

    class Meta:
        model = AuditEvent
        fields = [
            "id", "group_id", "actor_label", "action", "target_type", "target_id",
            "data", "ip_address", "created_at",
        ]  # fmt: skip
