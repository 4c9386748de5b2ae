"""Claims: a claim's history, what was valid when, the claims list's filters, the
published value a pending claim would supersede, and related claims."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Q, QuerySet

from curation.domain.names import DEFAULT_FUNCTIONAL_PREDICATES
from curation.domain.params import ClaimFilters
from curation.domain.tiers import ClaimStatus
from curation.domain.validity import EVER_VALID, VALID_NOW
from curation.models import Claim


def claim_history(*, claim_id: int) -> list[Claim]:
    """All revisions of the claim's subject and predicate, oldest first."""
    claim = Claim.objects.filter(pk=claim_id).first()
    if claim is None:
        return []
    return list(
        Claim.objects.filter(
            subject_id=claim.subject_id, predicate=claim.predicate, status__in=sorted(EVER_VALID)
        )
        .union(Claim.objects.filter(pk=claim_id))
        .order_by("valid_from", "pk")
    )


def _valid_at(as_of: dt.datetime | None) -> Q:
    """`curation.domain.validity.valid_at` as a filter on claims (None: now)."""
    if as_of is None:
        return Q(status=VALID_NOW)
    return Q(status__in=sorted(EVER_VALID), valid_from__lte=as_of) & (
        Q(valid_to__isnull=True) | Q(valid_to__gt=as_of)
    )


def claims_valid(*, as_of: dt.datetime | None = None) -> QuerySet[Claim]:
    """Published claims now, or the revisions that were valid at `as_of` (retracted too)."""
    return Claim.objects.filter(_valid_at(as_of))


def claims_filtered(*, filters: ClaimFilters) -> QuerySet[Claim]:
    """The claims list: one status, else what was valid at `as_of`; then the other filters."""
    if filters.status is not None:
        queryset = Claim.objects.filter(status=filters.status)
    else:
        queryset = claims_valid(as_of=filters.as_of)
    if filters.predicate is not None:
        queryset = queryset.filter(predicate=filters.predicate)
    if filters.subject is not None:
        queryset = queryset.filter(subject__canonical_name__iexact=filters.subject)
    if filters.source is not None:
        queryset = queryset.filter(source_id=filters.source)
    if filters.tier is not None:
        queryset = queryset.filter(tier=filters.tier)
    return (
        queryset.select_related("subject", "object_entity")
        .prefetch_related("evidence__episode__source")
        .order_by("-valid_from", "-pk")
    )


def functional_predicates() -> frozenset[str]:
    """Predicates with one value at a time: a new value supersedes the published one."""
    configured = getattr(settings, "VERA_ONTOLOGY__FUNCTIONAL_PREDICATES", None)
    return frozenset(configured) if configured else DEFAULT_FUNCTIONAL_PREDICATES


def attach_current_values(claims: list[Claim]) -> list[Claim]:
    """Set `current_fact` on each claim: the published value of its functional predicate
    that differs, if any, and `current_stays`: approving it leaves that value current (it
    ended, or began before that value: it joins the history instead of superseding).

    Only a functional predicate's different value supersedes: a multi-valued predicate
    keeps both, and the same value is a re-confirmation. The queue must not show a
    conflict that publishing would not act on. One query for the page (a per-row
    subquery would run for the whole queue before the page is cut).
    """
    functional = functional_predicates()
    keys = {
        (claim.subject_id, claim.predicate) for claim in claims if claim.predicate in functional
    }
    current: dict[tuple[int, str], tuple[str, str, dt.datetime]] = {}
    if keys:
        condition = Q()
        for subject_id, predicate in keys:
            condition |= Q(subject_id=subject_id, predicate=predicate)
        rows = (
            Claim.objects.filter(condition, status=ClaimStatus.PUBLISHED)
            .order_by("valid_from")
            .values_list("subject_id", "predicate", "object_key", "fact_text", "valid_from")
        )
        current = {(subject, pred): (key, fact, since) for subject, pred, key, fact, since in rows}
    for claim in claims:
        now = current.get((claim.subject_id, claim.predicate))
        # A claim that ended (a history version's) or began before the current value goes
        # into the history when published: it supersedes nothing, the current value stays.
        replaces = (
            now is not None
            and now[0] != claim.object_key
            and claim.valid_to is None
            and claim.valid_from >= now[2]
        )
        # Attributes for the queue template only, not fields of Claim: the published value
        # that differs, and whether it stays current when this one is approved.
        differs = now is not None and now[0] != claim.object_key
        claim.current_fact = now[1] if differs and now else None  # type: ignore[attr-defined]
        claim.current_stays = differs and not replaces  # type: ignore[attr-defined]
    return claims


def claim_related(claim: Claim, *, limit: int = 20) -> QuerySet[Claim]:
    """Other published claims about the same subject."""
    return (
        Claim.objects.filter(subject_id=claim.subject_id, status=ClaimStatus.PUBLISHED)
        .exclude(pk=claim.pk)
        .select_related("subject", "object_entity")
        .order_by("predicate")[:limit]
    )


def claim_models(claims: QuerySet[Claim]) -> dict[int, Claim]:
    """The claims as models, with what a page or a serializer shows of them."""
    return {
        claim.pk: claim
        for claim in claims.select_related("subject", "object_entity").prefetch_related(
            "evidence__episode__source"
        )
    }
