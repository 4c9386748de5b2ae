"""What every REST endpoint answers when the database refuses a value: a 4xx, never a 500.

The services check what they know to check; this is the one place that turns what
only the database can catch (a unique constraint raced past a check, a number out of
its column's range) into a clear client error, with the request's transaction rolled
back. Pagination is bounded, so no query string can ask Postgres for an impossible
LIMIT or OFFSET.
"""

from __future__ import annotations

from typing import Any

from django.db import DataError, IntegrityError, transaction
from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

# Unique constraints a client can run into, in words.
CONFLICTS = {
    "source_name_per_group": "a source with this name exists in this workspace already",
}
MAX_OFFSET = 1_000_000_000


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
    if isinstance(exc, DataError):
        transaction.set_rollback(True)
        return Response(
            {"detail": "a value is out of range for what can be stored; nothing was changed"},
            status=400,
        )
    return drf_exception_handler(exc, context)


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """`limit` is cut at 500 (as DRF cuts at `max_limit`); an `offset` past any real list
    is a 400 naming the bound, not an OFFSET Postgres cannot hold."""

    max_limit = 500

    def get_offset(self, request: Request) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            raise exceptions.ValidationError({"offset": [f"at most {MAX_OFFSET}"]})
        return offset
