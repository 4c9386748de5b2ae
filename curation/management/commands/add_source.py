"""Add a source to a scope (operator command)."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from common.errors import PermissionDenied
from curation.models import CONNECTOR_KINDS
from curation.usecases import source_create
from tenants.commands import TenantCommand
from tenants.domain.access import Principal


class Command(TenantCommand):
    """`add_source --group w:... --name docs --kind markdown --tier 1 --config JSON`."""

    help = (
        "Create a source through the same checks as the API (allow-listed hosts, file roots, "
        "and a --token-env with the operator's prefix); its secret stays in that variable."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--name", required=True)
        parser.add_argument("--kind", required=True, choices=CONNECTOR_KINDS)
        parser.add_argument("--tier", required=True, type=int, choices=[1, 2, 3, 4])
        parser.add_argument("--config", default="{}", help="connector settings as a JSON object")
        parser.add_argument(
            "--token-env", default="", help="name of the env var holding the secret"
        )
        parser.add_argument("--schedule", type=int, default=None, help="run every N seconds")
        parser.add_argument("--in-group", help="target group id (default: the first --group)")

    def handle_tenant(self, principal: Principal, **options: Any) -> None:
        try:
            config = json.loads(options["config"])
        except json.JSONDecodeError as error:
            raise CommandError(f"--config is not valid JSON: {error}") from None
        group_id = options["in_group"] or (options["group"] or [None])[0]
        if not group_id:
            raise CommandError("say which group the source belongs to with --in-group")
        try:
            source = source_create(
                actor=principal,
                group_id=group_id,
                name=options["name"],
                kind=options["kind"],
                config=config,
                trust_tier=options["tier"],
                token_env=options["token_env"],
                schedule_seconds=options["schedule"],
            )
        except (ValueError, PermissionDenied) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"source {source.pk} {source.name!r} created in {group_id}")
