"""Backpressure: an outbox lane past its threshold makes /healthz "degraded", sets its gauges
and logs one warning; drained, it is ok again. Real outbox rows, real Postgres and Redis."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY

from curation.domain.outbox import PROJECT_CLAIM, Priority
from curation.models import OutboxJob
from curation.services.outbox import outbox_enqueue_many
from tenants import rls
from tests.support.tenancy import Tenant
from vera import wiring
from vera.tasks import check_health

pytestmark = pytest.mark.django_db
BACKLOG_REASON = "outbox lane projection: 4 visible pending jobs (threshold 3)"


@pytest.fixture(autouse=True)
def fresh_announcements() -> None:
    """Forget which lanes were announced degraded: the state lives in Redis, not the test's
    transaction."""
    prefix = f"vera:backpressure:{connection.settings_dict['NAME']}:"
    client = wiring.redis_client()
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)


@pytest.fixture
def small_thresholds(settings) -> None:
    settings.VERA_BACKPRESSURE__LANE_BACKLOG = {"projection": 3}
    settings.VERA_BACKPRESSURE__LANE_AGE_S = {"interactive": 60}


def _enqueue(tenant: Tenant, count: int, priority: Priority = Priority.BULK) -> None:
    """`count` pending jobs: the outbox writes one per consumer (graph, index) per claim."""
    assert count % 2 == 0
    with rls.tenant_context(tenant.principal(tenant.admin)):
        outbox_enqueue_many(
            group_id=tenant.workspace.group_id, kind=PROJECT_CLAIM,
            payloads=[{"claim_id": n} for n in range(count // 2)], priority=priority,
        )  # fmt: skip


def _gauge(name: str, lane: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"lane": lane})


def test_healthz_is_degraded_naming_the_lane_past_its_backlog(
    client: Client, tenant_a: Tenant, small_thresholds: None
) -> None:
    _enqueue(tenant_a, 4)

    response = client.get("/healthz")

    body = response.json()
    assert (response.status_code, body["status"], body["failing"]) == (200, "degraded", [])
    assert body["degraded"] == [BACKLOG_REASON]
    assert body["lanes"]["projection"]["backlog"] == 4
    assert body["lanes"]["interactive"] == {"backlog": 0, "oldest_age_s": 0.0, "degraded": False}


def test_the_gauges_follow_the_lane(
    client: Client, tenant_a: Tenant, small_thresholds: None
) -> None:
    _enqueue(tenant_a, 4)
    client.get("/healthz")
    assert _gauge("vera_outbox_backlog", "projection") == 4
    assert _gauge("vera_lane_degraded", "projection") == 1
    assert _gauge("vera_lane_degraded", "interactive") == 0

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        OutboxJob.objects.update(status=OutboxJob.Status.DONE, done_at=timezone.now())
    body = client.get("/healthz").json()

    assert (body["status"], body["degraded"]) == ("ok", [])
    assert _gauge("vera_outbox_backlog", "projection") == 0
    assert _gauge("vera_lane_degraded", "projection") == 0


def test_a_lane_is_degraded_when_its_longest_wait_passes_the_threshold(
    client: Client, tenant_a: Tenant, small_thresholds: None
) -> None:
    _enqueue(tenant_a, 2, priority=Priority.INTERACTIVE)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        OutboxJob.objects.update(available_at=timezone.now() - dt.timedelta(minutes=5))

    body = client.get("/healthz").json()

    assert body["status"] == "degraded"
    [reason] = body["degraded"]
    assert reason.startswith("outbox lane interactive: the oldest has waited 30")
    assert reason.endswith("s (threshold 60 s)")
    assert 300 <= _gauge("vera_outbox_oldest_age_seconds", "interactive") < 360


def test_leased_and_backing_off_jobs_are_not_backlog(
    client: Client, tenant_a: Tenant, small_thresholds: None
) -> None:
    _enqueue(tenant_a, 6)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        OutboxJob.objects.update(available_at=timezone.now() + dt.timedelta(minutes=10))

    body = client.get("/healthz").json()

    assert (body["status"], body["lanes"]["projection"]["backlog"]) == ("ok", 0)


def test_the_change_is_logged_once_and_the_recovery_once(
    client: Client, tenant_a: Tenant, small_thresholds: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vera.backpressure")
    _enqueue(tenant_a, 4)
    for _ in range(3):
        client.get("/healthz")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        OutboxJob.objects.all().delete()
    for _ in range(2):
        client.get("/healthz")

    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "vera.backpressure"]
    assert lines == [
        ("WARNING", f"backpressure: {BACKLOG_REASON}"),
        ("INFO", "backpressure: outbox lane projection keeps up again"),
    ]


def test_the_beat_health_task_measures_the_lanes_without_a_probe(
    tenant_a: Tenant, small_thresholds: None
) -> None:
    _enqueue(tenant_a, 8)
    report = check_health()
    assert set(report) == {"postgres", "redis", "graph", "object_store"}  # its shape
    assert _gauge("vera_outbox_backlog", "projection") == 8
    assert _gauge("vera_lane_degraded", "projection") == 1


def test_metrics_are_off_without_a_token_and_refused_with_a_wrong_one(
    client: Client, settings
) -> None:
    assert client.get("/metrics").status_code == 404
    settings.VERA_METRICS__TOKEN = "scrape-me"
    refused = client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope")
    assert refused.status_code == 401


def test_metrics_show_the_lanes_and_no_tenant(
    client: Client, tenant_a: Tenant, small_thresholds: None, settings
) -> None:
    settings.VERA_METRICS__TOKEN = "scrape-me"
    _enqueue(tenant_a, 4)

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me")

    text = response.content.decode()
    assert response.status_code == 200
    assert 'vera_outbox_backlog{lane="projection"} 4.0' in text
    assert 'vera_lane_degraded{lane="projection"} 1.0' in text
    assert tenant_a.workspace.group_id not in text
