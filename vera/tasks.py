"""Project-level Celery tasks."""

from __future__ import annotations

from celery import shared_task

from .health import check_all


@shared_task(name="vera.check_health")
def check_health() -> dict[str, dict[str, object]]:
    """Probe Postgres, Redis and the graph from a worker; beat runs it every minute."""
    return check_all()
