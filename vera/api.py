"""What every REST endpoint answers when the database refuses a value: a 4xx, never a 500
(and a 503 when the object store is down: try again).

The services check what they know to check; this is the one place that turns what
only the database can catch (a unique constraint raced past a check, a number out of
its column's range) into a clear client error, with the request's transaction rolled
back. Pagination is bounded and strict, so no query string can ask Postgres for an
impossible LIMIT or OFFSET, and what the schema calls an integer is one. A URL under
the API that matches no route is a JSON 404 like the views' own.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DataError, IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from curation.domain.errors import ObjectStoreUnavailable

# Unique constraints a client can run into, in words.
CONFLICTS = {
    "source_name_per_group": "a source with this name exists in this workspace already",
}
MAX_OFFSET = 1_000_000_000
API_PREFIX = "/api/"


def _constraint(error: Exception) -> str:
    cause = error.__cause__
    diag = getattr(cause, "diag", None)
    return str(getattr(diag, "constraint_name", "") or "")


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, IntegrityError):
        transaction.set_rollback(True)
        name = _constraint(exc)
        detail = CONFLICTS.get(name) or (
            f"this conflicts with an existing record ({name})" if name
            else "this conflicts with an existing record"
        )  # fmt: skip
        return Response({"detail": detail}, status=409)
    if isinstance(exc, RequestDataTooBig):
        # DRF reads a JSON body through request.body, where Django applies its limit.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"detail": f"the request body is larger than {limit} bytes; nothing was read"},
            status=413,
        )
    if isinstance(exc, DataError):
        transaction.set_rollback(True)
        return Response(
            {"detail": "a value is out of range for what can be stored; nothing was changed"},
            status=400,
        )
    if isinstance(exc, ObjectStoreUnavailable):
        transaction.set_rollback(True)
        return Response(
            {"detail": "the object store cannot be reached now; nothing was changed, try again"},
            status=503,
            headers={"Retry-After": "30"},
        )
    return drf_exception_handler(exc, context)


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """`limit` is cut at 500 (as DRF cuts at `max_limit`); an `offset` past any real list
    is a 400 naming the bound, not an OFFSET Postgres cannot hold. Where DRF would quietly
    fall back to its defaults, a value that is not an integer in range is a 400, as the
    schema (`get_schema_operation_parameters`) says."""

    max_limit = 500

    def get_limit(self, request: Request) -> int | None:
        limit = _integer(request, self.limit_query_param, low=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        return _integer(request, self.offset_query_param, low=0, high=MAX_OFFSET) or 0

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        limit, offset = super().get_schema_operation_parameters(view)
        limit["schema"]["minimum"] = 1
        limit["description"] = f"Results per page; more than {self.max_limit} are cut to it."
        offset["schema"].update(minimum=0, maximum=MAX_OFFSET)
        return [limit, offset]


def _integer(request: Request, name: str, *, low: int, high: int | None = None) -> int | None:
    """The query parameter as an integer in [low, high], None when absent; else a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise exceptions.ValidationError({name: ["must be an integer"]}) from None
    if value < low:
        raise exceptions.ValidationError({name: [f"at least {low}"]})
    if high is not None and value > high:
        raise exceptions.ValidationError({name: [f"at most {high}"]})
    return value


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A URL under the API that matches no route (`/claims/abc/history`) answers as the
    API's views do; elsewhere, Django's page."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
