"""The audit trail's one write path."""

from __future__ import annotations

from typing import Any

from tenants.domain.access import Principal
from tenants.models import AuditEvent


def audit_record(
    *,
    principal: Principal,
    group_id: str,
    action: str,
    target: tuple[str, object] | None = None,
    data: dict[str, Any] | None = None,
    ip_address: str | None = None,
) -> AuditEvent:
    """Append one event in `group_id` (inside the caller's transaction and RLS context)."""
    target_type, target_id = target if target else ("", "")
    return AuditEvent.objects.create(
        group_id=group_id,
        actor_id=principal.user_id,
        actor_label=principal.label,
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        data=data or {},
        ip_address=ip_address,
    )
