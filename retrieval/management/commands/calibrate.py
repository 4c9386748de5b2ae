"""Calibrate blend weights from logged votes, as the nightly job does, from a shell."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.utils import timezone

from retrieval.selectors import groups_with_votes
from retrieval.tasks import calibrate_groups, learning_window
from tenants.commands import checked_groups


class Command(BaseCommand):
    help = (
        "Calibrate each workspace with votes in the window (or --group G); "
        "--activate activates a candidate that passes the guard and the golden set."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--group", action="append", help="group id (repeatable)")
        parser.add_argument(
            "--activate",
            action="store_true",
            help="activate the candidate (unless the golden set scores it lower)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        groups = options["group"]
        if groups:
            checked_groups(groups)
        else:
            groups = groups_with_votes(timezone.now() - learning_window())
            if not groups:
                self.stdout.write("no workspace has votes in the window; nothing to calibrate")
                return
        outcomes = calibrate_groups(groups, trigger="command", activate=options["activate"])
        for group_id, outcome in outcomes.items():
            self.stdout.write(f"{group_id}: {outcome}")
