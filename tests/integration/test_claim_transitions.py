"""Every status a claim can be in, against every status it could be set to: Postgres
admits exactly the lifecycle's transitions (curation.domain.lifecycle), whoever writes."""

from __future__ import annotations

import itertools

import pytest
from django.db import DatabaseError, transaction
from django.utils import timezone

from curation.domain.lifecycle import ALLOWED, transition_refusal
from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Entity, Source
from tenants import rls
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

PAIRS = list(itertools.product(ClaimStatus, ClaimStatus))


def _claim(tenant: Tenant, status: ClaimStatus) -> Claim:
    group_id = tenant.workspace.group_id
    source, _ = Source.objects.get_or_create(
        group_id=group_id, name="walk",
        defaults={"origin_group_id": group_id, "kind": "markdown", "trust_tier": 1,
                  "config": {"root": "/nonexistent"}},
    )  # fmt: skip
    subject = Entity.objects.create(group_id=group_id, canonical_name=f"svc-{status}")
    return Claim.objects.create(
        group_id=group_id, source=source, predicate="RUNS_ON", object_literal="k8s",
        subject=subject, fact_text="svc runs on k8s", confidence=1.0,
        verification=Verification.AUTO, tier=1, authority=1.0, status=status,
        valid_from=timezone.now(),
    )  # fmt: skip


def _moved(claim: Claim, to: ClaimStatus) -> bool:
    """Whether Postgres lets the row move to `to` (a refusal rolls back its savepoint)."""
    try:
        with transaction.atomic():
            Claim.objects.filter(pk=claim.pk).update(status=to)
    except DatabaseError as error:
        refused = str(error)
    else:
        return True
    assert "Invalid transition" in refused, refused
    return False


def test_postgres_admits_exactly_the_lifecycles_transitions(tenant_a: Tenant) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        walked = {
            (before, after): _moved(_claim(tenant_a, before), after) for before, after in PAIRS
        }
    expected = {(b, a): b == a or a in ALLOWED[b] for b, a in PAIRS}
    assert walked == expected


def test_final_statuses_stay_final_and_say_why() -> None:
    for final in (ClaimStatus.REJECTED, ClaimStatus.RETRACTED):
        assert not ALLOWED[final]
        assert "final" in str(transition_refusal(final, ClaimStatus.PUBLISHED))
    assert transition_refusal(ClaimStatus.PUBLISHED, ClaimStatus.PENDING_REVIEW) == (
        "a published claim cannot become pending_review"
    )
    assert transition_refusal(ClaimStatus.SUPERSEDED, ClaimStatus.PUBLISHED) is None
    assert transition_refusal(ClaimStatus.PUBLISHED, ClaimStatus.PUBLISHED) is None
