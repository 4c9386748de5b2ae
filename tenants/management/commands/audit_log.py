"""Print recent audit events of the groups the caller acts for."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from tenants import selectors
from tenants.commands import TenantCommand
from tenants.domain.access import Principal


class Command(TenantCommand):
    """`python manage.py audit_log --group w:... [--limit 50]`."""

    help = "Show recent audit events (row-level security applies)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--limit", type=int, default=50)

    def handle_tenant(self, principal: Principal, **options: Any) -> None:
        for event in selectors.audit_events(principal)[: options["limit"]]:
            self.stdout.write(
                f"{event.created_at:%Y-%m-%d %H:%M:%S} {event.group_id} "
                f"{event.actor_label} {event.action} {event.target_type}:{event.target_id}"
            )
