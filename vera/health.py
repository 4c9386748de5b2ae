"""Readiness checks of the components VERA cannot work without."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import connection

from curation.domain.errors import ObjectStoreError
from curation.selectors import outbox_dead_letters
from tenants import replicas

from . import backpressure, metrics, wiring

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ComponentHealth:
    """One component's answer: reachable or not, how fast, and why not."""

    ok: bool
    latency_ms: float
    error: str | None = None
    backend: str | None = None


def _timed(name: str, probe: Callable[[], str | None]) -> ComponentHealth:
    started = time.perf_counter()
    try:
        backend = probe()
    except Exception as error:
        elapsed = (time.perf_counter() - started) * 1000
        # The public answer names the failure class only; details go to the log.
        logger.warning("health check %s failed: %r", name, error)
        # An ObjectStoreError's reason is a safe label too (an S3 code such as NoSuchBucket).
        reason = error.reason if isinstance(error, ObjectStoreError) else type(error).__name__
        return ComponentHealth(ok=False, latency_ms=round(elapsed, 2), error=reason)
    elapsed = (time.perf_counter() - started) * 1000
    return ComponentHealth(ok=True, latency_ms=round(elapsed, 2), backend=backend)


def _postgres() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return None


def _redis() -> str | None:
    wiring.redis_client().ping()
    return None


def _graph() -> str | None:
    graph = wiring.graph()
    graph.ping()
    return graph.backend


def _object_store() -> str | None:
    store = wiring.object_store()
    store.ping()
    return store.backend


# What the web process cannot do its job without: a check of these failing is 503, so an
# orchestrator takes the node out. Every other check failing is "degraded" (200, named,
# with what it costs): the node still searches, reviews and takes feedback. Workers are
# probed through the broker (`celery inspect ping`), so Redis is essential to them there.
ESSENTIAL = frozenset({"postgres"})
COST = {
    "redis": "tasks cannot be queued, rate limits are not counted and caches are cold "
    "until it is back; search, review and feedback work",
    "graph": "the graph projection falls behind (the outbox keeps its jobs) until it is "
    "back; search, review and feedback work",
    "object_store": "ingest runs stop (each resumes from its cursor), proposals are refused, "
    "documents show without their text and erasure cleanups wait until it is back; search, "
    "review and feedback work",
}


def verdict(checks: dict[str, dict[str, object]]) -> tuple[list[str], list[str]]:
    """The failing essential checks, and a reason for every other failing one."""
    down = sorted(name for name, result in checks.items() if not result["ok"])
    failing = [name for name in down if name in ESSENTIAL]
    degraded = [
        f"{name} unavailable ({checks[name].get('error')}): {COST.get(name, 'degraded')}"
        for name in down
        if name not in ESSENTIAL
    ]
    return failing, degraded


def check_all() -> dict[str, dict[str, object]]:
    """Probe Postgres, Redis, the graph and the object store; each result says ok, latency
    and error."""
    checks = {"postgres": _postgres, "redis": _redis, "graph": _graph,
              "object_store": _object_store}  # fmt: skip
    report = {}
    for name, probe in checks.items():
        result = asdict(_timed(name, probe))
        report[name] = {key: value for key, value in result.items() if value is not None}
    return report


def check_replicas() -> tuple[list[dict[str, object]], list[str]]:
    """Each configured read replica (hot standby): up, its replay lag and position, and
    whether it serves reads; with a reason for each that does not (reads then go to the
    primary: the service works, on one database)."""
    bound = settings.VERA_DB__REPLICA_MAX_LAG_S
    report, reasons = [], []
    for found in replicas.states():
        serves = found.serves(bound)
        report.append({**found.as_dict(), "serves_reads": serves, "max_lag_s": bound})
        if not found.up:
            reasons.append(f"{found.alias} unavailable ({found.problem}): reads go to the primary")
        elif not serves:
            reasons.append(
                f"{found.alias} {found.lag_s:.1f} s behind the primary (bound {bound} s): "
                "reads go to the primary"
            )
    return report, reasons


def check_lanes() -> dict[str, dict[str, object]]:
    """Each outbox lane's backlog, wait and state ({} if unreadable: Postgres says why)."""
    try:
        return backpressure.lanes_check()
    except Exception as error:
        logger.warning("backpressure check failed: %r", error)
        return {}


def check_dead_letters() -> dict[str, int]:
    """Each outbox consumer's dead jobs, also set as gauges ({} if unreadable)."""
    try:
        counts = outbox_dead_letters()
    except Exception as error:
        logger.warning("dead letter count failed: %r", error)
        return {}
    for consumer, dead in counts.items():
        metrics.OUTBOX_DEAD_LETTERS.labels(consumer=consumer.value).set(dead)
    return {consumer.value: dead for consumer, dead in counts.items()}
