"""Review decisions: one service, audited, published like automatic publication, race-safe."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from common.errors import PermissionDenied
from curation.domain.outbox import Consumer, Priority
from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, OutboxJob
from curation.services import review
from tenants import rls
from tenants.models import AuditEvent
from tests.support.ingest import ingest_folder
from tests.support.tenancy import Tenant, admin_site_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    text = "The billing-api runs on k8s-prod-1. The billing-api depends on ledger-db."
    ingest_folder(tenant_a, tmp_path, {"svc.md": f"# Billing\n\n{text}\n"}, tier=3)
    return tenant_a


def _one(tenant: Tenant, predicate: str) -> Claim:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.get(predicate=predicate)


def _projections(claim: Claim) -> int:
    """The graph's projection jobs for the claim (the index has its own twin of each)."""
    return OutboxJob.objects.filter(
        kind="claim.project", payload__claim_id=claim.pk, consumer=Consumer.GRAPH
    ).count()


def test_approval_publishes_human_verified_with_an_outbox_job_and_audit(pending: Tenant) -> None:
    claim = _one(pending, "RUNS_ON")
    actor = pending.principal(pending.reviewer)
    with rls.tenant_context(actor):
        outcome = review.review_approve(actor=actor, claim_id=claim.pk, version=claim.version)
        claim.refresh_from_db()
        assert (claim.status, claim.verification) == (
            ClaimStatus.PUBLISHED,
            Verification.HUMAN_VERIFIED,
        )
        assert claim.reviewed_by_id == pending.reviewer.pk
        assert _projections(claim) == 1
        assert AuditEvent.objects.filter(action="review.approve", target_id=str(claim.pk)).exists()
    assert (outcome.result, outcome.live_id, outcome.superseded, outcome.message) == (
        review.Result.PUBLISHED, claim.pk, (), f"Published #{claim.pk}.",
    )  # fmt: skip


def test_the_second_reviewer_gets_a_conflict_naming_the_first(pending: Tenant) -> None:
    claim = _one(pending, "RUNS_ON")
    first, second = pending.principal(pending.reviewer), pending.principal(pending.admin)
    with rls.tenant_context(first):
        review.review_approve(actor=first, claim_id=claim.pk, version=claim.version)
    with rls.tenant_context(second), pytest.raises(review.Conflict, match="acme-reviewer"):
        review.review_reject(actor=second, claim_id=claim.pk, version=claim.version, reason="no")
    with rls.tenant_context(second):
        assert _projections(claim) == 1  # published once


def test_a_viewer_cannot_decide(pending: Tenant) -> None:
    claim = _one(pending, "RUNS_ON")
    viewer = pending.principal(pending.viewer)
    with rls.tenant_context(viewer), pytest.raises(PermissionDenied):
        review.review_approve(actor=viewer, claim_id=claim.pk, version=claim.version)


def test_rejection_needs_and_keeps_a_reason(pending: Tenant) -> None:
    claim = _one(pending, "RUNS_ON")
    actor = pending.principal(pending.reviewer)
    with rls.tenant_context(actor):
        with pytest.raises(ValueError, match="say why"):
            review.review_reject(actor=actor, claim_id=claim.pk, version=claim.version, reason=" ")
        review.review_reject(
            actor=actor, claim_id=claim.pk, version=claim.version, reason="stale doc"
        )
        claim.refresh_from_db()
    assert (claim.status, claim.status_reason) == (ClaimStatus.REJECTED, "stale doc")


def test_edit_then_approve_publishes_the_corrected_value(pending: Tenant) -> None:
    claim = _one(pending, "RUNS_ON")
    actor = pending.principal(pending.reviewer)
    edit = review.Edit("The billing-api runs on k8s-prod-9.", "k8s-prod-9")
    with rls.tenant_context(actor):
        review.review_approve(actor=actor, claim_id=claim.pk, version=claim.version, edit=edit)
        claim.refresh_from_db()
        assert claim.object_entity.canonical_name == "k8s-prod-9"
        event = AuditEvent.objects.get(action="review.edit_approve")
    assert event.data["before"]["object"] == "k8s-prod-1"


def test_a_proposal_is_accepted_into_publication(tenant_a: Tenant, tmp_path: Path) -> None:
    ingest_folder(tenant_a, tmp_path, {"p.md": "# P\n\nThe search-api uses elastic-8.\n"}, tier=4)
    claim = _one(tenant_a, "USES")
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        review.proposal_accept(actor=actor, claim_id=claim.pk, version=claim.version)
        claim.refresh_from_db()
    assert claim.status == ClaimStatus.PUBLISHED


def _two_sources(tenant: Tenant, root: Path, first: str, second: str, *, tiers: tuple[int, int]):
    for name, text, tier in (("one", first, tiers[0]), ("two", second, tiers[1])):
        files = {f"{name}.md": f"# {name}\n\n{text}\n"}
        ingest_folder(tenant, root / name, files, tier=tier, name=f"{name}-tier-{tier}")


def test_an_approval_says_which_published_value_it_superseded(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _two_sources(
        tenant_a, tmp_path, "The billing-api runs on k8s-prod-1.",
        "The billing-api runs on k8s-prod-2.", tiers=(1, 3),
    )  # fmt: skip
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        old = Claim.objects.get(predicate="RUNS_ON", status=ClaimStatus.PUBLISHED)
        new = Claim.objects.get(predicate="RUNS_ON", status=ClaimStatus.PENDING_REVIEW)
        outcome = review.review_approve(actor=actor, claim_id=new.pk, version=new.version)
    assert (outcome.result, outcome.superseded) == (review.Result.PUBLISHED, (old.pk,))
    assert outcome.message == f"Published #{new.pk}; superseded #{old.pk}."


def test_accepting_a_published_value_closes_the_proposal_as_a_duplicate(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    same = "The search-api uses elastic-8."
    _two_sources(tenant_a, tmp_path, same, same, tiers=(1, 4))
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        live = Claim.objects.get(predicate="USES", status=ClaimStatus.PUBLISHED)
        proposal = Claim.objects.get(predicate="USES", status=ClaimStatus.PROPOSED)
        outcome = review.proposal_accept(
            actor=actor, claim_id=proposal.pk, version=proposal.version
        )
        proposal.refresh_from_db()
    assert (outcome.result, outcome.live_id) == (review.Result.DUPLICATE, live.pk)
    assert outcome.message == (
        f"Already published as #{live.pk}: its evidence and your verification were added "
        "there; this proposal is closed as a duplicate."
    )
    assert (proposal.status, proposal.status_reason) == (
        ClaimStatus.REJECTED, f"already published as #{live.pk}",
    )  # fmt: skip


def test_a_duplicate_that_verifies_a_published_claim_reindexes_it(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    same = "The search-api uses elastic-8."
    _two_sources(tenant_a, tmp_path, same, same, tiers=(1, 4))
    actor = tenant_a.principal(tenant_a.reviewer)
    with rls.tenant_context(actor):
        live = Claim.objects.get(predicate="USES", status=ClaimStatus.PUBLISHED)
        proposal = Claim.objects.get(predicate="USES", status=ClaimStatus.PROPOSED)
        review.proposal_accept(actor=actor, claim_id=proposal.pk, version=proposal.version)
        live.refresh_from_db()
        urgent = OutboxJob.objects.filter(
            kind="claim.project", payload__claim_id=live.pk, priority=Priority.INTERACTIVE
        )
        assert live.verification == Verification.HUMAN_VERIFIED
        assert sorted(urgent.values_list("consumer", flat=True)) == ["graph", "index"]


def test_bulk_approval_reports_conflicts_and_commits_the_rest(pending: Tenant) -> None:
    runs, deps = _one(pending, "RUNS_ON"), _one(pending, "DEPENDS_ON")
    actor = pending.principal(pending.reviewer)
    with rls.tenant_context(actor):
        outcome = review.review_bulk(
            actor=actor, items=[(runs.pk, runs.version), (deps.pk, deps.version + 5)], approve=True
        )
    assert outcome.done == [runs.pk]
    assert list(outcome.conflicts) == [deps.pk]
    assert outcome.messages == {runs.pk: f"Published #{runs.pk}."}


def test_the_queue_page_lists_pending_claims_for_reviewers(pending: Tenant, client: Client) -> None:
    client.force_login(pending.reviewer)
    html = client.get("/review/").content.decode()
    assert "billing-api" in html
    assert re.search(r'data-queue="claims">\s*\d+', html)


def test_htmx_approval_swaps_the_row_and_a_second_gets_409(pending: Tenant, client: Client) -> None:
    claim = _one(pending, "RUNS_ON")
    client.force_login(pending.reviewer)
    url = f"/review/claims/{claim.pk}/approve"
    first = client.post(url, {"version": claim.version}, HTTP_HX_REQUEST="true")
    assert first.status_code == 200
    assert f"Published #{claim.pk}." in first.content.decode()
    second = client.post(url, {"version": claim.version}, HTTP_HX_REQUEST="true")
    assert second.status_code == 409
    assert "Already published by acme-reviewer" in second.content.decode()


def test_a_viewer_gets_403_on_a_decision(pending: Tenant, client: Client) -> None:
    claim = _one(pending, "RUNS_ON")
    client.force_login(pending.viewer)
    response = client.post(f"/review/claims/{claim.pk}/approve", {"version": claim.version})
    assert response.status_code == 403


def test_another_workspace_sees_none_of_the_items(
    pending: Tenant, tenant_b: Tenant, client: Client
) -> None:
    claim = _one(pending, "RUNS_ON")
    client.force_login(tenant_b.admin)
    html = client.get("/review/").content.decode()
    assert "billing-api" not in html
    assert client.post(f"/review/claims/{claim.pk}/approve", {"version": 1}).status_code == 404
    assert client.get(f"/claims/{claim.pk}/").status_code == 404


def test_the_raw_artifact_is_served_as_plain_text(pending: Tenant, client: Client) -> None:
    claim = _one(pending, "RUNS_ON")
    with rls.tenant_context(pending.principal(pending.admin)):
        episode_id = claim.evidence.get().episode_id
    client.force_login(pending.reviewer)
    response = client.get(f"/review/episodes/{episode_id}/raw")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert "runs on k8s-prod-1" in response.content.decode()


def test_admin_action_approves_through_the_review_service(pending: Tenant, client: Client) -> None:
    claim = _one(pending, "RUNS_ON")
    admin_site_login(client, pending.admin)
    response = client.post(
        "/admin/curation/claim/", {"action": "approve_selected", "_selected_action": [claim.pk]}
    )
    assert response.status_code == 302
    with rls.tenant_context(pending.principal(pending.admin)):
        claim.refresh_from_db()
        assert (claim.status, claim.reviewed_by_id) == (ClaimStatus.PUBLISHED, pending.admin.pk)
        assert AuditEvent.objects.filter(action="review.approve", target_id=str(claim.pk)).exists()


def test_admin_episode_page_links_the_raw_artifact(pending: Tenant, client: Client) -> None:
    claim = _one(pending, "RUNS_ON")
    with rls.tenant_context(pending.principal(pending.admin)):
        episode_id = claim.evidence.get().episode_id
    admin_site_login(client, pending.admin)
    html = client.get(f"/admin/curation/episode/{episode_id}/change/").content.decode()
    assert f"/review/episodes/{episode_id}/raw" in html
    html = client.get(f"/admin/curation/claim/{claim.pk}/change/").content.decode()
    assert f"/claims/{claim.pk}/" in html  # the history links the claim page


def test_a_nul_character_in_a_reason_is_a_400_not_a_500(pending: Tenant, client: Client) -> None:
    claim = _one(pending, "RUNS_ON")
    client.force_login(pending.reviewer)
    response = client.post(
        f"/review/claims/{claim.pk}/reject",
        {"version": claim.version, "reason": "bad\x00reason"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    assert _one(pending, "RUNS_ON").status == ClaimStatus.PENDING_REVIEW


def test_the_queue_shows_the_published_value_an_approval_would_supersede(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    published = {"x.md": "# X\n\nThe billing-api runs on k8s-prod-1.\n"}
    pending = {"y.md": "# Y\n\nThe billing-api runs on k8s-prod-2.\n"}
    ingest_folder(tenant_a, tmp_path / "a", published, tier=1, name="cmdb-like")
    ingest_folder(tenant_a, tmp_path / "b", pending, tier=3, name="wiki")
    client.force_login(tenant_a.reviewer)
    html = client.get("/review/", {"predicate": "RUNS_ON"}).content.decode()
    assert "<del>The billing-api runs on k8s-prod-1.</del>" in html


def test_the_queue_shows_no_supersession_for_a_multi_valued_predicate(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    published = {"x.md": "# X\n\nThe billing-api depends on ledger-db.\n"}
    pending = {"y.md": "# Y\n\nThe billing-api depends on auth-api.\n"}
    ingest_folder(tenant_a, tmp_path / "a", published, tier=1, name="cmdb-like")
    ingest_folder(tenant_a, tmp_path / "b", pending, tier=3, name="wiki")
    client.force_login(tenant_a.reviewer)
    html = client.get("/review/", {"predicate": "DEPENDS_ON"}).content.decode()
    assert "depends on auth-api" in html
    assert "<del>" not in html  # approving keeps both values: nothing is superseded
