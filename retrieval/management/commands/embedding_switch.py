"""Show or switch the embedding model each workspace is indexed with (an operator's shell)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from retrieval import bootstrap
from retrieval.models import GroupEmbedding
from retrieval.services.embedding import SwitchRefused, catch_up_progress, embedding_switch
from retrieval.services.index import index_catch_up
from tenants import rls
from tenants.management.tenant_command import checked_groups
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = (
        "Without --provider: list the offered models and each workspace's, with re-embedding "
        "progress. With --group G --provider P --reason R: switch the workspace (audited); "
        "its documents are re-embedded by the worker, or here with --now."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--group", action="append", help="group id (repeatable)")
        parser.add_argument("--provider", help="one of the offered models (VERA_EMBEDDER__*)")
        parser.add_argument("--reason", default="", help="why (kept in the audit log)")
        parser.add_argument(
            "--now", action="store_true", help="re-embed here instead of leaving it to the worker"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        catalog = bootstrap.providers().embedders()
        groups = options["group"]
        if groups:
            checked_groups(groups)
        if options["provider"]:
            if not groups:
                raise CommandError("name the workspace(s) to switch with --group")
            for group_id in groups:
                actor = principal_system("embedding_switch", group_ids=[group_id])
                with rls.tenant_context(actor):
                    try:
                        switch = embedding_switch(
                            actor=actor, group_id=group_id, provider=options["provider"],
                            catalog=catalog, reason=options["reason"],
                        )  # fmt: skip
                    except SwitchRefused as refused:
                        raise CommandError(f"{group_id}: {refused}") from None
                    self.stdout.write(switch.message)
                    while options["now"] and index_catch_up(group_id=group_id, catalog=catalog):
                        left, total = catch_up_progress(group_id)
                        self.stdout.write(f"{group_id}: {total - left} of {total} on the model")
        self.stdout.write(f"offered: {', '.join(catalog.choices())} (default {catalog.default})")
        with rls.tenant_context(principal_system("embedding_switch", group_ids=groups)):
            for pin in GroupEmbedding.objects.order_by("group_id"):
                left, total = catch_up_progress(pin.group_id)
                self.stdout.write(
                    f"{pin.group_id}: {pin.provider or '?'} {pin.model} ({pin.dimension}), "
                    f"{total - left} of {total} documents on it"
                )
