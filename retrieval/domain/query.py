"""A search request, parsed once for every entrypoint (REST API, portal, later MCP) (pure)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass

from curation.domain.params import TIER_RANGE
from kernel.params import MAX_ID, InvalidQuery, ParamReader

MAX_QUERY_CHARS = 2000
DEFAULT_K, MAX_K = 10, 100
PARAMETERS = ("q", "k", "as_of", "predicate", "entity", "source", "tier", "snapshot", "scope")
# A scope's group id: its kind's letter and 128 bits in hex (tenants.domain.scopes).
GROUP_ID = re.compile(r"^[owpu]:[0-9a-f]{32}$")

__all__ = [
    "DEFAULT_K", "MAX_K", "MAX_QUERY_CHARS", "PARAMETERS", "InvalidQuery", "Query", "parse_query",
]  # fmt: skip


@dataclass(frozen=True)
class Query:
    """A validated search request."""

    text: str
    k: int = DEFAULT_K
    as_of: dt.datetime | None = None
    predicate: str | None = None
    entity: str | None = None
    source: int | None = None
    tier: int | None = None
    snapshot: int | None = None  # a sealed knowledge snapshot to search instead of the index
    # Narrows the search to one scope the caller reads and what is under it (the caller's
    # credential still decides what that is: never wider).
    scope: str | None = None
    # Claims whose vectors the question's moves towards (`retrieval.domain.expansion`):
    # a search "more like these" reads the vector lists alone. Set by a context pack on
    # its second reading, never by a caller's parameter.
    like: tuple[int, ...] = ()


def parse_query(params: Mapping[str, str]) -> Query:
    """The validated request; InvalidQuery names every bad parameter with a message."""
    reader = ParamReader(params, allowed=PARAMETERS)
    raw = params.get("q", "")
    text = raw.strip()
    if not text:
        reader.fail("q", "the query is empty")
    elif "\x00" in text:
        reader.fail("q", "the query contains a NUL character")
    elif len(raw) > MAX_QUERY_CHARS:  # as given, as the API schema's maxLength counts
        reader.fail("q", f"the query is longer than {MAX_QUERY_CHARS} characters")
    query = Query(
        text=text,
        k=reader.integer("k", low=1, high=MAX_K) or DEFAULT_K,
        as_of=reader.instant("as_of"),
        predicate=reader.text("predicate"),
        entity=reader.text("entity"),
        source=reader.integer("source", low=1, high=MAX_ID),
        tier=reader.integer("tier", low=TIER_RANGE[0], high=TIER_RANGE[1]),
        snapshot=reader.integer("snapshot", low=1, high=MAX_ID),
        scope=reader.text("scope"),
    )
    if query.scope is not None and not GROUP_ID.match(query.scope):
        reader.fail("scope", "must be a scope's group id, e.g. w:0123… (32 hex digits)")
    reader.check()
    return query
