"""Read stored documents again through today's extractors.

    python manage.py reprocess --source 12 [--source 14]   # these sources
    python manage.py reprocess --workspace w:acme:payments   # every source of a workspace
    python manage.py reprocess --outdated                    # everything an older version read

Runs in this process and prints progress; a run interrupted (Ctrl-C, a crash, SIGKILL)
resumes where its last batch committed when the command runs again, and a finished one
does nothing more. `--everything` reads documents the current version already read.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from common.commands import reporter_for
from curation.domain.sources import AGENT_KIND
from curation.models import Reprocessing, Source
from curation.usecases import ReprocessRefused, reprocess_begin, reprocess_now, reprocess_outdated
from tenants import rls
from tenants.selectors import principal_system


class Command(BaseCommand):
    """Exits non-zero when a run failed (its reason printed); what it committed stays."""

    help = "Reprocess stored documents with today's extractors (operator command)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--source", action="append", help="source id or name (repeatable)")
        which.add_argument("--workspace", help="every source of this workspace (group id)")
        which.add_argument(
            "--outdated", action="store_true", help="every source with a document read by an "
            "older extraction version",
        )  # fmt: skip
        parser.add_argument(
            "--everything", action="store_true",
            help="also read documents the current version already read",
        )  # fmt: skip
        parser.add_argument("--reason", default="", help="kept with the run and in the audit log")
        parser.add_argument("--batch", type=int, default=20, help="documents per commit")
        parser.add_argument(
            "--progress-every", type=float, metavar="SECONDS",
            help="when not on a terminal, print a progress line this often (default 10)",
        )  # fmt: skip

    def _sources(self, options: dict[str, Any]) -> list[Source]:
        with rls.tenant_context(principal_system("operator")):
            sources = Source.objects.exclude(kind=AGENT_KIND).order_by("pk")
            if options["workspace"]:
                chosen = list(sources.filter(group_id=options["workspace"]))
                if not chosen:
                    raise CommandError(f"no source in workspace {options['workspace']!r}")
                return chosen
            if options["outdated"]:
                return reprocess_outdated()
            chosen = []
            for ident in options["source"]:
                matches = list(
                    sources.filter(pk=int(ident)) if ident.isdigit() else sources.filter(name=ident)
                )
                if len(matches) != 1:
                    raise CommandError(f"{len(matches)} sources match {ident!r}; use the id")
                chosen.extend(matches)
            return chosen

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        sources = self._sources(options)
        if not sources:
            self.stdout.write("nothing to reprocess: every document was read by today's version")
            return
        failed = []
        for source in sources:
            run = self._run(source, options)
            counts = ", ".join(
                f"{key} {value}" for key, value in sorted(run.counts.items()) if key != "failures"
            )
            self.stdout.write(
                f"source {source.pk} ({source.name}): run {run.pk} {run.status}, "
                f"{run.total} documents due; {counts or 'nothing to do'}"
            )
            for external_id, reason in run.counts.get("failures", [])[:20]:
                self.stdout.write(f"  failed {external_id}: {reason}")
            if run.status == Reprocessing.Status.FAILED:
                failed.append(f"source {source.pk}: {run.error}")
        if failed:
            raise CommandError("reprocessing failed: " + "; ".join(failed))

    def _run(self, source: Source, options: dict[str, Any]) -> Reprocessing:
        principal = principal_system("operator", group_ids=[source.group_id])
        with rls.tenant_context(principal):
            try:
                run = reprocess_begin(
                    actor=principal, source=source, everything=options["everything"],
                    reason=options["reason"],
                )  # fmt: skip
            except ReprocessRefused as error:
                raise CommandError(str(error)) from None
        progress = reporter_for(self, unit="documents", every=options["progress_every"])

        def on_batch(current: Reprocessing) -> None:
            counts = {k: v for k, v in current.counts.items() if isinstance(v, int)}
            progress.update(int(current.counts.get("documents", 0)), current.total, counts)

        run = reprocess_now(
            run_id=run.pk, group_id=source.group_id, on_batch=on_batch, batch=options["batch"]
        )
        progress.finish()
        return run
