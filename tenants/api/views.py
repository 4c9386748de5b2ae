"""REST endpoints: who am I, API keys (issue, rotate, revoke), scopes and their members, the
audit trail."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Protocol

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import NotFound, PermissionDenied
from tenants import selectors, usecases
from tenants.api.serializers import (
    ApiKeyIssueSerializer,
    ApiKeySerializer,
    AuditEventSerializer,
    DeactivatedSerializer,
    InvitationSendSerializer,
    InvitationSerializer,
    IssuedKeySerializer,
    MemberAddSerializer,
    MemberRoleSerializer,
    MemberSerializer,
    MeSerializer,
    ScopeChangeSerializer,
    ScopeOpenSerializer,
    ScopeSerializer,
    SentInvitationSerializer,
)
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import ApiKey, AuditEvent, Invitation, Scope
from tenants.principals import principal_of
from tenants.scoping import (
    NOT_VISIBLE,
    SCOPE_PARAMETER,
    ScopeNarrowedList,
    request_narrowed,
    scoped_list_schema,
)


def _ip(request: Request) -> str | None:
    return request.META.get("REMOTE_ADDR")


class MeView(APIView):
    """The caller's identity and its role in every group it can reach."""

    @extend_schema(responses={200: MeSerializer})
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        roles = {group: role.name.lower() for group, role in sorted(principal.roles.items())}
        return Response(
            {"principal": principal.label, "user_id": principal.user_id, "roles": roles}
        )


@scoped_list_schema
class ApiKeyListView(ScopeNarrowedList, generics.ListAPIView[ApiKey]):
    """Keys the caller administers or owns; POST issues one (the secret is shown once)."""

    serializer_class = ApiKeySerializer

    def get_queryset(self) -> QuerySet[ApiKey]:
        return selectors.api_keys_visible(principal_of(self.request))

    @extend_schema(request=ApiKeyIssueSerializer, responses={201: IssuedKeySerializer})
    def post(self, request: Request) -> Response:
        form = ApiKeyIssueSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        principal = principal_of(request)
        scope = Scope.objects.filter(group_id=data["scope"]).first()
        if scope is None or not principal.can(Role.ADMIN, scope.group_id):
            raise exceptions.PermissionDenied("You are not an admin of that scope.")
        owner = get_user_model().objects.filter(username=data["owner"]).first()
        if owner is None:
            raise exceptions.ValidationError({"owner": "No member of this scope has that name."})
        try:
            issued = usecases.api_key_issue(
                actor=principal,
                owner_id=owner.pk,
                scope_id=scope.pk,
                name=data["name"],
                role_ceiling=data["role_ceiling"],
                expires_at=data.get("expires_at"),
                ip_address=_ip(request),
            )
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except ValueError as error:
            raise exceptions.ValidationError({"expires_at": str(error)}) from None
        return Response(IssuedKeySerializer.render(issued), status=status.HTTP_201_CREATED)


class _KeyUseCase[T](Protocol):
    """A use case on one existing key (rotate, revoke), as the key endpoints call it."""

    def __call__(self, *, actor: Principal, key_id: int, ip_address: str | None = None) -> T: ...


def _key_action[T](request: Request, key_id: int, use_case: _KeyUseCase[T]) -> T:
    principal = principal_of(request)
    if not selectors.api_keys_visible(principal).filter(pk=key_id).exists():
        raise exceptions.NotFound("No such key.")
    try:
        return use_case(actor=principal, key_id=key_id, ip_address=_ip(request))
    except PermissionDenied as error:
        raise exceptions.PermissionDenied(str(error)) from None
    except ValueError as error:
        raise exceptions.ValidationError({"detail": str(error)}) from None


class ApiKeyRotateView(APIView):
    """Revoke a key and issue its replacement; the new secret is shown once."""

    @extend_schema(request=None, responses={201: IssuedKeySerializer})
    def post(self, request: Request, key_id: int) -> Response:
        issued = _key_action(request, key_id, usecases.api_key_rotate)
        return Response(IssuedKeySerializer.render(issued), status=status.HTTP_201_CREATED)


class ApiKeyRevokeView(APIView):
    """Revoke a key; it fails on the very next request."""

    @extend_schema(request=None, responses={200: ApiKeySerializer})
    def post(self, request: Request, key_id: int) -> Response:
        return Response(
            ApiKeySerializer(_key_action(request, key_id, usecases.api_key_revoke)).data
        )


@scoped_list_schema
class AuditEventListView(ScopeNarrowedList, generics.ListAPIView[AuditEvent]):
    """Audit events of the scopes the caller administers, newest first."""

    serializer_class = AuditEventSerializer

    def get_queryset(self) -> QuerySet[AuditEvent]:
        return selectors.audit_events(principal_of(self.request))


def _scope_use_case[T](call: Callable[[], T], *, field: str = "detail") -> T:
    """Run a scope or member use case, its refusals as 404, 403 and 400 with the reason."""
    try:
        return call()
    except NotFound as error:
        raise exceptions.NotFound(str(error)) from None
    except PermissionDenied as error:
        raise exceptions.PermissionDenied(str(error)) from None
    except ValueError as error:
        raise exceptions.ValidationError({field: str(error)}) from None


class ScopeListView(APIView):
    """The scopes the caller reaches, with its role in each; POST opens a workspace (under
    an organisation, by its owners and admins) or a project (under a workspace, by its
    admins)."""

    @extend_schema(
        parameters=[SCOPE_PARAMETER],
        responses={200: ScopeSerializer(many=True), 404: NOT_VISIBLE},
    )
    def get(self, request: Request) -> Response:
        with request_narrowed(request) as principal:
            found = list(selectors.scopes_reached(principal))
        return Response(ScopeSerializer(found, many=True, context={"roles": principal.roles}).data)

    @extend_schema(
        request=ScopeOpenSerializer,
        responses={
            201: ScopeSerializer,
            404: OpenApiResponse(description="no such parent scope visible to the caller"),
        },
    )
    def post(self, request: Request) -> Response:
        form = ScopeOpenSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data, principal = form.validated_data, principal_of(request)
        opened = _scope_use_case(
            lambda: usecases.scope_open(
                actor=principal,
                kind=ScopeKind[data["kind"].upper()],
                name=data["name"],
                parent_group_id=data["parent"],
            ),
            field="name",
        )
        roles = {**principal.roles, opened.group_id: principal.roles.get(data["parent"])}
        body = ScopeSerializer(opened, context={"roles": roles}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ScopeView(APIView):
    """One scope: PATCH renames it (`name`) or archives or restores it (`archived`, with a
    `reason`): its managers only, audited."""

    @extend_schema(responses={200: ScopeSerializer})
    def get(self, request: Request, group_id: str) -> Response:
        principal = principal_of(request)
        scope = _scope_use_case(lambda: usecases.scope_visible(principal, group_id))
        return Response(ScopeSerializer(scope, context={"roles": principal.roles}).data)

    @extend_schema(request=ScopeChangeSerializer, responses={200: ScopeSerializer})
    def patch(self, request: Request, group_id: str) -> Response:
        form = ScopeChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data, principal = form.validated_data, principal_of(request)
        with transaction.atomic():
            if "name" in data:
                _scope_use_case(
                    lambda: usecases.scope_rename(
                        actor=principal, group_id=group_id, name=data["name"]
                    ),
                    field="name",
                )
            if "archived" in data:
                _scope_use_case(
                    lambda: usecases.scope_archive(
                        actor=principal,
                        group_id=group_id,
                        archived=data["archived"],
                        reason=data.get("reason", ""),
                    ),
                    field="archived",
                )
        scope = _scope_use_case(lambda: usecases.scope_visible(principal, group_id))
        return Response(ScopeSerializer(scope, context={"roles": principal.roles}).data)


def _administered(principal: Principal, group_id: str) -> Scope:
    scope = _scope_use_case(lambda: usecases.scope_visible(principal, group_id))
    if not principal.can(Role.ADMIN, scope.group_id):
        raise exceptions.PermissionDenied("only an admin of this scope sees its members")
    return scope


class MemberListView(APIView):
    """A scope's members (its admins see them); POST adds an existing user by username or
    email with a role (never above the caller's)."""

    @extend_schema(responses={200: MemberSerializer(many=True)})
    def get(self, request: Request, group_id: str) -> Response:
        scope = _administered(principal_of(request), group_id)
        return Response(MemberSerializer(selectors.members_of(scope), many=True).data)

    @extend_schema(request=MemberAddSerializer, responses={201: MemberSerializer})
    def post(self, request: Request, group_id: str) -> Response:
        form = MemberAddSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data, principal = form.validated_data, principal_of(request)
        membership = _scope_use_case(
            lambda: usecases.member_set_role(
                actor=principal, group_id=group_id, user=data["user"], role=data["role"]
            ),
            field="user",
        )
        row = selectors.members_of(membership.scope).get(pk=membership.pk)
        return Response(MemberSerializer(row).data, status=status.HTTP_201_CREATED)


class MemberView(APIView):
    """One member of a scope: PATCH changes their role, DELETE takes them off the scope
    (their keys there revoked with it). A member may DELETE themselves (leave)."""

    @extend_schema(request=MemberRoleSerializer, responses={200: MemberSerializer})
    def patch(self, request: Request, group_id: str, user_id: int) -> Response:
        form = MemberRoleSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        principal = principal_of(request)
        scope = _administered(principal, group_id)
        if not selectors.members_of(scope).filter(user_id=user_id).exists():
            raise exceptions.NotFound("no such member of this scope")
        if "role" in form.validated_data:
            _scope_use_case(
                lambda: usecases.member_set_role(
                    actor=principal, group_id=group_id, user=user_id,
                    role=form.validated_data["role"],
                ),
                field="role",
            )  # fmt: skip
        return Response(MemberSerializer(selectors.members_of(scope).get(user_id=user_id)).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, group_id: str, user_id: int) -> Response:
        principal = principal_of(request)
        _scope_use_case(
            lambda: usecases.member_remove(actor=principal, group_id=group_id, user_id=user_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListView(APIView):
    """A scope's invitations (its admins); POST invites an address with a role (never above
    the caller's): the response carries the link once, and it is emailed."""

    @extend_schema(responses={200: InvitationSerializer(many=True)})
    def get(self, request: Request, group_id: str) -> Response:
        scope = _administered(principal_of(request), group_id)
        found = Invitation.objects.filter(scope=scope).select_related("invited_by")
        return Response(InvitationSerializer(found.order_by("-created_at"), many=True).data)

    @extend_schema(request=InvitationSendSerializer, responses={201: SentInvitationSerializer})
    def post(self, request: Request, group_id: str) -> Response:
        form = InvitationSendSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data, principal = form.validated_data, principal_of(request)
        sent = _scope_use_case(
            lambda: usecases.invitation_send(
                actor=principal, group_id=group_id, email=data["email"], role=data["role"],
                lifetime=dt.timedelta(days=data["days"]),
                base_url=request.build_absolute_uri("/").rstrip("/"),
            ),
            field="email",
        )  # fmt: skip
        body = InvitationSerializer(sent.invitation).data
        body["link"] = request.build_absolute_uri(sent.path)
        body["emailed"] = sent.emailed
        return Response(body, status=status.HTTP_201_CREATED)


class InvitationView(APIView):
    """One invitation: DELETE withdraws it (if not yet used)."""

    @extend_schema(request=None, responses={200: InvitationSerializer})
    def delete(self, request: Request, group_id: str, invitation_id: int) -> Response:
        principal = principal_of(request)
        withdrawn = _scope_use_case(
            lambda: usecases.invitation_revoke(
                actor=principal, group_id=group_id, invitation_id=invitation_id
            )
        )
        return Response(InvitationSerializer(withdrawn).data)


class MemberDeactivateView(APIView):
    """Deactivate a member's account from their organisation: sign-in, sessions and keys
    stop at once (keys revoked). The organisation's admins, for members wholly inside it."""

    @extend_schema(request=None, responses={200: DeactivatedSerializer})
    def post(self, request: Request, group_id: str, user_id: int) -> Response:
        principal = principal_of(request)
        revoked = _scope_use_case(
            lambda: usecases.member_deactivate(actor=principal, group_id=group_id, user_id=user_id)
        )
        return Response({"user_id": user_id, "active": False, "keys_revoked": revoked})
