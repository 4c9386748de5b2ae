"""Entity resolution and merges, the outbox's retries and dead letters, CMDB ingestion."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from common.errors import PermissionDenied
from curation.domain.errors import JudgeUnavailable
from curation.domain.outbox import Consumer
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, MergeCandidate, OutboxJob
from curation.services.entities import entity_merge, entity_resolve, entity_unmerge
from curation.services.outbox import outbox_process, retry_delay
from retrieval.adapters.hashing_embedder import HashingEmbedder
from tenants import rls
from tenants.models import AuditEvent
from tests.support.fake_embedders import FixedEmbedder
from tests.support.ingest import ingest_cmdb
from tests.support.tenancy import Tenant, admin_site_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def ws(tenant_a: Tenant):
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        yield tenant_a


def _resolve(tenant: Tenant, name: str, **kwargs: object):
    return entity_resolve(group_id=tenant.workspace.group_id, name=name, **kwargs)


def test_resolution_matches_the_normalised_alias_exactly(ws: Tenant) -> None:
    first = _resolve(ws, "Billing API")
    again = _resolve(ws, "  billing api ")
    assert (first.method, again.method) == ("new", "exact")
    assert again.entity == first.entity


def test_resolution_keeps_accents_apart(ws: Tenant) -> None:
    hanoi = _resolve(ws, "Hà Nội", entity_type="city")
    assert _resolve(ws, "hà nội", entity_type="city").entity == hanoi.entity
    assert _resolve(ws, "Ha Noi", entity_type="city").entity != hanoi.entity


def test_resolution_links_a_near_identical_spelling(ws: Tenant) -> None:
    original = _resolve(ws, "payments-gateway-service")
    typo = _resolve(ws, "payments-gateway-servce")
    assert (typo.method, typo.entity) == ("fuzzy", original.entity)


def test_resolution_does_not_merge_look_alike_siblings(ws: Tenant) -> None:
    niger = _resolve(ws, "Niger", entity_type="country")
    assert _resolve(ws, "Nigeria", entity_type="country").entity != niger.entity


def test_without_a_judge_near_semantic_matches_become_merge_candidates(ws: Tenant) -> None:
    embedder = FixedEmbedder()
    a = _resolve(ws, "auth service", embedder=embedder)
    b = _resolve(ws, "login gateway", embedder=embedder)
    assert b.entity != a.entity  # no judge: no merge
    candidate = MergeCandidate.objects.get(entity=b.entity)
    assert candidate.candidate == a.entity
    assert candidate.status == MergeCandidate.Status.OPEN


class AlwaysSame:
    def same_entity(self, a: str, b: str, *, entity_type: str) -> bool:
        return True


def test_the_hashing_embedder_links_nothing_it_should_not(ws: Tenant) -> None:
    embedder = HashingEmbedder()
    a = _resolve(ws, "data warehouse", embedder=embedder)
    assert _resolve(ws, "auth service", embedder=embedder).entity != a.entity


def test_a_judge_confirms_a_semantic_candidate(ws: Tenant) -> None:
    embedder = FixedEmbedder()
    a = _resolve(ws, "auth service", embedder=embedder)
    b = _resolve(ws, "login gateway", embedder=embedder, judge=AlwaysSame())
    assert (b.method, b.entity) == ("judge", a.entity)


class UnavailableJudge:
    """A guarded judge whose provider is down: no judgement, which is not a "no"."""

    def same_entity(self, a: str, b: str, *, entity_type: str) -> bool:
        raise JudgeUnavailable("judge down-1: circuit 'equivalence-judge' is open")


def test_unavailable_judge_leaves_near_match_as_merge_candidate(ws: Tenant) -> None:
    embedder = FixedEmbedder()
    a = _resolve(ws, "auth service", embedder=embedder)
    b = _resolve(ws, "login gateway", embedder=embedder, judge=UnavailableJudge())
    candidate = MergeCandidate.objects.get(entity=b.entity)
    assert (b.method, candidate.candidate, candidate.status) == (
        "new",
        a.entity,
        MergeCandidate.Status.OPEN,
    )


def test_merges_are_reversible_and_audited(ws: Tenant) -> None:
    actor = ws.principal(ws.reviewer)
    k8s = _resolve(ws, "k8s-prod-1").entity
    kube = _resolve(ws, "kubernetes production one").entity
    entity_merge(actor=actor, entity_id=kube.pk, into_id=k8s.pk)
    assert _resolve(ws, "kubernetes production one").entity == k8s
    entity_unmerge(actor=actor, entity_id=kube.pk)
    assert _resolve(ws, "kubernetes production one").entity == kube
    actions = list(
        AuditEvent.objects.filter(target_id=str(kube.pk)).values_list("action", flat=True)
    )
    assert sorted(actions) == ["entity.merge", "entity.unmerge"]


def test_a_viewer_cannot_merge(ws: Tenant) -> None:
    a, b = _resolve(ws, "alpha").entity, _resolve(ws, "beta").entity
    with pytest.raises(PermissionDenied):
        entity_merge(actor=ws.principal(ws.viewer), entity_id=a.pk, into_id=b.pk)
    assert Entity.objects.get(pk=a.pk).merged_into is None


def _job(tenant: Tenant, kind: str = "claim.project") -> OutboxJob:
    return OutboxJob.objects.create(
        group_id=tenant.workspace.group_id, consumer=Consumer.GRAPH, kind=kind,
        payload={"claim_id": 0}, available_at=timezone.now(),
    )  # fmt: skip


def test_a_failing_job_is_retried_later_with_backoff(ws: Tenant) -> None:
    job = _job(ws)

    def broken(_: OutboxJob) -> None:
        raise ConnectionError("graph down")

    assert outbox_process(consumer=Consumer.GRAPH, handlers={"claim.project": broken}) == {
        "retry": 1
    }
    job.refresh_from_db()
    assert (job.status, job.attempts) == (OutboxJob.Status.PENDING, 1)
    assert "graph down" in job.last_error
    assert job.available_at > timezone.now() - dt.timedelta(seconds=1)
    assert (
        outbox_process(consumer=Consumer.GRAPH, handlers={"claim.project": broken}) == {}
    )  # not due yet


def test_a_job_is_dead_after_its_last_attempt(ws: Tenant) -> None:
    job = _job(ws)

    def broken(_: OutboxJob) -> None:
        raise ValueError("bad payload")

    assert outbox_process(
        consumer=Consumer.GRAPH, handlers={"claim.project": broken}, max_attempts=1
    ) == {"dead": 1}
    job.refresh_from_db()
    assert job.status == OutboxJob.Status.DEAD


def test_an_unknown_job_kind_is_not_silently_dropped(ws: Tenant) -> None:
    job = _job(ws, kind="mystery")
    assert outbox_process(consumer=Consumer.GRAPH, handlers={}, max_attempts=1) == {"dead": 1}
    job.refresh_from_db()
    assert "no handler" in job.last_error


def test_retry_delay_is_full_jitter_within_the_cap() -> None:
    import random

    rng = random.Random(7)  # noqa: S311 - jitter, not cryptography
    delays = [retry_delay(attempt, rng=rng).total_seconds() for attempt in range(1, 30)]
    assert all(0 <= d <= 3600 for d in delays)
    assert len(set(delays)) == len(delays)


def test_dead_jobs_can_be_retried_from_the_admin(ws: Tenant, client: Client) -> None:
    job = _job(ws)
    OutboxJob.objects.filter(pk=job.pk).update(status=OutboxJob.Status.DEAD, attempts=8)
    admin_site_login(client, ws.admin)
    response = client.post(
        "/admin/curation/outboxjob/",
        {"action": "retry_dead_jobs", "_selected_action": [job.pk]},
    )
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.status, job.attempts) == (OutboxJob.Status.PENDING, 0)


def test_cmdb_export_becomes_structured_claims(tenant_a: Tenant, tmp_path: Path) -> None:
    export = (
        "id,name,host,owner,status\n"
        "ci-1,billing-api,k8s-prod-1,Payments team,live\n"
        "ci-2,ledger,,Finance team,retired\n"
        "ci-3\n"
    )
    report = ingest_cmdb(tenant_a, tmp_path / "cmdb.csv", export)
    assert (report.new, report.failed) == (2, 1)  # the short row fails alone
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        runs_on = Claim.objects.get(predicate="RUNS_ON", status=ClaimStatus.PUBLISHED)
        assert runs_on.subject.canonical_name == "billing-api"
        assert runs_on.object_entity.canonical_name == "k8s-prod-1"
        assert runs_on.confidence >= 0.9


def test_a_failing_batch_preparation_costs_no_job(ws: Tenant) -> None:
    job = _job(ws)

    def broken_prepare(_: list[OutboxJob]) -> None:
        raise RuntimeError("model unavailable")

    done = outbox_process(
        consumer=Consumer.GRAPH, handlers={"claim.project": lambda _: None}, prepare=broken_prepare
    )
    assert done == {"done": 1}
    job.refresh_from_db()
    assert job.status == OutboxJob.Status.DONE
