"""Ingestion yields to a degraded projection lane (VERA_BACKPRESSURE__INGEST=defer): the
scheduler defers due sources with the reason logged, and sends them once the lane drains."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from curation import tasks
from curation.domain.outbox import PROJECT_CLAIM, Priority
from curation.models import OutboxJob, Source
from curation.services.outbox import outbox_enqueue_many
from tenants import rls
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db


@pytest.fixture
def due_source(tenant_a: Tenant, tmp_path: Path) -> int:
    source_id = markdown_source(tenant_a, tmp_path, tier=2)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(schedule_seconds=60)
    return source_id


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What the scheduler hands the ingest queue, recorded instead of sent to a broker."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks.ingest_source, "delay", lambda **kwargs: calls.append(kwargs))
    return calls


@pytest.fixture
def full_projection_lane(tenant_a: Tenant, settings: Any) -> None:
    settings.VERA_BACKPRESSURE__INGEST = "defer"
    settings.VERA_BACKPRESSURE__LANE_BACKLOG = {"projection": 3}
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        outbox_enqueue_many(
            group_id=tenant_a.workspace.group_id, kind=PROJECT_CLAIM,
            payloads=[{"claim_id": n} for n in range(2)], priority=Priority.BULK,
        )  # fmt: skip


def test_scheduler_defers_due_source_when_projection_lane_is_degraded(
    due_source: int, sent: list[dict[str, Any]], full_projection_lane: None,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="curation.tasks"):
        assert tasks.schedule_sources() == 0
    assert (
        sent,
        "outbox lane projection: 4 visible pending jobs (threshold 3)" in caplog.text,
    ) == (
        [],
        True,
    )


def test_scheduler_sends_deferred_source_when_lane_has_drained(
    tenant_a: Tenant, due_source: int, sent: list[dict[str, Any]], full_projection_lane: None
) -> None:
    tasks.schedule_sources()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        OutboxJob.objects.all().delete()
    assert (tasks.schedule_sources(), [call["source_id"] for call in sent]) == (1, [due_source])


def test_scheduler_ignores_the_lane_when_ingest_backpressure_is_off(
    due_source: int, sent: list[dict[str, Any]], full_projection_lane: None, settings: Any
) -> None:
    settings.VERA_BACKPRESSURE__INGEST = "off"
    assert tasks.schedule_sources() == 1
