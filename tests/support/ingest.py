"""Documents ingested through the real pipeline: Markdown files, a source, ingest, outbox."""

from __future__ import annotations

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
