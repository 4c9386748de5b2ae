"""VERA on S3 (a real S3 API: moto's server over HTTP): ingest stores each episode's bytes
in the bucket, an outage stops a run with the store named and loses nothing, an erasure's
cleanup waits for the store, and a proposal is refused with a 503 while it is down."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from curation.models import Episode, OutboxJob, Source, Tombstone
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.services.erasure import erase
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.s3_server import S3Server
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "ledger.md": "# Ledger\n\nThe ledger-api is owned by payments-team.\n",
}


def _docs(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _episodes(tenant: Tenant) -> list[Episode]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(Episode.objects.order_by("external_id"))


def _keys(server: S3Server, bucket: str) -> set[str]:
    listing = server.client().list_objects_v2(Bucket=bucket)
    return {item["Key"] for item in listing.get("Contents", [])}


def test_ingest_stores_each_episode_in_the_bucket_under_its_key(
    tenant_a: Tenant, tmp_path: Path, s3_bucket: str, s3_server: S3Server
) -> None:
    source_id = markdown_source(tenant_a, _docs(tmp_path / "docs"), tier=1)
    report = ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    assert (report.new, report.error) == (2, "")
    episodes = _episodes(tenant_a)
    assert _keys(s3_server, s3_bucket) == {episode.object_key for episode in episodes}
    for episode in episodes:
        stored = s3_server.client().get_object(Bucket=s3_bucket, Key=episode.object_key)
        assert stored["Body"].read() == DOCS[episode.external_id].encode()


def test_an_ingest_run_stops_naming_the_object_store_when_s3_is_down_and_loses_nothing(
    tenant_a: Tenant, tmp_path: Path, s3_outage: S3Server, settings: Any
) -> None:
    source_id = markdown_source(tenant_a, _docs(tmp_path / "docs"), tier=1)
    s3_outage.stop()
    report = ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    assert report.error.startswith("ObjectStoreUnavailable: object store s3://")
    assert "EndpointConnectionError" in report.error
    assert (report.new, _episodes(tenant_a)) == (0, [])  # no episode without its bytes
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get(pk=source_id)
    assert (source.last_run_status, source.cursor) == ("failed", None)
    assert "ObjectStoreUnavailable" in source.last_error

    s3_outage.start()
    s3_outage.client().create_bucket(Bucket=settings.VERA_OBJECT_STORE__BUCKET)
    again = ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    assert (again.new, again.error) == (2, "")  # every record, none skipped as seen


def test_an_erasure_cleanup_waits_for_s3_and_completes_when_it_is_back(
    tenant_a: Tenant, tmp_path: Path, s3_outage: S3Server, settings: Any
) -> None:
    source_id = markdown_source(tenant_a, _docs(tmp_path / "docs"), tier=1)
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    episode = next(e for e in _episodes(tenant_a) if e.external_id == "billing.md")
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        tombstone = erase(
            actor=admin, kind="episode", target_id=episode.pk, reason="gone", confirm=True,
            catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip
        cleanup = OutboxJob.objects.filter(kind="erasure.cleanup")
        cleanup.update(available_at=timezone.now() - dt.timedelta(seconds=1))
    s3_outage.stop()
    while process_outbox():
        pass
    with rls.tenant_context(admin):
        job = cleanup.get()
        assert Tombstone.objects.get(pk=tombstone.pk).status != Tombstone.Status.COMPLETE
    assert (job.status, job.attempts) == (OutboxJob.Status.PENDING, 1)  # retried, not dead
    assert job.last_error.startswith("ObjectStoreUnavailable: object store s3://")

    s3_outage.start()
    s3_outage.client().create_bucket(Bucket=settings.VERA_OBJECT_STORE__BUCKET)
    with rls.tenant_context(admin):  # the job's backoff has passed
        cleanup.update(available_at=timezone.now() - dt.timedelta(seconds=1))
    while process_outbox():
        pass
    with rls.tenant_context(admin):
        assert Tombstone.objects.get(pk=tombstone.pk).status == Tombstone.Status.COMPLETE


def test_an_erasure_removes_the_episode_bytes_from_the_bucket(
    tenant_a: Tenant, tmp_path: Path, s3_bucket: str, s3_server: S3Server
) -> None:
    source_id = markdown_source(tenant_a, _docs(tmp_path / "docs"), tier=1)
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    episode = next(e for e in _episodes(tenant_a) if e.external_id == "billing.md")
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        erase(
            actor=admin, kind="episode", target_id=episode.pk, reason="gone", confirm=True,
            catalog=retrieval_bootstrap.providers().embedders(),
        )  # fmt: skip
        OutboxJob.objects.filter(kind="erasure.cleanup").update(available_at=timezone.now())
    while process_outbox():
        pass
    assert episode.object_key not in _keys(s3_server, s3_bucket)
    assert len(_keys(s3_server, s3_bucket)) == 1  # ledger.md's stays


def test_a_proposal_is_refused_with_503_while_s3_is_down(
    tenant_a: Tenant, client: Client, s3_outage: S3Server
) -> None:
    cache.clear()  # rate-limit counters of earlier tests
    key = tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.CONTRIBUTOR).plaintext
    s3_outage.stop()
    fact = {"subject": "ledger-api", "predicate": "RUNS_ON", "object": "k8s-prod-7",
            "evidence": "The manifest pins ledger-api to k8s-prod-7.",
            "source_url": "https://git.example.org/ledger/deploy.yaml"}  # fmt: skip
    response = client.post(
        "/api/v1/proposals", fact, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )  # fmt: skip
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "object store" in response.json()["detail"]
    assert _episodes(tenant_a) == []


def test_the_review_queue_shows_a_document_without_its_text_while_s3_is_down(
    tenant_a: Tenant, tmp_path: Path, client: Client, s3_outage: S3Server
) -> None:
    source_id = markdown_source(tenant_a, _docs(tmp_path / "docs"), tier=3)
    ingest_now(source_id=source_id, group_id=tenant_a.workspace.group_id)
    episode = next(e for e in _episodes(tenant_a) if e.external_id == "billing.md")
    client.force_login(tenant_a.reviewer)
    s3_outage.stop()

    queue = client.get("/review/?queue=claims&group=document")
    assert queue.status_code == 200
    card = re.search(rf'<article id="doc-{episode.pk}".*?</article>', queue.content.decode(), re.S)
    assert card, "the document's card is missing"
    assert '<tr id="item-' in card.group()  # its claims, to decide
    assert "text is not available" in card.group()
    raw = client.get(f"/review/episodes/{episode.pk}/raw")
    assert raw.status_code == 503
    assert b"object store" in raw.content
