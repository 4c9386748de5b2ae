"""Open a deployment's organisation and name its first owner."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from common.errors import NotFound
from tenants.usecases import organisation_create


class Command(BaseCommand):
    """`python manage.py create_organisation --name "Acme" --owner alice@example.org`."""

    help = (
        "Open an organisation with its first owner (an active user's username or email), "
        "who then opens workspaces and invites colleagues. Audited in the organisation."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--name", required=True, help="the organisation's name")
        parser.add_argument("--owner", required=True, help="username or email of its owner")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            scope = organisation_create(
                name=options["name"], owner=options["owner"], by="command:create_organisation"
            )
        except NotFound as error:
            raise CommandError(f"{error}: {options['owner']!r}") from None
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"{scope.group_id} {scope.name} (owner: {options['owner']})")
