"""The review queues: pending claims, re-checks and merge candidates a principal may
decide, their counts and filter options, and the claims queue by document (cards)."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Max, Min, OuterRef, Prefetch, Q, QuerySet, Subquery

from curation.domain.errors import ObjectStoreError
from curation.domain.highlight import Piece, card_order, highlight
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Evidence, MergeCandidate, Source
from curation.ports import ObjectStore
from curation.selectors.claims import attach_current_values
from tenants.domain.access import Principal
from tenants.domain.scopes import Role

logger = logging.getLogger(__name__)


SORTS = {
    "newest": ("-recorded_at", "-pk"),
    "oldest": ("recorded_at", "pk"),
    "confidence": ("-confidence", "pk"),
    "low-confidence": ("confidence", "pk"),
}


def reviewable_groups(principal: Principal) -> list[str]:
    """Groups where the principal may decide (reviewer or above)."""
    return principal.groups_at_least(Role.REVIEWER)


# A re-check asks about a value that stands (published, or superseded since); a claim
# retracted meanwhile has nothing left to ask.
RECHECKABLE = (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)


def _rechecks(groups: list[str]) -> QuerySet[Claim]:
    """Claims of these groups that ask a reviewer to look again (`Claim.recheck`)."""
    return Claim.objects.filter(group_id__in=groups, status__in=RECHECKABLE).exclude(recheck="")


def _waiting(*, principal: Principal, status: str, filters: dict[str, str]) -> QuerySet[Claim]:
    """Claims waiting in one queue that the principal may decide, filtered."""
    queryset = Claim.objects.filter(group_id__in=reviewable_groups(principal), status=status)
    return _filtered(queryset, filters)


def _filtered(queryset: QuerySet[Claim], filters: dict[str, str]) -> QuerySet[Claim]:
    """A queue's claims through its filters (source, predicate, subject, tier)."""
    if filters.get("source"):
        queryset = queryset.filter(source_id=filters["source"])
    if filters.get("predicate"):
        queryset = queryset.filter(predicate=filters["predicate"])
    if filters.get("entity"):
        queryset = queryset.filter(subject__canonical_name__icontains=filters["entity"])
    if filters.get("tier"):
        queryset = queryset.filter(tier=filters["tier"])
    return queryset


def review_queue(
    *, principal: Principal, status: str, filters: dict[str, str], sort: str = "oldest"
) -> QuerySet[Claim]:
    """Claims waiting in one queue, with what a row shows loaded up front (bounded queries)."""
    return _rows(_waiting(principal=principal, status=status, filters=filters), sort)


def recheck_queue(
    *, principal: Principal, filters: dict[str, str], sort: str = "oldest"
) -> QuerySet[Claim]:
    """Reviewed claims that reprocessing no longer found in their document, each with why
    (`recheck`): a reviewer keeps or retracts each one."""
    return _rows(_filtered(_rechecks(reviewable_groups(principal)), filters), sort)


def _rows(claims: QuerySet[Claim], sort: str) -> QuerySet[Claim]:
    """A queue's claims with what a row shows loaded up front (bounded queries), sorted."""
    return (
        claims.select_related("subject", "object_entity", "source")
        .prefetch_related(
            Prefetch("evidence", queryset=Evidence.objects.select_related("episode").order_by("pk"))
        )
        .order_by(*SORTS.get(sort, SORTS["oldest"]))
    )


def queue_counts(principal: Principal) -> dict[str, int]:
    """How many items wait in each queue the principal can work."""
    groups = reviewable_groups(principal)
    claims = Claim.objects.filter(group_id__in=groups).aggregate(
        claims=Count("pk", filter=Q(status=ClaimStatus.PENDING_REVIEW)),
        proposals=Count("pk", filter=Q(status=ClaimStatus.PROPOSED)),
        rechecks=Count("pk", filter=Q(status__in=RECHECKABLE) & ~Q(recheck="")),
    )
    merges = MergeCandidate.objects.filter(
        group_id__in=groups, status=MergeCandidate.Status.OPEN
    ).count()
    return {"claims": claims["claims"], "proposals": claims["proposals"],
            "rechecks": claims["rechecks"], "merges": merges}  # fmt: skip


def merge_queue(*, principal: Principal) -> QuerySet[MergeCandidate]:
    return (
        MergeCandidate.objects.filter(
            group_id__in=reviewable_groups(principal), status=MergeCandidate.Status.OPEN
        )
        .select_related("entity", "candidate")
        .order_by("-score", "pk")
    )


def queue_filter_options(principal: Principal, *, queue: str = "claims") -> dict[str, list[object]]:
    """Sources and predicates present in the principal's queues (the re-checks' own for
    that queue), for the filter form."""
    groups = reviewable_groups(principal)
    waiting = (
        _rechecks(groups)
        if queue == "rechecks"
        else Claim.objects.filter(
            group_id__in=groups, status__in=[ClaimStatus.PENDING_REVIEW, ClaimStatus.PROPOSED]
        )
    )
    return {
        "sources": list(
            Source.objects.filter(group_id__in=groups).order_by("name").values_list("pk", "name")
        ),
        "predicates": list(waiting.order_by().values_list("predicate", flat=True).distinct()),
    }


# --- The claims queue by document: one card per episode ------------------------------


def _document() -> Subquery:
    """A claim's document: the episode of its first evidence (a claim another document
    re-confirmed later still belongs to the one it was extracted from)."""
    first = Evidence.objects.filter(claim=OuterRef("pk")).order_by("pk").values("episode_id")
    return Subquery(first[:1])


def review_document_ids(*, principal: Principal, filters: dict[str, str], sort: str = "oldest"
                        ) -> QuerySet[Claim, int]:  # fmt: skip
    """The documents with claims waiting for review, in the order their oldest (or newest)
    waiting claim arrived; a claim without evidence belongs to no document (rows only)."""
    waiting = _waiting(principal=principal, status=ClaimStatus.PENDING_REVIEW, filters=filters)
    newest = sort == "newest"
    return (
        waiting.annotate(document=_document())
        .exclude(document=None)
        .order_by()
        .values("document")
        .annotate(arrived=Max("recorded_at") if newest else Min("recorded_at"))
        .order_by("-arrived" if newest else "arrived", "document")
        .values_list("document", flat=True)
    )


@dataclass(frozen=True)
class DocumentCard:
    """A document of the claims queue: its waiting claims (relations, then passages) and
    its text with every waiting claim's evidence span marked."""

    episode: Episode
    claims: list[Claim]
    pieces: list[Piece]  # empty when the text cannot be read (erased, never stored, store down)


def _text(store: ObjectStore, episode: Episode) -> str:
    if not episode.object_key:
        return ""
    try:
        return store.get(episode.object_key).decode("utf-8", errors="replace")
    except KeyError:  # erased: the card still lists the claims
        return ""
    except ObjectStoreError as error:  # the store is down: review goes on without the text
        logger.warning("episode %s text unavailable: %s", episode.pk, error)
        return ""


def _card(episode: Episode, claims: list[Claim], store: ObjectStore) -> DocumentCard:
    spans = {
        claim.pk: (evidence.start, evidence.end)
        for claim in claims
        for evidence in claim.evidence.all()
        if evidence.episode_id == episode.pk and evidence.start is not None
    }
    claims.sort(key=lambda c: card_order(c.predicate, spans.get(c.pk, (None, None))[0], c.pk))
    text = _text(store, episode)
    marked = [(start, end) for start, end in spans.values() if start is not None and end]
    return DocumentCard(episode, claims, highlight(text, marked) if text else [])


def review_documents(
    *, principal: Principal, episode_ids: list[int], filters: dict[str, str], store: ObjectStore
) -> list[DocumentCard]:
    """The cards of these documents, in their order, in a fixed number of queries (the
    claims, their evidence, the values they would supersede, the episodes and sources);
    each document's text is read from the object store."""
    waiting = _waiting(principal=principal, status=ClaimStatus.PENDING_REVIEW, filters=filters)
    claims = (
        waiting.annotate(document=_document())
        .filter(document__in=episode_ids)
        .select_related("subject", "object_entity", "source")
        .prefetch_related(Prefetch("evidence", queryset=Evidence.objects.order_by("pk")))
    )
    by_document: dict[int, list[Claim]] = defaultdict(list)
    for claim in attach_current_values(list(claims)):
        # `document` is the annotation above, not a field of Claim.
        by_document[claim.document].append(claim)  # type: ignore[attr-defined]
    episodes = Episode.objects.select_related("source").in_bulk(episode_ids)
    return [
        _card(episodes[pk], by_document[pk], store)
        for pk in episode_ids
        if pk in episodes and by_document[pk]
    ]
