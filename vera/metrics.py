"""Every Prometheus metric VERA exports, defined once; labels are bounded (lanes, never tenants).

The default registry of this process; a `/metrics` view and gunicorn's multiprocess
mode come with the metrics endpoint.
"""

from __future__ import annotations

from prometheus_client import Gauge

OUTBOX_BACKLOG = Gauge(
    "vera_outbox_backlog",
    "Visible pending outbox jobs of the lane: due, neither leased nor backing off.",
    ["lane"],
)
OUTBOX_OLDEST_AGE = Gauge(
    "vera_outbox_oldest_age_seconds",
    "How long the lane's longest-waiting visible pending job has been due, in seconds.",
    ["lane"],
)
LANE_DEGRADED = Gauge(
    "vera_lane_degraded",
    "1 while the lane's backlog or wait passes its threshold (VERA_BACKPRESSURE__*), else 0.",
    ["lane"],
)
