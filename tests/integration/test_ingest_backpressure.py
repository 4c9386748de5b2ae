"""Ingestion yields to a degraded projection lane (VERA_BACKPRESSURE__INGEST=defer): the
scheduler defers due sources with the reason logged, and sends them once the lane drains."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from curation import tasks, usecases
from curation.domain.outbox import PROJECT_CLAIM, Priority
from curation.models import Episode, OutboxJob, Source
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


def test_manual_ingest_is_refused_with_the_reason_and_force_overrides_it(
    tenant_a: Tenant, due_source: int, tmp_path: Path, full_projection_lane: None
) -> None:
    (tmp_path / "pay.md").write_text("# Pay\n\nThe payments-api runs on k8s-prod-7.\n")
    with pytest.raises(CommandError) as refused:
        call_command("ingest", str(due_source), stdout=io.StringIO())
    assert "outbox lane projection: 4 visible pending jobs (threshold 3)" in str(refused.value)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Episode.objects.exists()  # refused before anything was read

    call_command("ingest", str(due_source), "--force", stdout=io.StringIO())
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Episode.objects.count() == 1


def test_slow_mode_pauses_each_page_while_the_lane_is_degraded_and_loses_nothing(
    tenant_a: Tenant, due_source: int, tmp_path: Path, full_projection_lane: None,
    settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    settings.VERA_BACKPRESSURE__INGEST = "slow"
    settings.VERA_BACKPRESSURE__INGEST_PAUSE_S = 7
    for n in range(3):
        (tmp_path / f"svc-{n}.md").write_text(f"# svc-{n}\n\nThe svc-{n} runs on k8s-{n}.\n")
    pauses: list[float] = []
    monkeypatch.setattr(usecases.time, "sleep", pauses.append)  # the pacing, not the clock

    with caplog.at_level(logging.INFO, logger="curation.usecases"):
        report = usecases.ingest_now(source_id=due_source, group_id=tenant_a.workspace.group_id)

    assert (report.new, report.failed, report.error) == (3, 0, "")
    # time.sleep is the process's: other code's sub-second waits (subprocess polling
    # doubles 0.5 ms up to 50 ms) land here too; the pacing is every whole-second one.
    paced = [pause for pause in pauses if pause >= 1]
    assert paced
    assert set(paced) == {7}
    assert f"ingestion of source {due_source} pauses 7 s: outbox lane projection" in caplog.text
    # Below its threshold (the run's own jobs included), pages follow without a pause.
    settings.VERA_BACKPRESSURE__LANE_BACKLOG = {"projection": 1000}
    (tmp_path / "svc-9.md").write_text("# svc-9\n\nThe svc-9 runs on k8s-9.\n")
    pauses.clear()
    assert usecases.ingest_now(source_id=due_source, group_id=tenant_a.workspace.group_id).new == 1
    assert [pause for pause in pauses if pause >= 1] == []
