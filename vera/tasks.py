"""Project-level Celery tasks."""

from __future__ import annotations

from common.jobs import task

from .health import check_all, check_lanes


@task(name="vera.check_health")
def check_health() -> dict[str, dict[str, object]]:
    """Probe Postgres, Redis, the graph and the object store from a worker; beat runs it
    every minute.

    It also measures the outbox lanes, so their gauges and the log line announcing a
    degraded lane follow the lanes without anyone probing /healthz.
    """
    report = check_all()
    if report["postgres"]["ok"]:
        check_lanes()
    return report
