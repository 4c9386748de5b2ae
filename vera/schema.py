"""The OpenAPI schema's generator: drf-spectacular's, plus the error responses every
operation can give (401/403 when authenticated, 400 with input, 404 with a path id,
429 when rate limited), documented once here rather than per view; and input schemas
that refuse what the serializers refuse (NUL characters, unknown fields).

Apart from `vera.api`: drf-spectacular imports DRF's generic views, which load the
pagination class from `vera.api` as they are defined.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import ComponentRegistry
from drf_spectacular.utils import Direction
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from .throttling import RateLimitThrottle

DETAIL = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
# DRF's validation errors: a message, or a list of them, per field ("detail" or
# "non_field_errors" when no one field is to blame).
FIELD_ERRORS = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
    },
}
NO_NUL = "^[^\\x00]*$"
# Required, non-blank text that DRF trims: no NUL, and something besides what
# `str.strip` trims (regex \s, plus the separators \x1c-\x1f and \x85).
NOT_BLANK = r"^[^\x00]*[^\s\x00\x1c-\x1f\x85][^\x00]*$"
THROTTLED = {
    "description": "A rate limit ran out (the message names it); retry after Retry-After.",
    "headers": {
        "Retry-After": {
            "description": "whole seconds until one more request fits",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
    "content": {"application/json": {"schema": DETAIL}},
}
ERRORS: dict[str, tuple[str, dict[str, Any]]] = {
    "400": ("A bad parameter or body: a message for each offending field.", FIELD_ERRORS),
    "401": ("No credentials, or invalid, expired or revoked ones.", DETAIL),
    "403": ("The caller's role does not allow this.", DETAIL),
    "404": ("Nothing with this id is visible to the caller.", DETAIL),
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema, plus the error responses each operation can give."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str,
        registry: ComponentRegistry,
    ) -> dict[str, Any] | None:  # fmt: skip
        operation: dict[str, Any] | None = super().get_operation(
            path, path_regex, path_prefix, method, registry
        )
        if operation is None:
            return None
        locations = {parameter["in"] for parameter in operation.get("parameters", [])}
        codes = []
        if "query" in locations or "requestBody" in operation:
            codes.append("400")
        if not all(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            codes += ["401", "403"]
        if "path" in locations:
            codes.append("404")
        responses = operation["responses"]
        for code in codes:
            description, schema = ERRORS[code]
            # A view's own description of the error is kept; the body is the same everywhere.
            response = responses.setdefault(code, {"description": description})
            response.setdefault("content", {"application/json": {"schema": schema}})
        return operation

    def _map_serializer_field(
        self, field: serializers.Field[Any, Any, Any, Any], direction: Direction,
        bypass_extensions: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        # drf-spectacular leaves its mapping methods unannotated.
        schema: dict[str, Any] = super()._map_serializer_field(  # type: ignore[no-untyped-call]
            field, direction, bypass_extensions
        )
        # DRF's CharField refuses a NUL character (Postgres cannot store one in text).
        if direction == "request" and isinstance(field, serializers.CharField):
            blank_refused = not field.allow_blank and field.trim_whitespace
            schema.setdefault("pattern", NOT_BLANK if blank_refused else NO_NUL)
        return schema

    def _map_basic_serializer(
        self, serializer: serializers.Serializer[Any], direction: Direction
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(  # type: ignore[no-untyped-call]
            serializer, direction
        )
        if direction == "request" and getattr(serializer, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        # Two names for one value (common.api_scope): exactly one of them is asked for.
        if direction == "request" and (names := getattr(serializer, "names_one_of", ())):
            schema["oneOf"] = [{"required": [name]} for name in names]
        return schema

    def _get_response_bodies(self, direction: Direction = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        limited = any(
            isinstance(throttle, RateLimitThrottle)
            and throttle.budget(self.view, self.method) is not None
            for throttle in self.view.get_throttles()
        )
        if limited and direction == "response":
            responses.setdefault("429", THROTTLED)
        return responses


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]  # untyped
    """`Authorization: Bearer vera_<prefix>_<secret>`: a workspace API key."""

    target_class = "tenants.api.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from the portal's API keys page: vera_<prefix>_<secret>.",
        }


class OidcScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]  # untyped
    """`Authorization: Bearer <access token>` from the configured OIDC provider."""

    target_class = "tenants.api.oidc.OIDCBearerAuthentication"
    name = "oidc"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "An access token of the provider VERA_OIDC__ISSUER names (when set).",
        }
