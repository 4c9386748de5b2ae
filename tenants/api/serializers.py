"""Serializers of the tenants API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from tenants.domain.scopes import Role, ScopeKind
from tenants.models import ApiKey, AuditEvent, Invitation, Membership, Scope
from tenants.usecases import IssuedKey

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
    issued_by = serializers.CharField(
        source="created_by.get_username", read_only=True,
        help_text="who issued it: a key issued in another member's name is revoked when "
        "its issuer loses the role that allowed it",
    )  # fmt: skip
    scope = serializers.CharField(
        source="scope.group_id", read_only=True,
        help_text="the same as group_id (kept for existing clients)",
    )  # fmt: skip
    group_id = serializers.CharField(read_only=True, help_text="group id of the key's scope")
    role_ceiling = RoleField(read_only=True)
    status = serializers.SerializerMethodField()

    class Meta:
        model = ApiKey
        fields = [
            "id", "name", "key_prefix", "owner", "issued_by", "scope", "group_id", "role_ceiling",
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


class ScopeSerializer(serializers.ModelSerializer[Scope]):
    """A scope the caller reaches, with the caller's role there."""

    kind = serializers.SerializerMethodField()
    # A declared field named as Field's own `parent` (DRF's metaclass pops it from the class).
    parent = serializers.CharField(  # type: ignore[assignment]
        source="parent.group_id", default=None, read_only=True
    )
    role = serializers.SerializerMethodField()

    class Meta:
        model = Scope
        fields = ["group_id", "kind", "name", "parent", "role", "created_at", "archived_at"]

    def get_kind(self, scope: Scope) -> str:
        return ScopeKind(scope.kind).name.lower()

    def get_role(self, scope: Scope) -> str | None:
        roles = self.context.get("roles", {})
        role = roles.get(scope.group_id)
        return role.name.lower() if role is not None else None


class ScopeOpenSerializer(serializers.Serializer[None]):
    """Input for opening a workspace (under an organisation) or a project (under a workspace)."""

    kind = serializers.ChoiceField(choices=["workspace", "project"])
    name = serializers.CharField(max_length=200)
    parent = serializers.CharField(  # type: ignore[assignment]  # as ScopeSerializer's
        max_length=40, help_text="group id of the scope above"
    )


class ScopeChangeSerializer(serializers.Serializer[None]):
    """Input for renaming a scope, or archiving (or restoring) it; neither changes nothing."""

    name = serializers.CharField(max_length=200, required=False)
    archived = serializers.BooleanField(required=False)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True)


class MemberSerializer(serializers.ModelSerializer[Membership]):
    """A member of a scope: who, their role, since when, last seen, live keys there."""

    user_id = serializers.IntegerField(read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)
    active = serializers.BooleanField(source="user.is_active", read_only=True)
    role = RoleField(read_only=True)
    since = serializers.DateTimeField(source="created_at", read_only=True)
    last_seen = serializers.DateTimeField(source="user.last_login", read_only=True)
    keys = serializers.IntegerField(read_only=True, help_text="live API keys in this scope")

    class Meta:
        model = Membership
        fields = ["user_id", "username", "email", "active", "role", "since", "last_seen", "keys"]


class MemberRoleSerializer(serializers.Serializer[None]):
    """Input for changing a member's role."""

    role = RoleField()


class MemberAddSerializer(MemberRoleSerializer):
    """Input for adding an existing user to a scope, with a role."""

    user = serializers.CharField(
        max_length=254, help_text="username or email of an existing, active user"
    )


class InvitationSerializer(serializers.ModelSerializer[Invitation]):
    """An invitation as its scope's admins see it (never its link)."""

    role = RoleField(read_only=True)
    invited_by = serializers.CharField(source="invited_by.get_username", read_only=True)
    status = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = ["id", "email", "role", "invited_by", "created_at", "expires_at",
                  "accepted_at", "revoked_at", "status"]  # fmt: skip

    def get_status(self, invitation: Invitation) -> str:
        from django.utils import timezone

        if invitation.accepted_at:
            return "accepted"
        if invitation.revoked_at:
            return "revoked"
        return "expired" if invitation.expires_at <= timezone.now() else "pending"


class InvitationSendSerializer(serializers.Serializer[None]):
    """Input for inviting an address to a scope."""

    # Checked by the use case (tenants.domain.invitations.normal_email), as every
    # entrypoint checks it, rather than by a stricter validator of its own.
    email = serializers.CharField(max_length=254, help_text="the address to invite")
    role = RoleField()
    days = serializers.IntegerField(
        min_value=1, max_value=30, default=7, help_text="how long the link stays usable"
    )


class SentInvitationSerializer(InvitationSerializer):
    """The one response that carries the invitation's link (documented shape)."""

    link = serializers.CharField(read_only=True, help_text="shown once, and emailed")
    emailed = serializers.BooleanField(read_only=True)

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link", "emailed"]


class DeactivatedSerializer(serializers.Serializer[None]):
    """A deactivated account: who, and how many of their keys were revoked with it."""

    user_id = serializers.IntegerField()
    active = serializers.BooleanField()
    keys_revoked = serializers.IntegerField()
