"""Every status a claim can be in, against every status it could be set to: Postgres
admits exactly the lifecycle's transitions (curation.domain.lifecycle), whoever writes;
and only the lifecycle service (curation.services.lifecycle) writes a claim's status,
validity, supersession or version, and only it inserts a claim born published or
superseded: any other write is refused by Postgres."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from curation.domain.lifecycle import ALLOWED, transition_refusal
from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, Entity, Source
from curation.services.lifecycle import claim_publish, claims_supersede
from tenants import rls
from tests.support.lifecycle import history_written_by_hand
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
    with history_written_by_hand():  # a claim born in any status: the walk's start
        return Claim.objects.create(**_row(group_id, source, subject, status))


def _row(group_id: str, source: Source, subject: Entity, status: ClaimStatus) -> dict[str, Any]:
    return {
        "group_id": group_id, "source": source, "predicate": "RUNS_ON", "object_literal": "k8s",
        "subject": subject, "fact_text": "svc runs on k8s", "confidence": 1.0,
        "verification": Verification.AUTO, "tier": 1, "authority": 1.0, "status": status,
        "valid_from": timezone.now(),
    }  # fmt: skip


def _moved(claim: Claim, to: ClaimStatus) -> bool:
    """Whether Postgres lets the row move to `to` (a refusal rolls back its savepoint)."""
    try:
        with transaction.atomic(), history_written_by_hand():
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


GUARDED_WRITES = {
    "status by a bulk update": lambda claim: Claim.objects.filter(pk=claim.pk).update(
        status=ClaimStatus.SUPERSEDED
    ),
    "valid_to by save()": lambda claim: _saved(claim, valid_to=claim.valid_from),
    "valid_from by save()": lambda claim: _saved(claim, valid_from=timezone.now()),
    "version by raw SQL": lambda claim: _raw(
        "UPDATE curation_claim SET version = version + 1 WHERE id = %s", claim.pk
    ),
    "superseded_by by raw SQL": lambda claim: _raw(
        "UPDATE curation_claim SET superseded_by_id = id WHERE id = %s", claim.pk
    ),
}


def _saved(claim: Claim, **fields: object) -> None:
    for name, value in fields.items():
        setattr(claim, name, value)
    claim.save()


def _raw(sql: str, pk: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk])


@pytest.mark.parametrize("write", GUARDED_WRITES, ids=list(GUARDED_WRITES))
def test_only_the_lifecycle_service_writes_status_validity_supersession_and_version(
    tenant_a: Tenant, write: str
) -> None:
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        claim = _claim(tenant_a, ClaimStatus.PUBLISHED)
        refused = pytest.raises(IntegrityError, match=r"written by curation\.services\.lifecycle")
        with refused, transaction.atomic():
            GUARDED_WRITES[write](claim)
        claim.refresh_from_db()
        assert (claim.status, claim.valid_to, claim.superseded_by_id, claim.version) == (
            ClaimStatus.PUBLISHED, None, None, 1,
        )  # fmt: skip
        # Other fields are anyone's (a reviewer's edit of the text, the verification).
        Claim.objects.filter(pk=claim.pk).update(fact_text="svc runs on nomad")
        # The service itself may: the same change, made through it.
        ended = claims_supersede(
            Claim.objects.filter(pk=claim.pk), at=timezone.now(), reason="artifact revised"
        )
        claim.refresh_from_db()
    assert ended == [claim.pk]
    assert (claim.status, claim.version, claim.fact_text) == (
        ClaimStatus.SUPERSEDED, 2, "svc runs on nomad",
    )  # fmt: skip
    assert claim.valid_to is not None


@pytest.mark.parametrize("status", [ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED])
def test_postgres_refuses_a_claim_inserted_published_or_superseded_past_the_lifecycle(
    tenant_a: Tenant, status: ClaimStatus
) -> None:
    """A new path that inserted a published claim itself would skip supersession: the
    database refuses it, one row or many, while the lifecycle's own insert passes."""
    group_id = tenant_a.workspace.group_id
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        waiting = _claim(tenant_a, ClaimStatus.PENDING_REVIEW)  # any other status is anyone's
        source, subject = waiting.source, waiting.subject
        refused = pytest.raises(IntegrityError, match=r"published \(or superseded\) by curation")
        with refused, transaction.atomic():
            Claim.objects.create(**_row(group_id, source, subject, status))
        with refused, transaction.atomic():
            Claim.objects.bulk_create([Claim(**_row(group_id, source, subject, status))] * 1)
        with refused, transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO curation_claim (group_id, source_id, subject_id, predicate,"
                " object_literal, object_key, fact_text, confidence, verification, tier,"
                " authority, status, status_reason, valid_from, recorded_at, version, recheck)"
                " VALUES (%s, %s, %s, 'RUNS_ON', 'k8s', 'l:k8s', 'svc runs on k8s', 1, 'auto',"
                " 1, 1, %s, '', now(), now(), 1, '')",
                [group_id, source.pk, subject.pk, status.value],
            )
        assert not Claim.objects.filter(status=status).exists()
        published = claim_publish(Claim(**_row(group_id, source, subject, ClaimStatus.PROPOSED)))
        assert published.pk is not None
        assert Claim.objects.get(pk=published.pk).status == ClaimStatus.PUBLISHED
