"""Documents ingested through the real pipeline: Markdown files, a source, ingest, outbox."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from curation.tasks import ingest_now, process_outbox
from tests.support.tenancy import Tenant, markdown_source


def ingest_markdown(
    tenant: Tenant, root: Path, files: dict[str, str], *, tier: int = 1, name: str = "docs"
) -> int:
    """Write `files` under `root`, ingest them as the tenant admin's Markdown source of
    `tier`, and drain the outbox (graph and index); returns the source id."""
    root.mkdir(parents=True, exist_ok=True)
    for filename, text in files.items():
        (root / filename).write_text(text, encoding="utf-8")
    source_id = markdown_source(tenant, root, tier=tier, name=name)
    report = ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    assert report is not None
    assert not report.error, report.error
    while process_outbox():
        pass
    return source_id


# A history every graph test reads: billing-api ran on k8s-prod-1 from T0 and runs on
# k8s-prod-2 since T1 (a supersession); payments-team owns it.
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T1 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def write_at(root: Path, name: str, text: str, at: dt.datetime) -> None:
    """A file whose modification time is `at` (the Markdown connector's record time)."""
    (root / name).write_text(text, encoding="utf-8")
    os.utime(root / name, (at.timestamp(), at.timestamp()))


def ingest_billing_history(
    tenant: Tenant, root: Path, *, extra: dict[str, str] | None = None
) -> None:
    """The billing history above (and `extra` files at T0), ingested in two runs (T0 and
    T1) through the real pipeline; the outbox drained."""
    root.mkdir(parents=True, exist_ok=True)
    write_at(root, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-1.\n", T0)
    write_at(root, "team.md", "# Team\n\nThe billing-api is owned by payments-team.\n", T0)
    for name, text in (extra or {}).items():
        write_at(root, name, text, T0)
    source_id = markdown_source(tenant, root, tier=1)
    ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    write_at(root, "billing.md", "# Billing\n\nThe billing-api runs on k8s-prod-2.\n", T1)
    ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    while process_outbox():
        pass
