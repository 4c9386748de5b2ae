"""Read-side queries of curation."""

from __future__ import annotations

import datetime as dt

from django.db.models import Q, QuerySet

from curation.domain.tiers import ClaimStatus
from curation.models import Claim


def claim_history(*, claim_id: int) -> list[Claim]:
    """All revisions of the claim's subject and predicate, oldest first."""
    claim = Claim.objects.filter(pk=claim_id).first()
    if claim is None:
        return []
    return list(
        Claim.objects.filter(subject_id=claim.subject_id, predicate=claim.predicate)
        .exclude(
            status__in=[ClaimStatus.PENDING_REVIEW, ClaimStatus.PROPOSED, ClaimStatus.REJECTED]
        )
        .union(Claim.objects.filter(pk=claim_id))
        .order_by("valid_from", "pk")
    )


def claims_valid(*, as_of: dt.datetime | None = None) -> QuerySet[Claim]:
    """Published claims now, or the revisions that were valid at `as_of`."""
    if as_of is None:
        return Claim.objects.filter(status=ClaimStatus.PUBLISHED)
    return Claim.objects.filter(
        Q(valid_to__isnull=True) | Q(valid_to__gt=as_of),
        status__in=[ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED],
        valid_from__lte=as_of,
    )
