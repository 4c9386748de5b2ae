"""Backpressure of the outbox lanes: measured, exported as gauges, announced once per change.

Run by /healthz and by beat's health task every minute, so the gauges and the log line
follow a lane without anyone probing. The announcement is shared through Redis: one
warning when a lane turns degraded and one info line when it recovers, whichever web
or worker process notices first, not one per probe.
"""

from __future__ import annotations

import logging

import redis
from django.db import connection
from django.utils import timezone

from curation.domain.backpressure import LaneLoad, pressure
from curation.domain.outbox import Lane
from curation.selectors import outbox_lane_load
from curation.usecases import lane_thresholds

from . import metrics, wiring

logger = logging.getLogger(__name__)


def _announce(lane: Lane, reason: str | None) -> None:
    """Log a lane's change of state once across processes (the state is kept in Redis)."""
    # Per database: two deployments (or test runs) sharing a Redis keep their own state.
    key = f"vera:backpressure:{connection.settings_dict['NAME']}:{lane}"
    try:
        client = wiring.redis_client()
        if reason is not None and client.set(key, reason, nx=True):
            logger.warning("backpressure: %s", reason)
        elif reason is None and client.delete(key):
            logger.info("backpressure: outbox lane %s keeps up again", lane)
    except redis.RedisError as error:
        # Health reports Redis itself; the gauges and /healthz still carry the state.
        logger.debug("backpressure state of lane %s not shared: %r", lane, error)


def _export(load: LaneLoad, reason: str | None) -> dict[str, object]:
    metrics.OUTBOX_BACKLOG.labels(lane=load.lane).set(load.backlog)
    metrics.OUTBOX_OLDEST_AGE.labels(lane=load.lane).set(load.oldest_age_s)
    metrics.LANE_DEGRADED.labels(lane=load.lane).set(int(reason is not None))
    report: dict[str, object] = {
        "backlog": load.backlog,
        "oldest_age_s": round(load.oldest_age_s, 1),
        "degraded": reason is not None,
    }
    if reason is not None:
        report["reason"] = reason
    return report


def lanes_check() -> dict[str, dict[str, object]]:
    """Measure each outbox lane, set its gauges, announce a change; the report per lane."""
    # Counts across every tenant through a system finder (no row leaves it), so this
    # needs no tenant context listing every scope.
    loads = outbox_lane_load(now=timezone.now())
    limits = lane_thresholds()
    report = {}
    for lane, load in loads.items():
        reason = pressure(load, limits[lane])
        _announce(lane, reason)
        report[lane.value] = _export(load, reason)
    return report
