"""The index consumer writes a batch of outbox jobs at once, each job still failing on its own."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.utils import timezone

from curation.domain.outbox import Consumer
from curation.models import OutboxJob
from curation.services.outbox import BATCH_WRITE, outbox_process
from curation.tasks import process_outbox
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.models import (
    GroupEmbedding,
    LexicalCorpus,
    LexicalTerm,
    LexicalTermStat,
    SearchDocument,
)
from retrieval.services.index import index_job, index_jobs, index_prepare
from tenants import rls
from tests.support.ingest import ingest_folder
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n\nIt is owned by Payments.\n",
    "ledger.md": "# Ledger\n\nThe ledger-db stores the double-entry books.\n",
    "search.md": "# Search\n\nThe search-api depends on ledger-db.\n\nIt runs on k8s-prod-2.\n",
}


WRITTEN = dt.datetime.fromtimestamp(1.7e9, dt.UTC)


@pytest.fixture
def ingested(tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path) -> None:
    """The documents ingested and published in both tenants; their outbox jobs left pending."""
    for tenant, folder in ((tenant_a, "a"), (tenant_b, "b")):
        assert ingest_folder(tenant, tmp_path / folder, DOCS, at=WRITTEN).new == len(DOCS)


def _index_state(tenant: Tenant) -> dict[str, object]:
    """Everything indexing writes for a group, keyed by text rather than by claim id."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        documents = {
            doc.claim_id: doc
            for doc in SearchDocument.objects.filter(group_id=tenant.workspace.group_id)
        }
        postings = {
            (documents[p.claim_id].text, p.term): (p.tf, p.doc_len, p.published)
            for p in LexicalTerm.objects.filter(group_id=tenant.workspace.group_id)
        }
        corpus = LexicalCorpus.objects.values_list("documents", "tokens").get()
        df = dict(LexicalTermStat.objects.values_list("term", "df"))
        pins = list(GroupEmbedding.objects.values_list("model", "dimension"))
        jobs = sorted(OutboxJob.objects.filter(consumer=Consumer.INDEX).values_list("status"))
    fields = ("status", "predicate", "subject_name", "tier", "authority", "verification",
              "confidence", "dimension", "embedding_model")  # fmt: skip
    return {
        "documents": {
            doc.text: (*(getattr(doc, f) for f in fields), doc.valid_to, list(doc.embedding))
            for doc in documents.values()
        },
        "postings": postings,
        "corpus": corpus,
        "df": df,
        "pins": pins,
        "jobs": jobs,
    }


def test_a_batch_write_indexes_exactly_what_job_by_job_writes(
    tenant_a: Tenant, tenant_b: Tenant, ingested: None
) -> None:
    """Same documents, postings, statistics, pins and job statuses (impacts aside: a
    batch orders its postings at the group's average length before it, as a rebuild does)."""
    embedder = HashingEmbedder()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        one_by_one = outbox_process(
            consumer=Consumer.INDEX,
            handlers={"claim.project": lambda job: index_job(job, embedder=embedder)},
            prepare=lambda jobs: index_prepare(jobs, embedder=embedder),
        )
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        batched = outbox_process(
            consumer=Consumer.INDEX,
            handlers={"claim.project": lambda job: index_job(job, embedder=embedder)},
            prepare=lambda jobs: index_prepare(jobs, embedder=embedder),
            batch=lambda jobs: index_jobs(jobs, embedder=embedder),
        )
    assert one_by_one == batched
    assert 1 < batched["done"] <= BATCH_WRITE  # one batch write
    state = _index_state(tenant_a)
    assert state["documents"]
    assert state["postings"]
    assert _index_state(tenant_b) == state


def test_a_failing_claim_in_a_batch_is_retried_alone_and_the_rest_is_indexed(
    tenant_a: Tenant, tenant_b: Tenant, ingested: None, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # The backoff's full jitter may be near zero; this test is about the batch falling
    # back job by job, so the failed jobs wait a fixed 5 s here.
    from curation.services import outbox

    monkeypatch.setattr(outbox, "retry_delay", lambda attempts, rng=None: dt.timedelta(seconds=5))
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        # Tenant B's group was indexed with a model this server does not offer: its
        # claims cannot be written.
        GroupEmbedding.objects.create(
            group_id=tenant_b.workspace.group_id, model="another-model", dimension=3
        )
        failing = set(
            OutboxJob.objects.filter(consumer=Consumer.INDEX).values_list("pk", flat=True)
        )
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        passing = set(
            OutboxJob.objects.filter(consumer=Consumer.INDEX).values_list("pk", flat=True)
        )
    assert len(failing | passing) <= BATCH_WRITE  # all in one batch write

    assert process_outbox(consumer="index") == {"done": len(passing), "retry": len(failing)}
    # The batch write was tried, rolled back, and its jobs run one by one.
    assert f"outbox batch of {len(failing | passing)} jobs failed" in caplog.text

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        done = OutboxJob.objects.filter(pk__in=passing)
        assert {(j.status, j.attempts) for j in done} == {(OutboxJob.Status.DONE, 0)}
        assert SearchDocument.objects.count() == len(passing)
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        retried = list(OutboxJob.objects.filter(pk__in=failing))
        assert {(j.status, j.attempts) for j in retried} == {(OutboxJob.Status.PENDING, 1)}
        assert all("EmbedderUnavailable" in j.last_error for j in retried)
        assert all("another-model" in j.last_error for j in retried)
        assert all(j.available_at > timezone.now() for j in retried)
        assert not SearchDocument.objects.exists()
    assert process_outbox(consumer="index") == {}  # the failed jobs wait for their retry


def test_a_batch_takes_only_jobs_with_a_handler(tenant_a: Tenant) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        for kind in ("k", "mystery", "k"):
            OutboxJob.objects.create(
                group_id=tenant_a.workspace.group_id, consumer=Consumer.GRAPH, kind=kind,
                payload={}, available_at=timezone.now(),
            )  # fmt: skip
        batches: list[list[str]] = []
        outcome = outbox_process(
            consumer=Consumer.GRAPH,
            handlers={"k": lambda _: None},
            batch=lambda jobs: batches.append([job.kind for job in jobs]),
            max_attempts=1,
        )
        assert outcome == {"done": 2, "dead": 1}
        assert batches == [["k", "k"]]
        mystery = OutboxJob.objects.get(kind="mystery")
        assert "no handler" in mystery.last_error
