"""Backpressure: when an outbox lane has more waiting work, or older, than it can promise (pure).

The interactive lane runs the urgent outbox jobs (a reviewer's decision), the
projection lane the bulk ones. A lane's load is its visible pending jobs (due, not
leased to a worker nor waiting out a retry's backoff) and how long the longest-waiting
of them has been due: a lane whose workers keep up has few and young ones, whatever
volume passes through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from curation.domain.outbox import Lane

OUTBOX_LANES: tuple[Lane, ...] = (Lane.INTERACTIVE, Lane.PROJECTION)


@dataclass(frozen=True)
class LaneLoad:
    """A lane's visible pending jobs and the longest wait among them, in seconds."""

    lane: Lane
    backlog: int = 0
    oldest_age_s: float = 0.0


@dataclass(frozen=True)
class Threshold:
    """Past either figure a lane is degraded."""

    backlog: int
    age_s: int


def pressure(load: LaneLoad, threshold: Threshold) -> str | None:
    """Why the lane is degraded, naming the lane and the figure; None when it keeps up."""
    reasons = []
    if load.backlog > threshold.backlog:
        reasons.append(f"{load.backlog} visible pending jobs (threshold {threshold.backlog})")
    if load.oldest_age_s > threshold.age_s:
        reasons.append(
            f"the oldest has waited {load.oldest_age_s:.0f} s (threshold {threshold.age_s} s)"
        )
    return f"outbox lane {load.lane}: {'; '.join(reasons)}" if reasons else None
