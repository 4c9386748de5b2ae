"""Query strings read into typed values (pure): one set of rules for every GET entrypoint.

Curation's and retrieval's entrypoints (REST API, portal, later MCP) parse their
parameters with these helpers, and each renders an `InvalidQuery` its own way: the
API as a 400 with a message per field, the portal beside its form.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from curation.domain.tiers import ClaimStatus, Tier

MAX_ID = 2**62  # a bigint primary key, with room: larger values are no id
TIER_RANGE = (min(Tier).value, max(Tier).value)
UNKNOWN_FIELD = "detail"  # unknown parameters are not a field of their own


class InvalidQuery(ValueError):
    """A query string that cannot be answered: a message per offending field."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {message}" for name, message in self.errors.items()))


class ParamReader:
    """Typed values out of a query string; every problem is kept and raised by `check()`."""

    def __init__(
        self, params: Mapping[str, str], *, allowed: Collection[str] | None = None
    ) -> None:
        self.params = params
        self.errors: dict[str, str] = {}
        unknown = sorted(set(params) - set(allowed)) if allowed is not None else []
        if unknown:
            self.fail(UNKNOWN_FIELD, f"unknown parameter(s): {', '.join(unknown)}")

    def fail(self, name: str, message: str) -> None:
        """Record a problem with `name` (the first one per field is kept)."""
        self.errors.setdefault(name, message)

    def text(self, name: str) -> str | None:
        """The value as given; a blank value is no value."""
        return self.params.get(name) or None

    def integer(self, name: str, *, low: int, high: int) -> int | None:
        """An integer in [low, high], or None when absent."""
        if name not in self.params:
            return None
        try:
            value = int(self.params[name])
        except ValueError:
            self.fail(name, "must be an integer")
            return None
        if not low <= value <= high:
            self.fail(name, f"must be between {low} and {high}")
            return None
        return value

    def instant(self, name: str) -> dt.datetime | None:
        """An ISO 8601 instant with its time zone, or None when absent."""
        if name not in self.params:
            return None
        try:
            value = dt.datetime.fromisoformat(self.params[name])
        except ValueError:
            value = None
        if value is None or value.tzinfo is None:
            self.fail(name, "use an ISO 8601 instant with a time zone")
            return None
        return storable(value)

    def choice(self, name: str, choices: Collection[str]) -> str | None:
        """One of `choices`, or None when absent."""
        if name not in self.params:
            return None
        value = self.params[name]
        if value not in choices:
            self.fail(name, f"must be one of {', '.join(sorted(choices))}")
            return None
        return value

    def check(self) -> None:
        """Raise InvalidQuery naming every problem found so far."""
        if self.errors:
            raise InvalidQuery(self.errors)


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
    reader = ParamReader(params, allowed=(*CLAIM_FILTERS, *PAGINATION))
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


# The largest offset the database stores (ISO 8601 allows up to 23:59).
STORED_OFFSET = dt.timedelta(hours=15, minutes=59)


def storable(value: dt.datetime) -> dt.datetime:
    """The instant as given, or in UTC when its offset is past what the database stores
    (+18:35 is valid ISO 8601). Within a day of the calendar's ends, that end (no
    fact's validity reaches there)."""
    offset = value.utcoffset() or dt.timedelta(0)
    if abs(offset) <= STORED_OFFSET:
        return value
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        edge = dt.datetime.max if value.year > 1 else dt.datetime.min  # noqa: DTZ901 - given a zone below
        return edge.replace(tzinfo=dt.UTC)
