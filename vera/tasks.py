"""Project-level Celery tasks."""

from __future__ import annotations

from tenants.tasks import task

from .health import check_all


@task(name="vera.check_health")
def check_health() -> dict[str, dict[str, object]]:
    """Probe Postgres, Redis and the graph from a worker; beat runs it every minute."""
    return check_all()
