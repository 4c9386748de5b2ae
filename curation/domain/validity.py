"""When a claim is valid: the one rule behind every "now" and "as of" read (pure).

A claim's valid time is the half-open interval [valid_from, valid_to). "Now" is the
lifecycle's answer, a published claim: supersession and retraction set `valid_to`
when they end one. At an instant, every claim that was ever published answers if its
interval holds that instant. A retracted fact is one of them: retraction ends its
validity, it does not rewrite what was true before (hidden now, found as of then).

The curation selectors and the search SQL each express this rule in their own query
language; tests/test_validity.py holds both to `valid_at` on the same rows.
"""

from __future__ import annotations

import datetime as dt

from curation.domain.tiers import ClaimStatus

# The statuses of claims that were valid at some time. Pending, proposed and rejected
# claims never were, whatever their valid_from says.
EVER_VALID: frozenset[ClaimStatus] = frozenset(
    {ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED, ClaimStatus.RETRACTED}
)
VALID_NOW = ClaimStatus.PUBLISHED


def valid_at(
    *,
    status: str,
    valid_from: dt.datetime,
    valid_to: dt.datetime | None,
    instant: dt.datetime | None,
) -> bool:
    """Whether a claim with this lifecycle was valid at `instant` (None: now)."""
    if instant is None:
        return status == VALID_NOW
    return (
        status in EVER_VALID and valid_from <= instant and (valid_to is None or instant < valid_to)
    )
