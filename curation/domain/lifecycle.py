"""A claim's lifecycle: which status may follow which (pure; the database enforces it).

    proposed ─┐                ┌─> superseded ─┐
              ├─> published ───┤       ^       ├─> retracted (final)
    pending ──┘        ^       └───────┼───────┘
      review ──> rejected (final)      └── restored when what superseded it is withdrawn

- A waiting claim (proposed, pending review) is published by a decision, goes straight
  into the history (superseded) when it arrives after a newer value or its record says it
  ended, is rejected, or is withdrawn with its document (retracted).
- A published value is superseded by the next one, or retracted.
- A superseded value is current again (published) when what superseded it is retracted
  or erased, and can itself be retracted.
- Rejected and retracted are final: nothing is un-written. Reinstating a retracted
  claim publishes a new claim (`claim_reinstate`), and a rejected one is proposed again.

`curation.models.Claim` declares these as a `pgtrigger.FSM` on its status, so every
writer (a service, a bulk update, the admin, raw SQL) meets the same rule.
"""

from __future__ import annotations

from collections.abc import Mapping

from curation.domain.tiers import ClaimStatus

WAITING = (ClaimStatus.PROPOSED, ClaimStatus.PENDING_REVIEW)
FINAL = frozenset({ClaimStatus.REJECTED, ClaimStatus.RETRACTED})

ALLOWED: Mapping[ClaimStatus, frozenset[ClaimStatus]] = {
    **{
        waiting: frozenset({
            ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED, ClaimStatus.REJECTED,
            ClaimStatus.RETRACTED,
        })
        for waiting in WAITING
    },
    ClaimStatus.PUBLISHED: frozenset({ClaimStatus.SUPERSEDED, ClaimStatus.RETRACTED}),
    ClaimStatus.SUPERSEDED: frozenset({ClaimStatus.PUBLISHED, ClaimStatus.RETRACTED}),
    ClaimStatus.REJECTED: frozenset(),
    ClaimStatus.RETRACTED: frozenset(),
}  # fmt: skip


def transition_refusal(before: ClaimStatus, after: ClaimStatus) -> str | None:
    """Why a claim may not go from `before` to `after`, or None when it may (staying in
    the same status is no transition)."""
    if before == after or after in ALLOWED[before]:
        return None
    if before in FINAL:
        return f"a {before.value} claim is final; nothing is un-written"
    return f"a {before.value} claim cannot become {after.value}"


def transitions() -> list[tuple[str, str]]:
    """Every allowed (from, to) pair, in a fixed order (the trigger's list)."""
    return [
        (before.value, after.value)
        for before in ClaimStatus
        for after in sorted(ALLOWED[before], key=list(ClaimStatus).index)
    ]
