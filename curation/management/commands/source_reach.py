"""Widen or narrow what one source may reach beyond the global allow-lists (operator command)."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from common.errors import PermissionDenied
from curation.models import Source
from curation.usecases import source_reach_change
from tenants import rls
from tenants.selectors import principal_system


class Command(BaseCommand):
    """`source_reach 12 --host wiki.internal --host 10.2.0.0/16 --file-root /srv/x [--remove]`."""

    help = (
        "Let one source reach more hosts (names, *.patterns, CIDR ranges) or file roots than "
        "VERA_SOURCES__ALLOWED_HOSTS / VERA_SOURCES__FILE_ROOTS allow, or take that back "
        "with --remove. Audited in the source's scope."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("source_id", type=int)
        parser.add_argument("--host", action="append", default=[], help="repeatable")
        parser.add_argument("--file-root", action="append", default=[], help="repeatable")
        parser.add_argument("--remove", action="store_true", help="narrow instead of widen")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["host"] and not options["file_root"]:
            raise CommandError("say what to change with --host and/or --file-root")
        group_id = self._group_of(options["source_id"])
        # The system principal reaches only the source's own scope, where the audit goes.
        actor = principal_system("source_reach", group_ids=[group_id])
        try:
            with rls.tenant_context(actor):
                source = source_reach_change(
                    actor=actor,
                    source_id=options["source_id"],
                    hosts=options["host"],
                    file_roots=options["file_root"],
                    remove=options["remove"],
                )
        except (ValueError, PermissionDenied) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"source {source.pk} {source.name!r} reach: {json.dumps(source.reach)}")

    def _group_of(self, source_id: int) -> str:
        with rls.tenant_context(principal_system("source_reach")):
            found = Source.objects.filter(pk=source_id).values_list("group_id", flat=True)
            group_id = found.first()
        if group_id is None:
            raise CommandError(f"no source with id {source_id}")
        return group_id
