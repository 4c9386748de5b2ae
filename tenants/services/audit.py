"""The audit trail's one write path."""

from __future__ import annotations

from typing import Any

from tenants.domain.access import Principal
from tenants.models import AuditEvent


def audit_record(
    *,
    actor: Principal,
    group_id: str,
    action: str,
    target: tuple[str, object] | None = None,
    data: dict[str, Any] | None = None,
    ip_address: str | None = None,
) -> AuditEvent:
    """Append one event in `group_id` (inside the caller's transaction and RLS context).

    `actor` is who did it (a user, an API key or a system job), as everywhere a
    service writes on someone's behalf.
    """
    target_type, target_id = target if target else ("", "")
    return AuditEvent.objects.create(
        group_id=group_id,
        actor_id=actor.user_id,
        actor_label=actor.label,
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        data=data or {},
        ip_address=ip_address,
    )
