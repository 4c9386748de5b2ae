"""The claims list's and the related-entities query's parameters, read into typed values
(pure) with `kernel.params.ParamReader`, the reader every GET entrypoint shares.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from curation.domain.tiers import ClaimStatus, Tier
from kernel.params import MAX_ID, ParamReader

TIER_RANGE = (min(Tier).value, max(Tier).value)


# --- the claims list (GET /api/v1/claims) ----------------------------------------------

CLAIM_FILTERS = ("status", "predicate", "subject", "source", "tier", "as_of")
PAGINATION = ("limit", "offset")  # read by the paginator, not here


@dataclass(frozen=True)
class ClaimFilters:
    """Which claims to list: one status, or what was valid at `as_of` (None: now)."""

    status: ClaimStatus | None = None
    as_of: dt.datetime | None = None
    predicate: str | None = None
    subject: str | None = None
    source: int | None = None
    tier: int | None = None


def parse_claim_filters(params: Mapping[str, str]) -> ClaimFilters:
    """The validated filters; InvalidQuery names every bad one."""
    # `scope` narrows row-level security (the view's), not a filter here.
    reader = ParamReader(params, allowed=(*CLAIM_FILTERS, *PAGINATION, "scope"))
    status = reader.choice("status", [s.value for s in ClaimStatus])
    filters = ClaimFilters(
        status=ClaimStatus(status) if status else None,
        as_of=reader.instant("as_of"),
        predicate=reader.text("predicate"),
        subject=reader.text("subject"),
        source=reader.integer("source", low=1, high=MAX_ID),
        tier=reader.integer("tier", low=TIER_RANGE[0], high=TIER_RANGE[1]),
    )
    reader.check()
    return filters


RELATED_PARAMS = ("hops", "as_of", "predicate", "limit")
HOPS_RANGE = (1, 3)
PATHS_RANGE = (1, 500)


@dataclass(frozen=True)
class RelatedQuery:
    """What `GET /entities/{id}/related` asks: depth, instant, predicates, how many paths."""

    hops: int = 1
    as_of: dt.datetime | None = None
    predicates: tuple[str, ...] = ()
    limit: int = 100


def parse_related(params: Mapping[str, str]) -> RelatedQuery:
    """The validated query (predicates comma-separated); InvalidQuery names every bad one."""
    reader = ParamReader(params, allowed=RELATED_PARAMS)
    hops = reader.integer("hops", low=HOPS_RANGE[0], high=HOPS_RANGE[1])
    as_of = reader.instant("as_of")
    predicate = reader.text("predicate")
    limit = reader.integer("limit", low=PATHS_RANGE[0], high=PATHS_RANGE[1])
    reader.check()
    predicates = tuple(p.strip().upper() for p in (predicate or "").split(",") if p.strip())
    return RelatedQuery(hops=hops or 1, as_of=as_of, predicates=predicates, limit=limit or 100)
