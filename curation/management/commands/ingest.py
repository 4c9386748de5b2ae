"""Ingest one source now: `python manage.py ingest <source id or name> [--path DIR]`."""

from __future__ import annotations

import time
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from common.commands import reporter_for
from curation.models import Source
from curation.usecases import IngestReport, ingest_now, ingest_pressure, source_update
from kernel.progress import ProgressReporter
from tenants import rls
from tenants.selectors import principal_system

PATH_KEYS = {"markdown": "root", "cmdb": "path"}


class Command(BaseCommand):
    """Runs in this process and prints what happened; exits non-zero if the run failed."""

    help = "Ingest a source now (operator command)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("source", help="source id or name")
        parser.add_argument("--path", help="read this folder/file instead of the configured one")
        parser.add_argument(
            "--progress-every",
            type=float,
            metavar="SECONDS",
            help="when not on a terminal, print a progress line this often (default 10)",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="ingest even while the projection lane is degraded (backpressure)",
        )

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

    def _check_pressure(self, *, force: bool) -> None:
        """Refuse while the projection lane is degraded (VERA_BACKPRESSURE__INGEST=defer).

        Refused rather than queued: an operator at this command waits for its counts, and
        the source's own schedule already runs it once the lane drains.
        """
        if force or settings.VERA_BACKPRESSURE__INGEST != "defer":
            return
        if reason := ingest_pressure(now=timezone.now()):
            raise CommandError(
                f"ingestion deferred, the outbox is behind: {reason}. The scheduler runs the "
                "source once the lane drains; --force ingests now anyway."
            )

    def _ingest(self, source: Source, progress: ProgressReporter) -> IngestReport:
        """The worker's run (`ingest_now`), with a progress callback on every page."""

        def on_progress(report: IngestReport) -> None:
            progress.update(
                report.records,
                counts={
                    "new": report.new,
                    "unchanged": report.unchanged,
                    "failed": report.failed,
                    "pages": report.pages,
                },
            )

        return ingest_now(source_id=source.pk, group_id=source.group_id, on_progress=on_progress)

    def handle(self, *args: Any, **options: Any) -> None:
        source = self._source(options["source"])
        if options["path"]:
            key = PATH_KEYS.get(source.kind)
            if key is None:
                raise CommandError(f"--path does not apply to {source.kind} sources")
            # The source's own change (checked against its policy, audited), as an admin's
            # edit would be: a path outside the allowed roots is refused, not read.
            operator = principal_system("operator", group_ids=[source.group_id])
            try:
                with rls.tenant_context(operator):
                    source = source_update(
                        actor=operator, source_id=source.pk,
                        config={**source.config, key: options["path"]},
                    )  # fmt: skip
            except ValueError as error:
                raise CommandError(f"--path refused: {error}") from None
        self._check_pressure(force=options["force"])
        started = time.perf_counter()
        progress = reporter_for(self, unit="records", every=options["progress_every"])
        report = self._ingest(source, progress)
        progress.finish()
        if report.skipped:
            raise CommandError(f"not run: {report.skipped}")
        elapsed = time.perf_counter() - started
        claims = ", ".join(f"{k} {v}" for k, v in sorted(report.claims.items())) or "none"
        self.stdout.write(
            f"source {source.pk}: {report.new} new, {report.unchanged} unchanged, "
            f"{report.failed} failed episodes in {report.pages} pages; claims: {claims}; "
            f"{elapsed:.1f} s"
        )
        for external_id, reason in report.failures[:20]:
            self.stdout.write(f"  failed {external_id}: {reason}")
        if report.error:
            raise CommandError(f"run failed: {report.error}")
        if report.stopped:
            raise CommandError(f"run stopped: {report.stopped}")
