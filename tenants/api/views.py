"""REST endpoints: who am I, API keys (issue, rotate, revoke), the audit trail."""

from __future__ import annotations

from typing import Protocol

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tenants import selectors
from tenants.api.serializers import (
    ApiKeyIssueSerializer,
    ApiKeySerializer,
    AuditEventSerializer,
    IssuedKeySerializer,
    MeSerializer,
)
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.middleware import request_principal
from tenants.models import ApiKey, AuditEvent, Scope
from tenants.services import api_keys
from tenants.services.scopes import PermissionDenied


def principal_of(request: Request) -> Principal:
    """The authenticated principal: a key's or token's, else the session user's."""
    if isinstance(request.auth, Principal):
        return request.auth
    return request_principal(request._request)


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


class ApiKeyListView(generics.ListAPIView[ApiKey]):
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
            issued = api_keys.api_key_issue(
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
        issued = _key_action(request, key_id, api_keys.api_key_rotate)
        return Response(IssuedKeySerializer.render(issued), status=status.HTTP_201_CREATED)


class ApiKeyRevokeView(APIView):
    """Revoke a key; it fails on the very next request."""

    @extend_schema(request=None, responses={200: ApiKeySerializer})
    def post(self, request: Request, key_id: int) -> Response:
        return Response(
            ApiKeySerializer(_key_action(request, key_id, api_keys.api_key_revoke)).data
        )


class AuditEventListView(generics.ListAPIView[AuditEvent]):
    """Audit events of the scopes the caller administers, newest first."""

    serializer_class = AuditEventSerializer

    def get_queryset(self) -> QuerySet[AuditEvent]:
        return selectors.audit_events(principal_of(self.request))
