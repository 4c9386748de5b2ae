"""Running a source now, from the REST API and the Django admin, and once at a time.

An admin of the source's scope asks for a run (`POST /api/v1/sources/{id}/run`, or the
admin's "Run now"); it is sent to a worker once the request's transaction commits, and
a second request while it waits sends nothing. A run of a source holds the source's run
lock (a PostgreSQL advisory lock) for its whole length: while another session holds it,
a request is refused (409) and a run that reaches a worker anyway does nothing. A run
sent for a request that a later run has answered, or for a source disabled since, does
nothing either. The scheduler marks what it sends, so a run that outlasts its schedule
is not sent again every minute.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.cache import cache
from django.db.models import F
from django.test import Client
from django.utils import timezone

from curation import tasks
from curation.domain.sources import AGENT_KIND
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, Source
from curation.services.ingest import IngestReport
from curation.services.sources import run_lock_key
from curation.usecases import (
    ingest_now,
    source_retract,
    source_run_held,
    source_update,
)
from retrieval.usecases import erase
from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import AuditEvent
from tests.support.ingest import write_files
from tests.support.tenancy import Tenant, markdown_source
from vera.celery import app

pytestmark = pytest.mark.django_db

DOCS = {
    "billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n",
    "team.md": "# Team\n\nThe billing-api is owned by payments-team.\n",
}
TWO_MINUTES = dt.timedelta(minutes=2)
FACT = {"subject": "ledger-api", "predicate": "RUNS_ON", "object": "k8s-prod-7",
        "evidence": "The deploy manifest pins ledger-api to k8s-prod-7."}  # fmt: skip


@pytest.fixture(autouse=True)
def _fresh_counters() -> None:
    cache.clear()  # rate-limit and failed-authentication counters of earlier tests


@pytest.fixture
def source_id(tenant_a: Tenant, tmp_path: Path) -> int:
    """A Markdown source of two documents, never run and on no schedule."""
    write_files(tmp_path, DOCS)
    return markdown_source(tenant_a, tmp_path, tier=1, name="handbook «ñ»")


def _key(tenant: Tenant, role: Role) -> dict[str, str]:
    owner = {Role.ADMIN: tenant.admin, Role.VIEWER: tenant.viewer}.get(role, tenant.reviewer)
    return {"HTTP_AUTHORIZATION": f"Bearer {tenant.issue_key(owner=owner, role=role).plaintext}"}


def _run(client: Client, key: dict[str, str], source: int, body: Any = None) -> Any:
    return client.post(
        f"/api/v1/sources/{source}/run", body, content_type="application/json", **key
    )


def _source(tenant: Tenant, source_id: int) -> Source:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.get(pk=source_id)


def _episodes(tenant: Tenant) -> int:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Episode.objects.count()


def _as_a_worker(callbacks: list[Callable[[], object]]) -> None:
    """Run what the request left for after its commit, with Celery running the task in
    this process (eager) instead of sending it to the broker: the task's body as a worker
    runs it."""
    before = {name: app.conf[name] for name in ("task_always_eager", "task_eager_propagates")}
    app.conf.update(task_always_eager=True, task_eager_propagates=True)
    try:
        for callback in callbacks:
            callback()
    finally:
        app.conf.update(before)


@contextmanager
def run_going(database_url: str, source_id: int) -> Iterator[None]:
    """Another session holds the source's run lock, as a worker running it does."""
    key = [run_lock_key(source_id)]
    with psycopg.connect(database_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", key)
        try:
            yield
        finally:  # released now, not when the server has noticed the session closed
            other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", key)


# --- the REST API --------------------------------------------------------------------------


def test_an_admin_runs_a_source_now_sent_after_commit_once_however_often_asked(
    tenant_a: Tenant, source_id: int, client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    admin = _key(tenant_a, Role.ADMIN)
    with django_capture_on_commit_callbacks() as callbacks:
        first = _run(client, admin, source_id)
        again = _run(client, admin, source_id)  # a double click, a client's retry

    assert (first.status_code, again.status_code) == (202, 200), first.content
    body = first.json()
    assert (body["sent"], body["source"]["id"], body["source"]["name"]) == (
        True, source_id, "handbook «ñ»",
    )  # fmt: skip
    assert body["source"]["run_requested_at"] == body["requested_at"]
    assert (again.json()["sent"], again.json()["requested_at"]) == (False, body["requested_at"])
    assert "nothing sent again" in again.json()["message"]
    assert len(callbacks) == 1  # sent once, and only once the request committed
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="source.run")
    assert (event.target_id, event.actor_label.startswith("api-key:")) == (str(source_id), True)

    _as_a_worker(callbacks)

    ran = _source(tenant_a, source_id)
    assert (ran.last_run_status, ran.progress["state"], ran.progress["new"]) == (
        "ok",
        "finished",
        2,
    )
    assert _episodes(tenant_a) == 2
    listed = client.get("/api/v1/sources", **admin).json()["results"]
    assert [(s["id"], s["last_run_status"], s["progress"]["records"]) for s in listed] == [
        (source_id, "ok", 2)
    ]
    # The run answered the request: the next one is sent again.
    with django_capture_on_commit_callbacks() as later:
        assert _run(client, admin, source_id).status_code == 202
    assert len(later) == 1


def test_a_request_while_a_run_is_going_is_a_409_with_why_and_sends_nothing(
    tenant_a: Tenant,
    source_id: int,
    client: Client,
    app_database_url: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with run_going(app_database_url, source_id), django_capture_on_commit_callbacks() as sent:
        response = _run(client, _key(tenant_a, Role.ADMIN), source_id)

    assert response.status_code == 409, response.content
    assert "a run of this source is going" in response.json()["detail"]
    assert sent == []
    assert _source(tenant_a, source_id).run_requested_at is None


@pytest.mark.parametrize("role", [Role.VIEWER, Role.CONTRIBUTOR, Role.REVIEWER])
def test_only_the_scopes_admins_may_run_a_source(
    tenant_a: Tenant, source_id: int, client: Client, role: Role
) -> None:
    response = _run(client, _key(tenant_a, role), source_id)

    assert response.status_code == 403
    assert "needs the admin role" in response.json()["detail"]
    assert _source(tenant_a, source_id).run_requested_at is None


def test_another_tenants_source_is_not_found(
    tenant_a: Tenant, tenant_b: Tenant, source_id: int, client: Client
) -> None:
    other = _key(tenant_b, Role.ADMIN)

    assert _run(client, other, source_id).status_code == 404
    assert _run(client, other, 99999999999999999999).status_code == 404
    assert _source(tenant_a, source_id).run_requested_at is None


def test_a_disabled_source_the_agents_source_and_a_body_are_refused_with_why(
    tenant_a: Tenant, source_id: int, client: Client
) -> None:
    admin = _key(tenant_a, Role.ADMIN)
    assert "takes no body" in str(_run(client, admin, source_id, {"force": True}).json())
    proposed = client.post(
        "/api/v1/proposals", FACT, content_type="application/json",
        **_key(tenant_a, Role.CONTRIBUTOR),
    )  # fmt: skip
    assert proposed.status_code == 201, proposed.content
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        agents = Source.objects.get(kind=AGENT_KIND)
        Source.objects.filter(pk=source_id).update(enabled=False)

    disabled, of_agents = _run(client, admin, source_id), _run(client, admin, agents.pk)

    assert (disabled.status_code, of_agents.status_code) == (400, 400)
    assert "disabled: enable it" in disabled.json()["detail"]
    assert "the agents' source has no connector" in of_agents.json()["detail"]
    assert _source(tenant_a, source_id).run_requested_at is None


# --- the Django admin ----------------------------------------------------------------------


def test_the_admin_action_runs_the_sources_and_names_the_refused_ones(
    tenant_a: Tenant,
    source_id: int,
    tmp_path: Path,
    client: Client,
    django_capture_on_commit_callbacks: Any,
) -> None:
    disabled = markdown_source(tenant_a, tmp_path, tier=1, name="old wiki")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=disabled).update(enabled=False)
    tenant_a.admin.is_staff = tenant_a.admin.is_superuser = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)

    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(
            "/admin/curation/source/",
            {"action": "run_selected", "_selected_action": [source_id, disabled]},
            follow=True,
        )

    html = response.content.decode()
    assert "Handbook «ñ»: run sent to a worker" in html  # the admin capitalises messages
    assert "Old wiki: the source is disabled: enable it" in html
    assert len(callbacks) == 1
    _as_a_worker(callbacks)
    page = client.get(f"/admin/curation/source/{source_id}/change/").content.decode()
    assert "finished: 2 records" in page


# --- one run at a time ---------------------------------------------------------------------


def test_a_run_while_another_session_runs_the_source_does_nothing(
    tenant_a: Tenant, source_id: int, app_database_url: str
) -> None:
    group = tenant_a.workspace.group_id
    with run_going(app_database_url, source_id):
        skipped = ingest_now(source_id=source_id, group_id=group)

    assert (skipped.status, skipped.skipped) == ("skipped", "a run of this source is going")
    untouched = _source(tenant_a, source_id)
    assert (untouched.last_run_at, untouched.progress, _episodes(tenant_a)) == (None, {}, 0)
    assert ingest_now(source_id=source_id, group_id=group).status == "ok"  # the lock is free
    assert _episodes(tenant_a) == 2


def test_a_run_sent_for_an_answered_request_or_a_disabled_source_does_nothing(
    tenant_a: Tenant, source_id: int
) -> None:
    group = tenant_a.workspace.group_id
    asked = timezone.now()
    assert ingest_now(source_id=source_id, group_id=group, requested_at=asked).status == "ok"
    ended = _source(tenant_a, source_id).last_run_at

    copy = ingest_now(source_id=source_id, group_id=group, requested_at=asked)  # redelivered

    assert copy.status == "skipped"
    assert copy.skipped.startswith("a run that ended at")
    assert _source(tenant_a, source_id).last_run_at == ended
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(enabled=False)
    later = ingest_now(source_id=source_id, group_id=group, requested_at=timezone.now())
    assert later.skipped == "the source was disabled after this run was asked for"
    # The operator's `ingest` command asks nothing: it runs a disabled source.
    assert ingest_now(source_id=source_id, group_id=group).status == "ok"


def test_the_scheduler_sends_a_due_source_once_until_its_run_ends(
    tenant_a: Tenant, source_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks.ingest_source, "delay", lambda **kwargs: sent.append(kwargs))
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(schedule_seconds=60)

    assert tasks.schedule_sources() == 1
    assert tasks.schedule_sources() == 0  # waiting for a worker: not sent again
    [message] = sent
    asked = dt.datetime.fromisoformat(message["requested_at"])
    assert _source(tenant_a, source_id).run_requested_at == asked

    tasks.ingest_source(**message)  # the worker runs it
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        # Two minutes on: its period has passed since the run.
        Source.objects.filter(pk=source_id).update(
            last_run_at=F("last_run_at") - TWO_MINUTES,
            run_requested_at=F("run_requested_at") - TWO_MINUTES,
        )
    assert tasks.schedule_sources() == 1
    assert [m["source_id"] for m in sent] == [source_id, source_id]


def test_the_scheduler_sends_again_a_request_nobody_answered(
    tenant_a: Tenant, source_id: int, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks.ingest_source, "delay", lambda **kwargs: sent.append(kwargs))
    lost = timezone.now() - dt.timedelta(seconds=settings.VERA_SOURCES__RUN_RESEND_AFTER_S + 60)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(schedule_seconds=60, run_requested_at=lost)

    assert tasks.schedule_sources() == 1  # its message was lost, or its worker died
    assert _source(tenant_a, source_id).run_requested_at > lost


def test_the_admin_page_says_a_run_whose_worker_died_was_interrupted(
    tenant_a: Tenant, source_id: int, client: Client, app_database_url: str
) -> None:
    tenant_a.admin.is_staff = tenant_a.admin.is_superuser = True
    tenant_a.admin.save()
    client.force_login(tenant_a.admin)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(
            progress={"state": "running", "records": 7, "new": 7, "pages": 1}
        )
    page = f"/admin/curation/source/{source_id}/change/"

    with run_going(app_database_url, source_id):
        assert source_run_held(source_id)
        going = client.get(page).content.decode()
    assert not source_run_held(source_id)
    died = client.get(page).content.decode()

    assert ("running: 7 records" in going, "interrupted" in going) == (True, False)
    assert "interrupted: 7 records" in died
    assert "no worker is running it now; the next run goes on from its cursor" in died


def test_the_run_lock_is_read_back_whatever_the_sign_of_its_hash(app_database_url: str) -> None:
    with psycopg.connect(app_database_url, autocommit=True) as probe:
        signs = {
            source_id: probe.execute(
                "SELECT hashtextextended(%s, 0) < 0", [run_lock_key(source_id)]
            ).fetchone()
            for source_id in range(1, 41)
        }
    assert set(signs.values()) == {(True,), (False,)}  # both signs are tried
    for source_id in signs:
        with run_going(app_database_url, source_id):
            assert source_run_held(source_id), source_id
            assert not source_run_held(source_id + 1000)
        assert not source_run_held(source_id)


# --- a source disabled or retracted while it runs -----------------------------------------

PAGES = {f"svc-{n}.md": f"# Svc {n}\n\nThe svc-{n}-api runs on k8s-prod-{n}.\n" for n in range(4)}


@pytest.fixture
def paged_source(tenant_a: Tenant, tmp_path: Path) -> int:
    """A Markdown source of four documents read one per page, never run."""
    write_files(tmp_path / "paged", PAGES)
    admin = tenant_a.principal(tenant_a.admin)
    source_id = markdown_source(tenant_a, tmp_path / "paged", tier=1, name="paged")
    with rls.tenant_context(admin):
        source_update(
            actor=admin, source_id=source_id,
            config={"root": str(tmp_path / "paged"), "page_size": 1},
        )  # fmt: skip
    return source_id


def _claims(tenant: Tenant, source_id: int) -> dict[str, int]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        rows = Claim.objects.filter(source_id=source_id).values_list("status", flat=True)
        return dict(Counter(rows))


def test_a_source_retracted_while_it_runs_publishes_nothing_more(
    tenant_a: Tenant, paged_source: int
) -> None:
    admin = tenant_a.principal(tenant_a.admin)

    def retract_after_the_first_page(report: IngestReport) -> None:
        if report.pages == 1:
            with rls.tenant_context(admin):
                source_retract(actor=admin, source_id=paged_source, reason="wrong export «ñ»")

    report = ingest_now(
        source_id=paged_source, group_id=tenant_a.workspace.group_id,
        on_progress=retract_after_the_first_page,
    )  # fmt: skip

    assert (report.status, report.pages, report.new) == ("stopped", 1, 1)
    assert "disabled or retracted during the run" in report.stopped
    assert set(_claims(tenant_a, paged_source)) == {ClaimStatus.RETRACTED}  # none published
    with rls.tenant_context(admin):
        assert list(Episode.objects.values_list("status", flat=True)) == ["retracted"]
    stopped = _source(tenant_a, paged_source)
    assert (stopped.last_run_status, stopped.progress["state"], stopped.enabled) == (
        "stopped", "stopped", False,
    )  # fmt: skip
    assert "stopped after 1 page(s)" in stopped.last_error


def test_a_source_disabled_while_it_runs_stops_and_its_next_run_reads_the_rest(
    tenant_a: Tenant, paged_source: int
) -> None:
    admin = tenant_a.principal(tenant_a.admin)
    group = tenant_a.workspace.group_id

    def disable_after_two_pages(report: IngestReport) -> None:
        if report.pages == 2:
            with rls.tenant_context(admin):
                source_update(actor=admin, source_id=paged_source, enabled=False)

    first = ingest_now(source_id=paged_source, group_id=group, on_progress=disable_after_two_pages)
    assert (first.status, first.new) == ("stopped", 2)
    with rls.tenant_context(admin):
        source_update(actor=admin, source_id=paged_source, enabled=True)
    rest = ingest_now(source_id=paged_source, group_id=group)

    assert (rest.status, rest.new) == ("ok", 2)  # the pages read before are unchanged
    assert _claims(tenant_a, paged_source) == {ClaimStatus.PUBLISHED: 8}  # 2 per document


def test_a_source_erased_while_it_runs_stops_it_and_leaves_nothing(
    tenant_a: Tenant, paged_source: int
) -> None:
    admin = tenant_a.principal(tenant_a.admin)

    def erase_after_the_first_page(report: IngestReport) -> None:
        if report.pages == 1:
            with rls.tenant_context(admin):
                erase(
                    actor=admin, kind="source", target_id=paged_source,
                    reason="personal data «ñ»", confirm=True,
                )  # fmt: skip

    report = ingest_now(
        source_id=paged_source, group_id=tenant_a.workspace.group_id,
        on_progress=erase_after_the_first_page,
    )  # fmt: skip

    assert (report.status, report.pages) == ("stopped", 1)
    assert report.stopped == "the source was erased during the run: stopped after 1 page(s)"
    with rls.tenant_context(admin):
        assert not Source.objects.filter(pk=paged_source).exists()
        assert not Episode.objects.exists()
    assert _claims(tenant_a, paged_source) == {}


def test_a_run_whose_worker_died_shows_interrupted_and_can_be_asked_for_again(
    tenant_a: Tenant,
    source_id: int,
    client: Client,
    app_database_url: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    admin = _key(tenant_a, Role.ADMIN)
    # Asked for a minute ago; its worker took it, wrote a page and died: the row says
    # running, and nobody holds its run lock. (Set here rather than asked for over
    # HTTP: a request's probe holds the lock until this test's transaction ends.)
    asked = timezone.now() - dt.timedelta(minutes=1)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Source.objects.filter(pk=source_id).update(
            run_requested_at=asked,
            progress={"state": "running", "started_at": (asked + TWO_MINUTES / 4).isoformat(),
                      "records": 1},
        )  # fmt: skip

    with run_going(app_database_url, source_id):
        [going] = client.get("/api/v1/sources", **admin).json()["results"]
    [died] = client.get("/api/v1/sources", **admin).json()["results"]
    with django_capture_on_commit_callbacks() as again:
        resent = _run(client, admin, source_id)

    assert (going["progress"]["state"], died["progress"]["state"]) == ("running", "interrupted")
    assert (resent.status_code, resent.json()["sent"], len(again)) == (202, True, 1)
