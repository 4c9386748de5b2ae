"""Backpressure as ingestion sees it: the lanes' thresholds, and whether to hold back.

Ingestion is what floods the projection lane (one job per claim, per consumer), so it
is the producer that yields: with VERA_BACKPRESSURE__INGEST=defer a scheduled run waits
for a later tick and a manual one is refused; with slow it pauses between pages.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from curation.domain.backpressure import OUTBOX_LANES, Threshold, pressure
from curation.domain.outbox import Lane
from curation.selectors import outbox_lane_load


def lane_thresholds() -> dict[Lane, Threshold]:
    """Each outbox lane's thresholds: its own (VERA_BACKPRESSURE__LANE_*), else the defaults."""
    backlog, age = settings.VERA_BACKPRESSURE__LANE_BACKLOG, settings.VERA_BACKPRESSURE__LANE_AGE_S
    return {
        lane: Threshold(
            backlog=backlog.get(lane, settings.VERA_BACKPRESSURE__BACKLOG),
            age_s=age.get(lane, settings.VERA_BACKPRESSURE__AGE_S),
        )
        for lane in OUTBOX_LANES
    }


def ingest_pressure(*, now: dt.datetime) -> str | None:
    """Why ingestion should hold back now (the projection lane is degraded), else None.

    None without a query when VERA_BACKPRESSURE__INGEST is off; otherwise one query
    over the pending jobs' partial index (`outbox_lane_load`).
    """
    if settings.VERA_BACKPRESSURE__INGEST == "off":
        return None
    load = outbox_lane_load(now=now)[Lane.PROJECTION]
    return pressure(load, lane_thresholds()[Lane.PROJECTION])
