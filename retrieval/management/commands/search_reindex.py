"""Rebuild the search index from published claims (after a model change, a restore)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from common.commands import reporter_for
from retrieval import usecases
from retrieval.models import GroupEmbedding, SearchDocument
from tenants import rls
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = "Re-embed and re-index claims; --group limits it, --reset-model re-pins the model."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--group", action="append", help="group id (repeatable)")
        parser.add_argument(
            "--reset-model",
            action="store_true",
            help="drop the group's index and model pin first: it is rebuilt with the default "
            "model (to change one workspace's model, `embedding_switch` keeps it searchable)",
        )
        parser.add_argument(
            "--progress-every",
            type=float,
            metavar="SECONDS",
            help="when not on a terminal, print a progress line this often (default 10)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        principal = principal_system("reindex", group_ids=options["group"])
        progress = reporter_for(self, unit="claims", every=options["progress_every"])
        with rls.tenant_context(principal):
            if options["reset_model"]:
                SearchDocument.objects.all().delete()
                GroupEmbedding.objects.all().delete()
            # Each workspace with its own model (its pin; after --reset-model the default).
            count = usecases.index_rebuild(on_progress=progress.update)
        progress.finish()
        self.stdout.write(f"indexed {count} claims")
