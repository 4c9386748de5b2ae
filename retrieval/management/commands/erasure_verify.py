"""Prove an erasure complete: nothing of the erased content remains anywhere it could."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from curation.models import Tombstone
from retrieval import usecases
from tenants import rls
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = (
        "Scan Postgres (by ids in every table that holds them, by fingerprint in every text "
        "column), the graph, the object store and the embedding caches for anything of an "
        "erased source or episode. Exits non-zero, listing it, if anything remains."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("tombstone", type=int, help="the tombstone's id")

    def handle(self, *args: Any, **options: Any) -> None:
        with rls.tenant_context(principal_system("erasure_verify")):
            tombstone = Tombstone.objects.filter(pk=options["tombstone"]).first()
        if tombstone is None:
            raise CommandError(f"no tombstone {options['tombstone']}")
        with rls.tenant_context(principal_system("erasure_verify", group_ids=[tombstone.group_id])):
            residue = usecases.erasure_verify(tombstone)
        if not residue.clean:
            lines = [f"  {name}: {', '.join(ids)}" for name, ids in residue.found.items()]
            raise CommandError(
                f"erasure of {tombstone.kind} {tombstone.target_id} is NOT complete "
                f"(tombstone {tombstone.pk}, {tombstone.status}); still found:\n" + "\n".join(lines)
            )
        self.stdout.write(
            f"erasure of {tombstone.kind} {tombstone.target_id} is complete: nothing of it "
            f"remains (tombstone {tombstone.pk}, {tombstone.status})."
        )
