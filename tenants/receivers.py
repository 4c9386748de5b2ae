"""Signal receivers: sign-ins and sign-outs go to the audit trail."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.dispatch import receiver
from django.http import HttpRequest

from tenants import rls
from tenants.selectors import principal_for_user
from tenants.usecases import audit_record, personal_scope_ensure


def _record(action: str, request: HttpRequest | None, user: Any) -> None:
    if user is None or not getattr(user, "pk", None):
        return
    scope = personal_scope_ensure(user_id=user.pk, username=user.get_username())
    principal = principal_for_user(user.pk, label=f"user:{user.get_username()}")
    with rls.tenant_context(principal):
        audit_record(
            actor=principal,
            group_id=scope.group_id,
            action=action,
            target=("user", user.pk),
            data={"backend": getattr(user, "backend", "")} if action == "auth.sign_in" else {},
            ip_address=request.META.get("REMOTE_ADDR") if request is not None else None,
        )


@receiver(user_logged_in, dispatch_uid="tenants.audit_sign_in")
def audit_sign_in(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    _record("auth.sign_in", request, user)


@receiver(user_logged_out, dispatch_uid="tenants.audit_sign_out")
def audit_sign_out(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    _record("auth.sign_out", request, user)
