"""What every app's Django admin shares: rows only use cases write, actions per row.

The admin is an entrypoint like any other: what a use case writes is read-only there,
and the actions call the use cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import admin, messages
from django.db.models import Model
from django.http import HttpRequest

from common.errors import NotFound, PermissionDenied


class WrittenByServices:
    """For rows only use cases write: shown, never added, edited or deleted by hand.

    Refused to everyone, superusers included, so no lifecycle field (a status, a
    validity, a grade, a role) changes without its audit event and outbox job.
    Mixed into a ModelAdmin or an inline; decisions are actions calling the use cases.
    """

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


def apply_each(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    ids: Iterable[int],
    use_case: Callable[[int], object],
    *,
    done: str,
) -> None:
    """Run a use case per selected row; a refusal (ValueError, PermissionDenied) skips one.

    Each use case is atomic, so a refused row leaves nothing behind and the rest go on.
    """
    count, refused = 0, []
    for pk in ids:
        try:
            use_case(pk)
        except (ValueError, PermissionDenied, NotFound) as error:
            refused.append(f"#{pk}: {error}")
        else:
            count += 1
    model_admin.message_user(request, f"{count} {done}.", messages.SUCCESS)
    if refused:
        model_admin.message_user(
            request, f"{len(refused)} refused: " + "; ".join(refused[:10]), messages.WARNING
        )
