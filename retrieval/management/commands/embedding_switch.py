"""Show or switch the embedding model each workspace is indexed with (an operator's shell)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from retrieval import usecases
from retrieval.models import GroupEmbedding
from retrieval.usecases import SwitchRefused
from tenants import rls
from tenants.commands import checked_groups
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = (
        "Without --provider: list the offered models and each workspace's, with re-embedding "
        "progress. With --group G --provider P --reason R: switch the workspace (audited); "
        "its documents are re-embedded by the worker, or here with --now. With --companion "
        "P (or none): search the workspace with a second offered model too (or no more)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--group", action="append", help="group id (repeatable)")
        parser.add_argument("--provider", help="one of the offered models (VERA_EMBEDDER__*)")
        parser.add_argument(
            "--companion", help="a second offered model to search with too, or 'none'"
        )
        parser.add_argument("--reason", default="", help="why (kept in the audit log)")
        parser.add_argument(
            "--now", action="store_true", help="re-embed here instead of leaving it to the worker"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        catalog = usecases.offered_models()
        groups = options["group"]
        if groups:
            checked_groups(groups)
        if options["provider"] and options["companion"]:
            raise CommandError("switch the model or set the companion, one at a time")
        if options["companion"]:
            self._companion(groups, options)
        if options["provider"]:
            if not groups:
                raise CommandError("name the workspace(s) to switch with --group")
            for group_id in groups:
                actor = principal_system("embedding_switch", group_ids=[group_id])
                with rls.tenant_context(actor):
                    try:
                        switch = usecases.embedding_switch(
                            actor=actor, group_id=group_id, provider=options["provider"],
                            reason=options["reason"],
                        )  # fmt: skip
                    except SwitchRefused as refused:
                        raise CommandError(f"{group_id}: {refused}") from None
                    self.stdout.write(switch.message)
                    while options["now"] and usecases.index_catch_up(group_id=group_id):
                        left, total = usecases.catch_up_progress(group_id)
                        self.stdout.write(f"{group_id}: {total - left} of {total} on the model")
        self._list(catalog, groups)

    def _list(self, catalog: Any, groups: list[str] | None) -> None:
        """The offered models, then each workspace's, with its documents' progress."""
        self.stdout.write(f"offered: {', '.join(catalog.choices())} (default {catalog.default})")
        with rls.tenant_context(principal_system("embedding_switch", group_ids=groups)):
            for pin in GroupEmbedding.objects.order_by("group_id"):
                left, total = usecases.catch_up_progress(pin.group_id)
                line = (
                    f"{pin.group_id}: {pin.provider or '?'} {pin.model} ({pin.dimension}), "
                    f"{total - left} of {total} documents on it"
                )
                if pin.companion in catalog.choices():
                    model = catalog.passage(pin.companion).model
                    missing = usecases.companion_missing(pin.group_id, model).count()
                    line += f"; companion {pin.companion}: {total - missing} of {total}"
                elif pin.companion:
                    line += f"; companion {pin.companion} (not offered)"
                self.stdout.write(line)

    def _companion(self, groups: list[str] | None, options: dict[str, Any]) -> None:
        """Set (or, with "none", remove) the companion model of the named workspaces."""
        if not groups:
            raise CommandError("name the workspace(s) with --group")
        companion = None if options["companion"] == "none" else options["companion"]
        for group_id in groups:
            actor = principal_system("embedding_switch", group_ids=[group_id])
            with rls.tenant_context(actor):
                try:
                    outcome = usecases.embedding_companion(
                        actor=actor, group_id=group_id, provider=companion,
                        reason=options["reason"],
                    )  # fmt: skip
                except SwitchRefused as refused:
                    raise CommandError(f"{group_id}: {refused}") from None
                self.stdout.write(outcome.message)
                while options["now"] and usecases.index_catch_up(group_id=group_id):
                    pass
