"""Rebuild the graph projection from Postgres (the record), wholly or group by group."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from common.commands import reporter_for
from curation.usecases import graph_replay
from tenants.commands import checked_groups


class Command(BaseCommand):
    help = (
        "Replay every claim that is or was valid into the graph: all groups (the graph is "
        "cleared first), or with --group G only those groups (others are not touched), "
        "their graph jobs paused meanwhile and caught up after."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--group", action="append", help="group id (repeatable)")
        parser.add_argument(
            "--progress-every",
            type=float,
            metavar="SECONDS",
            help="when not on a terminal, print a progress line this often (default 10)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        groups = options["group"]
        if groups:
            checked_groups(groups)
        progress = reporter_for(self, unit="claims", every=options["progress_every"])
        count = graph_replay(group_ids=groups or [], on_progress=progress.update)
        progress.finish()
        where = f"groups {', '.join(groups)}" if groups else "all groups"
        self.stdout.write(f"projected {count} claims of {where}")
