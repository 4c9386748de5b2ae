"""Import a workspace's golden queries from JSONL or a BEIR folder."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from retrieval import usecases
from retrieval.usecases import InvalidGolden
from tenants.commands import TenantCommand
from tenants.domain.access import Principal
from tenants.domain.scopes import Role


class Command(TenantCommand):
    help = (
        "Import golden queries into one workspace: --jsonl FILE (key, query, "
        "expected_claim_ids / expected_episodes / expected_texts, as_of) or --beir DIR "
        "(queries.jsonl, qrels/<split>.tsv; judged documents map to episodes by id)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--into", help="the workspace's group id (default: the one --group / user's workspace)"
        )
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--jsonl", type=Path)
        source.add_argument("--beir", type=Path)
        parser.add_argument("--split", default="test", help="BEIR qrels split (default test)")
        parser.add_argument("--limit", type=int, help="BEIR: only the first N judged queries")

    def handle_tenant(self, principal: Principal, **options: Any) -> None:
        group_id = options["into"]
        if group_id is None:
            administered = principal.groups_at_least(Role.ADMIN)
            if len(administered) != 1:
                raise CommandError("name the workspace with --into GROUP_ID")
            group_id = administered[0]
        if not principal.can(Role.ADMIN, group_id):
            raise CommandError(f"importing golden queries needs the admin role in {group_id}")
        try:
            if options["jsonl"]:
                with options["jsonl"].open(encoding="utf-8") as handle:
                    report = usecases.golden_import_jsonl(group_id=group_id, lines=handle)
            else:
                report = usecases.golden_import_beir(
                    group_id=group_id, folder=options["beir"], split=options["split"],
                    limit=options["limit"],
                )  # fmt: skip
        except (InvalidGolden, OSError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"golden queries for {group_id}: {report}")
        for reason in report.skipped[:20]:
            self.stdout.write(f"  skipped {reason}")
