"""/metrics shows what the workers counted: every process of a deployment writes its samples
into one shared PROMETHEUS_MULTIPROC_DIR (compose's volume, `make run`'s folder) and the
web's scrape merges them.

A real Celery worker runs a real ingest with the folder in its environment; the scrape
goes through this process's Django stack with the same folder in its own. This process
was started without the folder, so it writes none of its own samples there: every count
seen is the worker's.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from curation.tasks import ingest_source
from tests.support.tenancy import Tenant, markdown_source
from tests.support.workers import celery_worker
from vera import metrics

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
TOKEN = "scrape-the-deployment"
DOCUMENT = "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"


def _value(text: str, name: str, **labels: str) -> float:
    """The sample `name` with (at least) these labels; 0 when there is none."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


def test_an_ingest_run_in_a_worker_process_is_counted_on_the_webs_metrics(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str, client: Client, settings, monkeypatch
) -> None:
    shared = tmp_path / "metrics"
    shared.mkdir()
    root = tmp_path / "docs"
    root.mkdir()
    (root / "billing.md").write_text(DOCUMENT)
    source_id = markdown_source(tenant_a, root, tier=1)
    # A queue of this test's own: a worker of another test run sharing the broker must not
    # take the task, nor this worker theirs.
    queue = f"metrics-{uuid.uuid4().hex[:12]}"
    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue=queue,
        extra_env={"PROMETHEUS_MULTIPROC_DIR": str(shared)},
    ) as worker:  # fmt: skip
        result = ingest_source.apply_async(
            kwargs={"source_id": source_id, "group_id": tenant_a.workspace.group_id}, queue=queue
        ).get(timeout=120)
        settings.VERA_METRICS__TOKEN = TOKEN
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(shared))
        scraped = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert result["status"] == "ok", result
    assert scraped.status_code == 200
    text = scraped.content.decode()
    assert _value(text, "vera_ingest_runs_total", status="ok") == 1
    assert _value(text, "vera_ingest_documents_total", outcome="new") == 1
    # Named by host and pid: a process of another container with the same pid has its own.
    assert (shared / f"counter_{metrics.process_identifier(worker.pid)}.db").exists()
