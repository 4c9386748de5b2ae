"""The system acts per group batch: a tick finds the groups with due work across every
tenant in one query (a system finder), then runs each batch in a tenant context of only
those groups. The scheduler and the snapshot sweep find their work the same way.

Row-level security stays the tenancy guarantee: a user's context still shows only its
own groups, and the policies that admit every row (for the system finders) are the
owner role's alone.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from curation import bootstrap
from curation.domain.outbox import Consumer, Priority
from curation.models import OutboxJob, OutboxPause, Source
from curation.selectors import outbox_due_groups, sources_due
from curation.services.outbox import BatchHandler, Handler
from curation.tasks import process_outbox
from retrieval.models import Feedback, GoldenQuery, GroupEmbedding, SearchDocument, SearchHit
from retrieval.selectors import groups_with_golden, groups_with_votes
from retrieval.services.index import groups_to_catch_up
from retrieval.services.snapshots import snapshot_take, snapshots_building
from tenants import rls
from tenants.domain.scopes import ScopeKind, new_group_id
from tenants.models import Scope
from tenants.selectors import principal_system
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db

GROUPS = 300
KIND = "scale.touch"
BULK_LIMIT = 200  # what process_outbox claims per batch


@dataclass
class RecordingProviders:
    """Outbox providers whose one handler records each job's group and the groups its
    tenant context admitted (a fake: the graph and the index are not under test here)."""

    runs: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def _touch(self, job: OutboxJob) -> None:
        self.runs.append((job.group_id, frozenset(rls.current_group_ids())))

    def outbox_handlers(self, consumer: Consumer) -> dict[str, Handler]:
        return {KIND: self._touch}

    def outbox_prepare(self, consumer: Consumer) -> Callable[[list[OutboxJob]], None] | None:
        return None

    def outbox_batch(self, consumer: Consumer) -> BatchHandler | None:
        return None

    def outbox_available(self, consumer: Consumer) -> str:
        return ""


@pytest.fixture
def recording() -> Iterator[RecordingProviders]:
    installed = bootstrap.providers()
    fake = RecordingProviders()
    bootstrap.install(fake)  # type: ignore[arg-type]  # only the outbox part is called
    yield fake
    bootstrap.install(installed)


def _workspaces(count: int) -> list[str]:
    """`count` workspaces under one organisation, created in two inserts."""
    org = Scope.objects.create(
        kind=ScopeKind.ORGANISATION, name="Many", group_id=new_group_id(ScopeKind.ORGANISATION)
    )
    scopes = Scope.objects.bulk_create(
        Scope(kind=ScopeKind.WORKSPACE, name=f"ws {n}", parent=org,
              group_id=new_group_id(ScopeKind.WORKSPACE))
        for n in range(count)
    )  # fmt: skip
    return sorted(scope.group_id for scope in scopes)


def _jobs(groups: list[str], *, priority: Priority = Priority.BULK, each: int = 1) -> None:
    with rls.tenant_context(principal_system("test", group_ids=groups)):
        OutboxJob.objects.bulk_create(
            OutboxJob(group_id=group_id, consumer=Consumer.INDEX, priority=priority, kind=KIND,
                      payload={}, available_at=timezone.now())
            for group_id in groups
            for _ in range(each)
        )  # fmt: skip


def _pending(groups: list[str]) -> int:
    with rls.tenant_context(principal_system("test", group_ids=groups)):
        return OutboxJob.objects.filter(status=OutboxJob.Status.PENDING).count()


def test_a_tick_runs_the_jobs_of_every_group_in_contexts_of_their_groups_only(
    recording: RecordingProviders,
) -> None:
    groups = _workspaces(GROUPS)
    _jobs(groups)

    totals = process_outbox(consumer=Consumer.INDEX.value)

    assert totals == {"done": GROUPS}
    assert sorted(group for group, _ in recording.runs) == groups
    assert all(group in admitted for group, admitted in recording.runs)
    contexts = {admitted for _, admitted in recording.runs}
    assert [len(c) for c in sorted(contexts, key=len)] == [GROUPS - BULK_LIMIT, BULK_LIMIT]
    assert _pending(groups) == 0


def test_an_idle_tick_finds_no_group_and_runs_nothing(recording: RecordingProviders) -> None:
    _workspaces(5)

    assert process_outbox(consumer=Consumer.INDEX.value) == {}
    assert recording.runs == []


def test_a_paused_group_does_not_hold_up_the_others(recording: RecordingProviders) -> None:
    paused, *others = _workspaces(3)
    # The paused group's jobs are the most urgent and fill a batch: were the pause not
    # applied when the groups are found, each batch would find only it, claim nothing
    # and stop.
    _jobs([paused], priority=Priority.INTERACTIVE, each=BULK_LIMIT)
    _jobs(others)
    with rls.tenant_context(principal_system("test", group_ids=[paused])):
        OutboxPause.objects.create(consumer=Consumer.INDEX, group_id=paused, reason="rebuild")

    process_outbox(consumer=Consumer.INDEX.value)

    assert sorted(group for group, _ in recording.runs) == sorted(others)
    assert _pending([paused]) == BULK_LIMIT


def test_the_groups_found_are_those_of_the_jobs_a_claim_takes_first() -> None:
    groups = _workspaces(4)
    _jobs(groups[:2])
    _jobs(groups[2:3], priority=Priority.INTERACTIVE)
    _jobs(groups[3:], priority=Priority.MAINTENANCE)

    def found(max_priority: Priority, limit: int) -> list[str]:
        return outbox_due_groups(
            consumer=Consumer.INDEX, max_priority=max_priority, now=timezone.now(), limit=limit
        )

    assert found(Priority.INTERACTIVE, 10) == [groups[2]]
    assert found(Priority.MAINTENANCE, 1) == [groups[2]]
    assert found(Priority.BULK, 10) == sorted(groups[:3])
    assert found(Priority.MAINTENANCE, 10) == groups


def test_a_user_still_sees_only_the_outbox_rows_of_its_own_groups(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    a, b = tenant_a.workspace.group_id, tenant_b.workspace.group_id
    _jobs([a, b])
    assert sorted(outbox_due_groups(
        consumer=Consumer.INDEX, max_priority=Priority.MAINTENANCE, now=timezone.now(), limit=10
    )) == sorted([a, b])  # fmt: skip

    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        visible = set(OutboxJob.objects.values_list("group_id", flat=True))
    assert visible == {a}
    with rls.tenant_context(principal_system("nobody", group_ids=[])):
        assert not OutboxJob.objects.exists()


def test_due_sources_of_every_group_are_found_when_their_schedule_came_round(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    now = timezone.now()
    sources = {}
    for tenant, name, last_run, enabled in (
        (tenant_a, "never-run", None, True),
        (tenant_b, "an-hour-ago", now - dt.timedelta(hours=1), True),
        (tenant_b, "a-minute-ago", now - dt.timedelta(minutes=1), True),
        (tenant_a, "disabled", None, False),
    ):
        source_id = markdown_source(tenant, tmp_path, tier=1, name=name)
        with rls.tenant_context(tenant.principal(tenant.admin)):
            Source.objects.filter(pk=source_id).update(
                schedule_seconds=600, last_run_at=last_run, enabled=enabled
            )
        sources[name] = (source_id, tenant.workspace.group_id)

    assert sources_due(now=now, resend_before=now) == sorted(
        [sources["never-run"], sources["an-hour-ago"]]
    )
    # An archived scope is read-only: its sources are not run.
    Scope.objects.filter(pk=tenant_b.workspace.pk).update(archived_at=now)
    assert sources_due(now=now, resend_before=now) == [sources["never-run"]]


def test_a_source_asked_for_is_not_due_again_until_its_run_ends_or_the_request_is_old(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    now = timezone.now()
    source_id = markdown_source(tenant_a, tmp_path, tier=1, name="asked")
    due = [(source_id, tenant_a.workspace.group_id)]

    def state(last_run: dt.datetime | None, asked: dt.datetime | None) -> None:
        with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
            Source.objects.filter(pk=source_id).update(
                schedule_seconds=600, last_run_at=last_run, run_requested_at=asked
            )

    hour, minute = dt.timedelta(hours=1), dt.timedelta(minutes=1)
    fresh = now - hour  # a request older than this is sent again
    state(None, now - minute)  # never run, asked for a minute ago: waiting
    assert sources_due(now=now, resend_before=fresh) == []
    state(None, now - 2 * hour)  # asked for two hours ago, never answered: sent again
    assert sources_due(now=now, resend_before=fresh) == due
    state(now - hour, now - hour - minute)  # asked, then run: due by its schedule
    assert sources_due(now=now, resend_before=fresh) == due
    state(now - 2 * hour, now - minute)  # its run ended long ago, a new one asked for
    assert sources_due(now=now, resend_before=fresh) == []
    assert sources_due(now=now, resend_before=now) == due  # a bound of 0: always resent


def test_snapshots_waiting_in_every_group_are_found(tenant_a: Tenant, tenant_b: Tenant) -> None:
    taken = []
    for tenant in (tenant_a, tenant_b):
        actor = tenant.principal(tenant.admin)
        with rls.tenant_context(actor):
            group_id = tenant.workspace.group_id
            taken.append((snapshot_take(actor=actor, group_id=group_id, name="t").pk, group_id))

    assert snapshots_building() == taken


def test_the_catch_up_finds_the_workspaces_with_stale_documents_or_a_companion(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    for tenant in (tenant_a, tenant_b):
        ingest_markdown(tenant, tmp_path / tenant.workspace.group_id,
                        {"pay.md": "# Pay\n\nThe payments-api runs on k8s-prod-7.\n"})  # fmt: skip
    # Many workspaces pinned to the model their (no) documents are on: no work.
    groups = _workspaces(GROUPS)
    with rls.tenant_context(principal_system("test", group_ids=groups)):
        GroupEmbedding.objects.bulk_create(
            GroupEmbedding(group_id=group_id, model="hashing-v1-256", dimension=256)
            for group_id in groups
        )
    assert groups_to_catch_up() == []

    a, b = tenant_a.workspace.group_id, tenant_b.workspace.group_id
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        SearchDocument.objects.update(embedding_model="an-older-model")  # a switch's leftovers
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        GroupEmbedding.objects.update(companion="e5")

    assert groups_to_catch_up() == sorted([(a, True), (b, False)])


def test_the_learning_loop_finds_the_workspaces_with_recent_votes_or_golden_queries(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    now = timezone.now()
    a, b = tenant_a.workspace.group_id, tenant_b.workspace.group_id
    for tenant, logged in ((tenant_a, now - dt.timedelta(days=1)),
                           (tenant_b, now - dt.timedelta(days=90))):  # fmt: skip
        group_id = tenant.workspace.group_id
        with rls.tenant_context(tenant.principal(tenant.admin)):
            hit = SearchHit.objects.create(
                group_id=group_id, query_id=uuid.uuid4(), query_text="q", claim_id=1, rank=1,
                score=1.0, signals={},
            )  # fmt: skip
            SearchHit.objects.filter(pk=hit.pk).update(created_at=logged)
            Feedback.objects.create(group_id=group_id, hit=hit, claim_id=1, helpful=True)
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        GoldenQuery.objects.create(group_id=b, key="q1", text="q", expected_texts=["x"])
        GoldenQuery.objects.create(
            group_id=b, key="q2", text="q", expected_texts=["x"], enabled=False
        )

    assert groups_with_votes(now - dt.timedelta(days=30)) == [a]  # b's votes are too old
    assert groups_with_votes(now - dt.timedelta(days=100)) == sorted([a, b])
    assert groups_with_golden() == [b]


def test_policies_that_admit_every_row_are_never_the_application_roles() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, policyname, roles::text[] FROM pg_policies "
            "WHERE schemaname = current_schema() AND cmd = 'SELECT' AND qual = 'true'"
        )
        unrestricted = cursor.fetchall()
        cursor.execute("SELECT current_user")
        (app_role,) = cursor.fetchone()
    assert {table for table, _, _ in unrestricted} >= {
        "curation_outboxjob", "retrieval_snapshot", "retrieval_searchdocument"
    }  # fmt: skip
    widened = [(t, p, r) for t, p, r in unrestricted if {"public", app_role} & set(r)]
    assert widened == []
