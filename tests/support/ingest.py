"""Documents ingested through the real pipeline: Markdown files, a source, ingest, outbox."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from pathlib import Path

from curation.services.ingest import IngestReport
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from tests.support.tenancy import Tenant, cmdb_source, markdown_source


def write_at(root: Path, name: str, text: str, at: dt.datetime) -> None:
    """A file whose modification time is `at` (the Markdown connector's record time)."""
    (root / name).write_text(text, encoding="utf-8")
    os.utime(root / name, (at.timestamp(), at.timestamp()))


def write_files(root: Path, files: Mapping[str, str], *, at: dt.datetime | None = None) -> None:
    """Write `files` (name: text) under `root`, creating it; modified at `at` when given
    (the Markdown connector's record time)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        if at is None:
            (root / name).write_text(text, encoding="utf-8")
        else:
            write_at(root, name, text, at)


def drain_outbox(consumer: str | None = None) -> None:
    """Run the outbox (every consumer, or the one named) until no job is due."""
    while process_outbox(consumer=consumer):
        pass


def ingest_run(*, source_id: int, group_id: str) -> IngestReport:
    """One ingestion run of the source through the real pipeline, the outbox left to the
    test; a run that reports an error fails the test."""
    report = ingest_now(source_id=source_id, group_id=group_id)
    assert not report.error, report.error
    return report


def ingest_folder(
    tenant: Tenant,
    root: Path,
    files: Mapping[str, str] | None = None,
    *,
    tier: int = 1,
    name: str = "docs",
    at: dt.datetime | None = None,
) -> IngestReport:
    """Write `files` under `root` (see `write_files`) and ingest the folder as the tenant
    admin's Markdown source of `tier` (`ingest_run`): claims are written, the outbox's
    graph and index jobs are left pending."""
    write_files(root, files or {}, at=at)
    source_id = markdown_source(tenant, root, tier=tier, name=name)
    return ingest_run(source_id=source_id, group_id=tenant.workspace.group_id)


def ingest_markdown(
    tenant: Tenant,
    root: Path,
    files: Mapping[str, str],
    *,
    tier: int = 1,
    name: str = "docs",
    at: dt.datetime | None = None,
) -> int:
    """`ingest_folder`, then the outbox drained (graph and index); returns the source id."""
    report = ingest_folder(tenant, root, files, tier=tier, name=name, at=at)
    drain_outbox()
    return report.source_id


def ingest_cmdb(
    tenant: Tenant, export: Path, text: str, *, name: str = "cmdb", **config: object
) -> IngestReport:
    """Write the CSV `text` to `export` and ingest it as the tenant admin's tier-1 CMDB
    source with `config` (`ingest_run`); the outbox's jobs are left pending."""
    export.write_text(text, encoding="utf-8")
    source_id = cmdb_source(tenant, export, name=name, **config)
    return ingest_run(source_id=source_id, group_id=tenant.workspace.group_id)


# A history every graph test reads: billing-api ran on k8s-prod-1 from T0 and runs on
# k8s-prod-2 since T1 (a supersession); payments-team owns it.
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T1 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def ingest_billing_history(
    tenant: Tenant, root: Path, *, extra: dict[str, str] | None = None
) -> None:
    """The billing history above (and `extra` files at T0), ingested in two runs (T0 and
    T1) through the real pipeline; the outbox drained."""
    first = {
        "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
        "team.md": "# Team\n\nThe billing-api is owned by payments-team.\n",
    }
    write_files(root, {**first, **(extra or {})}, at=T0)
    source_id = markdown_source(tenant, root, tier=1)
    ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    write_at(root, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-2.\n", T1)
    ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    drain_outbox()


def ingest_org_handbook(tenant: Tenant, root: Path) -> int:
    """A Markdown source of the tenant's organisation (not its workspace), ingested by an
    operator: its published claims are readable from the workspace below, nothing else
    of it is the workspace's. Returns the source id."""
    from curation.services.sources import source_create
    from tenants import rls
    from tenants.selectors import principal_system

    write_files(root, {"org.md": "# Org\n\nThe sso-gateway runs on k8s-core-1.\n"})
    org = tenant.org.group_id
    operator = principal_system("test", group_ids=[org])
    with rls.tenant_context(operator):
        source = source_create(
            actor=operator, group_id=org, name="handbook", kind="markdown",
            config={"root": str(root)}, trust_tier=1,
        )  # fmt: skip
    assert not ingest_now(source_id=source.pk, group_id=org).error
    return source.pk
