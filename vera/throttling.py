"""Per-principal and per-workspace rate limits on every REST view (DRF's throttle hook).

Searches (views with `throttle_scope = "search"`) and writes (POST, PUT, PATCH,
DELETE) each have their own budget; plain reads are not limited. A refused request is a
429 with `Retry-After` (whole seconds) and a message naming the budget that ran out.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from tenants.adapters.rate_limits import RateLimiterUnavailable
from tenants.domain.access import Principal
from tenants.domain.limits import Budget, Defaults, Window, budget_for, charges
from tenants.principals import principal_of
from tenants.selectors import rate_limit_scopes

from . import wiring

logger = logging.getLogger(__name__)
# One warning a minute per process while the counters are down, not one per request.
_WARN_EVERY_S = 60.0
_last_warning = -_WARN_EVERY_S


def defaults() -> Defaults:
    """The server's limits per window (VERA_RATE_LIMIT__*)."""
    return Defaults(
        workspace={
            Budget.SEARCH: settings.VERA_RATE_LIMIT__WORKSPACE_SEARCH,
            Budget.WRITE: settings.VERA_RATE_LIMIT__WORKSPACE_WRITE,
        },
        principal={
            Budget.SEARCH: settings.VERA_RATE_LIMIT__PRINCIPAL_SEARCH,
            Budget.WRITE: settings.VERA_RATE_LIMIT__PRINCIPAL_WRITE,
        },
    )


def _principal(principal: Principal) -> tuple[str, str]:
    """The principal's counter key and how a 429 names it."""
    if principal.api_key_id is not None:
        return principal.label, "this API key"  # api-key:<random prefix>
    return f"user:{principal.user_id}", "this user"


def _fail_open(error: RateLimiterUnavailable) -> bool:
    """Let the request through while Redis is unreachable, and say so in the log.

    Failing open: the limiter guards cost and fairness, not access (authentication and
    row-level security do not depend on it). Redis down already stops the workers and
    turns /healthz red; answering every API call with a 503 as well would turn a cache
    outage into a full outage, while the providers behind search keep their own token
    buckets and breakers for the minutes the counters are down.
    """
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= _WARN_EVERY_S:
        _last_warning = now
        logger.warning("rate limits not enforced: the counters are unreachable (%s)", error)
    return True


def principal_charge(principal: Principal, budget: Budget) -> tuple[str, int] | None:
    """Charge one request of `budget` to the principal and the root scopes it reaches:
    None when it may go ahead, else (why, seconds to wait). The REST API and the MCP
    server charge the same counters, so a principal has one budget whichever way it comes.
    """
    plan = charges(
        budget=budget, principal=_principal(principal),
        scopes=rate_limit_scopes(principal), defaults=defaults(),
    )  # fmt: skip
    window = Window.at(time.time(), settings.VERA_RATE_LIMIT__WINDOW_S)
    try:
        refusal = wiring.rate_limiter().hit(plan, window=window)
    except RateLimiterUnavailable as error:
        _fail_open(error)
        return None
    if refusal is None:
        return None
    detail = (
        f"{budget.capitalize()} rate limit reached for {refusal.charge.names}: "
        f"{refusal.charge.limit} per {window.length_s} s."
    )
    return detail, refusal.retry_after_s


class RateLimitThrottle(BaseThrottle):
    """Charges a search or a write to its principal and to each root scope it reaches."""

    def budget(self, view: object, method: str) -> Budget | None:
        return budget_for(method=method, scope=getattr(view, "throttle_scope", None))

    def allow_request(self, request: Request, view: object) -> bool:
        budget = self.budget(view, request.method or "GET")
        if budget is None:
            return True
        refused = principal_charge(principal_of(request), budget)
        if refused is None:
            return True
        detail, retry_after_s = refused
        # Raised here rather than returned as False: DRF's own 429 names no budget.
        raise exceptions.Throttled(wait=retry_after_s, detail=detail)
