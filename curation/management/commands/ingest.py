"""Ingest one source now: `python manage.py ingest <source id or name> [--path DIR]`."""

from __future__ import annotations

import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from curation.models import Source
from curation.tasks import ingest_now
from tenants import rls
from tenants.selectors import principal_system

PATH_KEYS = {"markdown": "root", "cmdb": "path"}


class Command(BaseCommand):
    """Runs in this process and prints what happened; exits non-zero if the run failed."""

    help = "Ingest a source now (operator command)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("source", help="source id or name")
        parser.add_argument("--path", help="read this folder/file instead of the configured one")

    def _source(self, ident: str) -> Source:
        with rls.tenant_context(principal_system("operator")):
            matches = list(
                Source.objects.filter(pk=int(ident))
                if ident.isdigit()
                else Source.objects.filter(name=ident)
            )
        if len(matches) != 1:
            raise CommandError(f"{len(matches)} sources match {ident!r}; use the id")
        return matches[0]

    def handle(self, *args: Any, **options: Any) -> None:
        source = self._source(options["source"])
        if options["path"]:
            key = PATH_KEYS.get(source.kind)
            if key is None:
                raise CommandError(f"--path does not apply to {source.kind} sources")
            with rls.tenant_context(principal_system("operator", group_ids=[source.group_id])):
                Source.objects.filter(pk=source.pk).update(
                    config={**source.config, key: options["path"]}
                )
        started = time.perf_counter()
        report = ingest_now(source_id=source.pk, group_id=source.group_id)
        elapsed = time.perf_counter() - started
        claims = ", ".join(f"{k} {v}" for k, v in sorted(report.claims.items())) or "none"
        self.stdout.write(
            f"source {source.pk}: {report.new} new, {report.unchanged} unchanged, "
            f"{report.failed} failed episodes; claims: {claims}; {elapsed:.1f} s"
        )
        for external_id, reason in report.failures[:20]:
            self.stdout.write(f"  failed {external_id}: {reason}")
        if report.error:
            raise CommandError(f"run failed: {report.error}")
