"""Rebuild the graph projection from Postgres (the record)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from curation import bootstrap
from curation.services.projection import graph_rebuild
from tenants import rls
from tenants.selectors import principal_system


class Command(BaseCommand):
    help = "Clear the graph and replay every published claim into it."

    def handle(self, *args: Any, **options: Any) -> None:
        with rls.tenant_context(principal_system("graph-rebuild")):
            count = graph_rebuild(graph=bootstrap.providers().graph())
        self.stdout.write(f"projected {count} published claims")
