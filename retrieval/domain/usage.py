"""Provider usage per workspace and day: who a batch of provider work is charged to."""

from __future__ import annotations

import datetime as dt
from collections.abc import Set
from dataclasses import dataclass

# The bucket of work done for several groups at once (a search over every workspace the
# caller sees, a system job across groups): splitting it would invent a share. No tenant
# holds this group id, so only the operator reads it (and Prometheus has it in its totals).
SHARED = "(shared)"


def charged_group(groups: Set[str]) -> str:
    """The group a batch is charged to: the one group the work was for, else SHARED."""
    if len(groups) == 1:
        return next(iter(groups))
    return SHARED


@dataclass(frozen=True)
class UsageTotal:
    """One group's usage of one provider model on one day (UTC)."""

    group_id: str
    day: dt.date
    provider: str
    model: str
    calls: int
    tokens: int
    cost_usd: float
