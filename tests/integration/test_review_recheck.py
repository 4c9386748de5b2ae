"""The re-check queue: reviewed claims that reprocessing no longer found in their document
wait for a reviewer to keep them (the request cleared, audited) or retract them (through
the retraction service, with why)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from curation import selectors
from curation.domain.tiers import ClaimStatus
from curation.models import Claim
from curation.services import retraction
from tenants import rls
from tenants.models import AuditEvent
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

WHY = "no longer found in 'docs' when read again (rules-2)"
DOCS = {"svc.md": "# Billing\n\nThe billing-api runs on k8s-prod-1. "
                  "The billing-api depends on ledger-db.\n"}  # fmt: skip


def _claim(tenant: Tenant, predicate: str) -> Claim:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.get(predicate=predicate)


@pytest.fixture
def flagged(tenant_a: Tenant, tmp_path: Path) -> Claim:
    """A published claim that asks for a re-check (as reprocessing leaves it), and one
    published claim that does not."""
    ingest_markdown(tenant_a, tmp_path, DOCS)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Claim.objects.filter(predicate="RUNS_ON").update(recheck=WHY)
    claim = _claim(tenant_a, "RUNS_ON")
    assert claim.status == ClaimStatus.PUBLISHED
    return claim


def _decide(client: Client, claim: Claim, action: str, **data: object) -> tuple[int, str]:
    response = client.post(
        f"/review/rechecks/{claim.pk}/{action}",
        {"version": claim.version, **data},
        HTTP_HX_REQUEST="true",
    )
    return response.status_code, response.content.decode()


def test_the_recheck_queue_lists_a_flagged_claim_with_why_and_counts_it(
    tenant_a: Tenant, flagged: Claim, client: Client
) -> None:
    client.force_login(tenant_a.reviewer)
    html = client.get("/review/?queue=rechecks").content.decode()

    assert f'id="item-{flagged.pk}"' in html
    assert "k8s-prod-1" in html
    assert "no longer found in &#x27;docs&#x27; when read again (rules-2)" in html
    assert 'data-key="a">Keep<' in html
    assert 'data-key="r">Retract<' in html
    assert html.count('class="item"') == 1  # the claim that asks nothing is not listed
    assert re.search(r'data-queue="rechecks">1<', html)


def test_keep_clears_the_recheck_audited_without_a_new_version(
    tenant_a: Tenant, flagged: Claim, client: Client
) -> None:
    client.force_login(tenant_a.reviewer)
    status, body = _decide(client, flagged, "keep")

    assert status == 200, body
    assert f"Kept #{flagged.pk}" in body
    assert re.search(r'id="count-rechecks"[^>]*hx-swap-oob="true">0<', body)
    kept = _claim(tenant_a, "RUNS_ON")
    assert (kept.recheck, kept.status, kept.version) == ("", ClaimStatus.PUBLISHED, flagged.version)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="review.recheck_keep")
    assert (event.target_id, event.data) == (str(flagged.pk), {"recheck": WHY})
    assert event.actor_label == "user:acme-reviewer"


def test_a_second_keep_of_the_same_recheck_gets_a_409(
    tenant_a: Tenant, flagged: Claim, client: Client
) -> None:
    client.force_login(tenant_a.reviewer)
    assert _decide(client, flagged, "keep")[0] == 200
    client.force_login(tenant_a.admin)
    status, body = _decide(client, flagged, "keep")
    assert status == 409
    assert "Already re-checked" in body


def test_a_stale_version_gets_a_409_and_changes_nothing(
    tenant_a: Tenant, flagged: Claim, client: Client
) -> None:
    # Retracted on its own page after the reviewer loaded the queue: a new version.
    admin = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(admin):
        retraction.claim_retract(actor=admin, claim_id=flagged.pk, reason="decommissioned")
    client.force_login(tenant_a.reviewer)

    status, body = _decide(client, flagged, "keep")

    assert status == 409
    assert f"#{flagged.pk} is retracted now" in body
    with rls.tenant_context(admin):
        assert not AuditEvent.objects.filter(action="review.recheck_keep").exists()
        assert selectors.queue_counts(tenant_a.principal(tenant_a.reviewer))["rechecks"] == 0


def test_retract_withdraws_the_claim_and_clears_the_recheck(
    tenant_a: Tenant, flagged: Claim, client: Client
) -> None:
    client.force_login(tenant_a.reviewer)
    status, body = _decide(client, flagged, "retract", reason="moved to k8s-prod-3")

    assert status == 200, body
    assert f"Retracted claim {flagged.pk}: 1 claims withdrawn" in body
    retracted = _claim(tenant_a, "RUNS_ON")
    assert (retracted.status, retracted.recheck) == (ClaimStatus.RETRACTED, "")
    assert retracted.status_reason == "moved to k8s-prod-3"
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="claim.retract")
    assert (event.target_id, event.data["reason"]) == (str(flagged.pk), "moved to k8s-prod-3")


def test_retract_without_a_reason_is_a_400_and_changes_nothing(
    tenant_a: Tenant, flagged: Claim, client: Client
) -> None:
    client.force_login(tenant_a.reviewer)
    status, body = _decide(client, flagged, "retract", reason="  ")

    assert status == 400
    assert "say why" in body
    unchanged = _claim(tenant_a, "RUNS_ON")
    assert (unchanged.status, unchanged.recheck) == (ClaimStatus.PUBLISHED, WHY)


def test_a_viewer_cannot_decide_a_recheck(tenant_a: Tenant, flagged: Claim, client: Client) -> None:
    client.force_login(tenant_a.viewer)
    assert _decide(client, flagged, "keep")[0] == 403
    assert _decide(client, flagged, "retract", reason="no")[0] == 403
    assert _claim(tenant_a, "RUNS_ON").recheck == WHY
    assert client.get("/review/?queue=rechecks").content.decode().count('class="item"') == 0


def test_another_workspace_sees_no_recheck_and_cannot_decide_one(
    tenant_b: Tenant, flagged: Claim, client: Client
) -> None:
    client.force_login(tenant_b.admin)
    html = client.get("/review/?queue=rechecks").content.decode()
    assert "k8s-prod-1" not in html
    assert re.search(r'data-queue="rechecks">0<', html)
    assert _decide(client, flagged, "keep")[0] == 404
