"""Base for management commands over tenant data: they run as a user or for groups.

Not an entrypoint (no command is declared here), so every app's `management/` may use it.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.selectors import principal_for_user


class TenantCommand(BaseCommand):
    """Adds `--as-user USERNAME` or `--group GROUP_ID` and runs `handle_tenant` under RLS."""

    def add_arguments(self, parser: ArgumentParser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--as-user", help="act with this user's memberships")
        who.add_argument(
            "--group", action="append", help="act as an operator on this group id (repeatable)"
        )

    def principal(self, options: dict[str, Any]) -> Principal:
        if options["as_user"]:
            user = get_user_model().objects.filter(username=options["as_user"]).first()
            if user is None:
                raise CommandError(f"no user named {options['as_user']!r}")
            return principal_for_user(user.pk, label=f"command:{user.get_username()}")
        groups = checked_groups(options["group"])
        return Principal(label="command:operator", roles=dict.fromkeys(groups, Role.OWNER))

    def handle(self, *args: Any, **options: Any) -> None:
        with rls.tenant_context(self.principal(options)) as principal:
            self.handle_tenant(principal, **options)

    def handle_tenant(self, principal: Principal, **options: Any) -> None:
        raise NotImplementedError


def checked_groups(groups: list[str]) -> list[str]:
    """The given group ids, or a CommandError naming those that do not exist."""
    known = set(Scope.objects.filter(group_id__in=groups).values_list("group_id", flat=True))
    if unknown := sorted(set(groups) - known):
        raise CommandError(f"unknown group id(s): {', '.join(unknown)}")
    return groups
