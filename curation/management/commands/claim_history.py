"""Show a claim's history: every value its subject and predicate have had."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from curation import selectors
from tenants import rls
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = "Print the supersession history of a claim (operator command)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("claim_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        with rls.tenant_context(principal_system("operator")):
            history = selectors.claim_history(claim_id=options["claim_id"])
            if not history:
                raise CommandError(f"no claim {options['claim_id']}")
            for claim in history:
                until = claim.valid_to.isoformat() if claim.valid_to else "now"
                self.stdout.write(
                    f"#{claim.pk} {claim.status:<14} {claim.valid_from.isoformat()} .. {until}  "
                    f"{claim.fact_text[:100]}"
                )
