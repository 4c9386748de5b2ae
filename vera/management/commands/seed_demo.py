"""`make run`'s demo: an organisation, a workspace, two users and a little knowledge.

A project command (it lives in `vera`, the top layer) because it drives all three apps:
tenants for the workspace and users, curation for sources, ingestion and the outbox
that fills the search index.

The knowledge is the bundled sample in `demo/` (see demo/README.md), ingested through
the real connectors and the real ingest path. The sample is copied at run time below
`--sources-dir` (default `var/sources/demo/`, git- and docker-ignored), because file
sources may only read below the operator's allowed roots (VERA_SOURCES__FILE_ROOTS;
`var/sources` is one of them in local settings) and because the CMDB export is replayed
in two revisions, which needs a file that changes. Running it again creates nothing:
sources are looked up by name and every artifact already ingested has the same hash.
"""

from __future__ import annotations

import os
import secrets
import shutil
from argparse import ArgumentParser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.db.models import Count

from curation.models import Claim, Source
from curation.tasks import process_outbox
from curation.usecases import IngestReport, ingest_now, source_create, source_update
from retrieval.models import SearchDocument
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.selectors import principal_system
from tenants.usecases import membership_grant, scope_create

DEMO_ORG = "Demo Organisation"
DEMO_WORKSPACE = "Demo Workspace"
USERS = (
    # username, password env var, role on the workspace, Django staff
    ("admin", "VERA_DEMO__ADMIN_PASSWORD", Role.ADMIN, True),
    ("reviewer", "VERA_DEMO__REVIEWER_PASSWORD", Role.REVIEWER, False),
)
SAMPLE = Path(settings.BASE_DIR) / "demo"
SOURCES_DIR = Path(settings.BASE_DIR) / "var" / "sources" / "demo"


@dataclass(frozen=True)
class Run:
    """One ingestion run of a demo source, after its sample file or folder is put in place."""

    source: str
    kind: str  # "markdown": `target` is the folder read; "cmdb": the export file read
    tier: int
    sample: str  # below SAMPLE
    target: str  # below the sources dir


RUNS = (
    Run("CMDB export", "cmdb", 1, "cmdb/export-2025-01.csv", "cmdb/export.csv"),
    Run("Runbooks", "markdown", 3, "runbooks", "runbooks"),
    # Chat-like notes through the Markdown connector: the Slack one needs a Slack server.
    Run("Ops channel notes", "markdown", 4, "chat", "chat"),
    # The refreshed export: payments-api moved from vm-pay-01 to k8s-prod-2.
    Run("CMDB export", "cmdb", 1, "cmdb/export-2025-03.csv", "cmdb/export.csv"),
)
PATH_KEYS = {"markdown": "root", "cmdb": "path"}


class Command(BaseCommand):
    """`make run` calls this; passwords come from env or are generated and printed once."""

    help = "Create a demo workspace with an admin, a reviewer and a small knowledge sample."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--sources-dir",
            type=Path,
            default=SOURCES_DIR,
            help="where the sample is copied for the demo sources to read (an allowed root)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = self._workspace()
        self.stdout.write(f"demo workspace: {workspace}")
        group_id = workspace.group_id
        principal = principal_system("seed_demo", group_ids=[group_id])
        root = options["sources_dir"].absolute()
        try:
            sources = {run.source: _source(principal, group_id, run, root) for run in RUNS}
        except ValueError as error:  # refused: the folder is not below an allowed file root
            self.stderr.write(f"demo knowledge skipped: {error}")
            return
        for run in RUNS:
            _place(SAMPLE / run.sample, root / run.target)
            self._report(run, ingest_now(source_id=sources[run.source], group_id=group_id))
        process_outbox()  # the index and the graph now, so search answers at once
        self._summary(principal)

    @transaction.atomic
    def _workspace(self) -> Scope:
        org = Scope.objects.filter(kind=ScopeKind.ORGANISATION, name=DEMO_ORG).first()
        if org is None:
            org = scope_create(kind=ScopeKind.ORGANISATION, name=DEMO_ORG)
        workspace = Scope.objects.filter(parent=org, name=DEMO_WORKSPACE).first()
        if workspace is None:
            workspace = scope_create(
                kind=ScopeKind.WORKSPACE, name=DEMO_WORKSPACE, parent_id=org.pk
            )
        for username, password_env, role, staff in USERS:
            user_id = self._user(username, password_env, staff=staff)
            membership_grant(user_id=user_id, scope_id=workspace.pk, role=role)
        return workspace

    def _user(self, username: str, password_env: str, *, staff: bool) -> int:
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()
        if user is not None:
            reset = f"python manage.py changepassword {username}"
            self.stdout.write(f"demo user {username!r} exists (reset: {reset})")
            return int(user.pk)
        password = os.environ.get(password_env) or secrets.token_urlsafe(12)
        user = user_model.objects.create_user(
            username=username,
            email=f"{username}@demo.vera.invalid",
            password=password,
            is_staff=staff,
            is_superuser=staff,
        )
        shown = "from $" + password_env if os.environ.get(password_env) else password
        self.stdout.write(f"demo user {username!r} password: {shown} (shown once)")
        return int(user.pk)

    def _report(self, run: Run, report: IngestReport) -> None:
        if report.error:
            self.stderr.write(f"demo source {run.source!r} failed: {report.error}")
            return
        claims = sum(report.claims.values())
        done = f"{report.new} new, {report.unchanged} unchanged, {claims} claims"
        self.stdout.write(f"demo source {run.source!r}: {done}")

    def _summary(self, principal: Principal) -> None:
        with rls.tenant_context(principal):
            by_status = Claim.objects.values("status").annotate(n=Count("pk")).order_by("status")
            statuses = {row["status"]: row["n"] for row in by_status}
            indexed = SearchDocument.objects.count()
        counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
        self.stdout.write(f"demo knowledge: {counts or 'no claims'}; {indexed} searchable")


def _source(principal: Principal, group_id: str, run: Run, root: Path) -> int:
    """The id of the run's source, created (or pointed at `root`) through the use cases."""
    config = {PATH_KEYS[run.kind]: str(root / run.target)}
    with rls.tenant_context(principal):
        source = Source.objects.filter(group_id=group_id, name=run.source).first()
        if source is None:
            source = source_create(
                actor=principal, group_id=group_id, name=run.source, kind=run.kind,
                config=config, trust_tier=run.tier,
            )  # fmt: skip
        elif source.config != config:
            source = source_update(actor=principal, source_id=source.pk, config=config)
    return int(source.pk)


def _place(sample: Path, target: Path) -> None:
    """Copy a sample file to `target`, or a sample folder's files into `target`.

    A file whose bytes are already there is left alone, so its mtime (the Markdown
    connector's cursor) does not move and nothing is fetched again.
    """
    pairs = (
        [(file, target / file.name) for file in sorted(sample.iterdir()) if file.is_file()]
        if sample.is_dir()
        else [(sample, target)]
    )
    for source, destination in pairs:
        destination.parent.mkdir(parents=True, exist_ok=True)
        if not destination.is_file() or destination.read_bytes() != source.read_bytes():
            shutil.copyfile(source, destination)
