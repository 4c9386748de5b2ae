"""`scope=` on every list: the rows of that scope and the scopes under it, one rule.

A list endpoint that takes `scope` narrows row-level security to the scope the caller
names, as search does (`tenants.selectors.principal_within`): a scope the caller has no
role in is a 404, never data and never silently the caller's own rows. A list that
cannot narrow answers 400 for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from tenants import rls
from tenants import selectors as tenant_selectors
from tenants.domain.access import Principal
from tenants.principals import principal_of

MAX_GROUP_ID = 40
SCOPE_PARAMETER = OpenApiParameter(
    "scope", {"type": "string", "minLength": 1, "maxLength": MAX_GROUP_ID},
    OpenApiParameter.QUERY, required=False,
    description="only rows of this scope and the scopes under it (a group id the caller "
    "has a role in, or reads: else 404)",
)  # fmt: skip


@contextmanager
def narrowed(principal: Principal, scope: str | None) -> Iterator[Principal]:
    """Row-level security narrowed to `scope` (and what is under it) for the block,
    yielding the narrowed principal; the caller's own when `scope` is None."""
    if scope is None:
        yield principal
        return
    if not scope or len(scope) > MAX_GROUP_ID:
        raise exceptions.ValidationError({"scope": "a group id of at most 40 characters"})
    within = tenant_selectors.principal_within(principal, scope)
    if within is None:
        raise exceptions.NotFound("no such scope visible to the caller")
    with rls.tenant_context(within):
        yield within


@contextmanager
def request_narrowed(request: Request) -> Iterator[Principal]:
    """`narrowed` for the request's principal and its `scope` query parameter."""
    with narrowed(principal_of(request), request.query_params.get("scope")) as principal:
        yield principal


class ScopeNarrowedList:
    """For a generic list view: `scope=` narrows it (see the module docstring). The view
    names SCOPE_PARAMETER in its schema (`scoped_list_schema`, or its own `get`'s)."""

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        with request_narrowed(request):
            listed: Response = super().list(request, *args, **kwargs)  # type: ignore[misc]
            return listed


NOT_VISIBLE = OpenApiResponse(description="`scope` names no scope visible to the caller")


def scoped_list_schema[V: type[Any]](view: V) -> V:
    """Document `scope` (and its 404) on a list view whose `get` is the generic one."""
    listed = view.serializer_class(many=True)
    return extend_schema_view(
        get=extend_schema(parameters=[SCOPE_PARAMETER], responses={200: listed, 404: NOT_VISIBLE})
    )(view)
