"""Request budgets: what counts against which limit, and the sliding-window arithmetic (pure).

A request is charged to its principal (an API key, or a user) and to each root scope the
principal reaches (a key's own scope; the top scopes of a user's memberships): a search
reads every workspace it reaches, so each of them pays for it. Each charge is a counter
over a sliding window: the previous fixed window's count, weighted by how much of it
still lies within the last `window_s` seconds, plus the current window's. No burst of
twice the limit at a window's edge, and two integers per counter.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class Budget(enum.StrEnum):
    """What a request costs: a search embeds its query (and may rerank); a write changes rows."""

    SEARCH = "search"
    WRITE = "write"


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def budget_for(*, method: str, scope: str | None) -> Budget | None:
    """The budget a request is charged to; None for plain reads, which are not limited.

    `scope` is the view's `throttle_scope` (DRF's name): "search" marks the reads that
    cost an embedding or a reranker call.
    """
    method = method.upper()
    if method in WRITE_METHODS:
        return Budget.WRITE
    # HEAD runs the GET view (and its embedding); OPTIONS only describes the view.
    if scope == Budget.SEARCH and method in {"GET", "HEAD"}:
        return Budget.SEARCH
    return None


@dataclass(frozen=True)
class ScopeLimits:
    """A root scope's own limits per window (None: the server's default)."""

    group_id: str
    workspace: Mapping[Budget, int | None]
    principal: Mapping[Budget, int | None]


@dataclass(frozen=True)
class Defaults:
    """The server's limits per window, for a whole workspace and for each principal in it."""

    workspace: Mapping[Budget, int]
    principal: Mapping[Budget, int]


@dataclass(frozen=True)
class Charge:
    """One counter a request increments: its key, its limit, and how a 429 names it."""

    key: str
    limit: int
    names: str


def charges(
    *,
    budget: Budget,
    principal: tuple[str, str],
    scopes: Iterable[ScopeLimits],
    defaults: Defaults,
) -> list[Charge]:
    """The principal's counter (`principal` is its key and how a 429 names it), then one
    per root scope.

    A principal rooted in several scopes gets the most generous of their per-principal
    overrides: an override raises (or lowers) the budget of that scope's principals.
    """
    scopes = list(scopes)
    own = [limit for s in scopes if (limit := s.principal.get(budget)) is not None]
    key, names = principal
    found = [Charge(f"{budget}:p:{key}", max(own) if own else defaults.principal[budget], names)]
    for scope in scopes:
        limit = scope.workspace.get(budget)
        limit = defaults.workspace[budget] if limit is None else limit
        found.append(Charge(f"{budget}:g:{scope.group_id}", limit, "this workspace"))
    return found


@dataclass(frozen=True)
class Window:
    """Where a moment falls among fixed windows of `length_s`: which one, and how far in."""

    number: int
    elapsed_s: float
    length_s: int

    @classmethod
    def at(cls, now_s: float, length_s: int) -> Window:
        number, elapsed = divmod(now_s, length_s)
        return cls(number=int(number), elapsed_s=elapsed, length_s=length_s)

    @property
    def previous_weight(self) -> float:
        """The share of the previous window still within the last `length_s` seconds."""
        return 1.0 - self.elapsed_s / self.length_s


def estimate(*, previous: int, current: int, weight: float) -> float:
    """The sliding-window count of requests in the last window's length."""
    return previous * weight + current


def admits(*, previous: int, current: int, weight: float, limit: int) -> bool:
    """Whether one more request fits (the Lua script decides with the same expression)."""
    return estimate(previous=previous, current=current, weight=weight) + 1 <= limit


def retry_after_s(*, previous: int, current: int, limit: int, window: Window) -> int:
    """Whole seconds until one more request fits, if no other arrives meanwhile (at least 1).

    Within this window the previous one's weight decays; past its end this window's
    count becomes the decaying one and the new window starts empty.
    """
    length, elapsed = window.length_s, window.elapsed_s
    room = limit - 1  # what the estimate may be for one more request to fit
    if room < 0:
        return length
    if current <= room and previous > 0:
        # previous * (1 - (elapsed + d) / length) + current <= room
        wait = length * (1 - (room - current) / previous) - elapsed
        if wait < length - elapsed:
            return max(1, math.ceil(wait))
    # In the next window: current * (1 - t / length) <= room, t seconds into it.
    into_next = length * (1 - room / current) if current > room else 0.0
    return max(1, math.ceil(length - elapsed + into_next))
