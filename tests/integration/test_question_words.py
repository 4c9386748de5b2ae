"""Question words learnt from votes: people of a workspace keep asking "who is X's boss",
and vote the REPORTS_TO fact helpful; the nightly job suggests "boss" for REPORTS_TO, an
admin accepts it (an audited ontology edit) or dismisses it, and no word reaches the
ontology by itself. Votes, searches and decisions go through the REST API."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.test import Client
from django_celery_beat.models import PeriodicTask

from curation.selectors import ontology_for
from retrieval.models import WordSuggestion
from retrieval.tasks import learn_question_words
from tenants import rls
from tenants.models import AuditEvent
from tests.support.ingest import drain_outbox, ingest_cmdb
from tests.support.tenancy import Tenant
from vera.celery import app

pytestmark = pytest.mark.django_db

EXPORT = (
    "id,name,manager,office\n"
    "E1,Noah Dubois,Ana Silva,Lyon\n"
    "E2,Mai Tran,Ana Silva,Hanoi\n"
    "E3,Ana Silva,Ben Okafor,Paris\n"
    "E4,Ben Okafor,,Paris\n"
)
MAPPING = {"manager": "REPORTS_TO", "office": "BASED_IN"}
ASKED = ("who is Noah Dubois's boss", "Mai Tran boss?", "who is the boss of Ana Silva")


@pytest.fixture
def people(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    ingest_cmdb(tenant_a, tmp_path / "people.csv", EXPORT, mapping=MAPPING)
    drain_outbox()
    return tenant_a


def _vote(client: Client, question: str, predicate: str, *, helpful: bool = True) -> None:
    """Search the question and vote on its first hit of `predicate`."""
    response = client.get("/api/v1/search", {"q": question, "k": 10})
    assert response.status_code == 200, response.content
    hit = next(h for h in response.json()["hits"] if h["predicate"] == predicate)
    voted = client.post(
        "/api/v1/feedback", {"hit_id": hit["id"], "helpful": helpful},
        content_type="application/json",
    )  # fmt: skip
    assert voted.status_code == 201, voted.content


def _suggestions(client: Client, **params: str) -> list[dict]:
    response = client.get("/api/v1/question-words", params)
    assert response.status_code == 200, response.content
    return list(response.json())


def _learnt(people: Tenant, client: Client) -> dict:
    """Three questions voted, the nightly job run: the one suggestion it made."""
    for question in ASKED:
        _vote(client, question, "REPORTS_TO")
    outcomes = learn_question_words()
    assert outcomes == {people.workspace.group_id: "1 suggestions pending"}
    client.force_login(people.admin)
    (found,) = _suggestions(client)
    return found


def test_a_word_people_keep_using_for_a_relation_is_suggested_and_not_added(
    people: Tenant, client: Client
) -> None:
    client.force_login(people.viewer)
    found = _learnt(people, client)
    assert (found["predicate"], found["word"], found["support"], found["status"]) == (
        "REPORTS_TO", "boss", 3, "pending",
    )  # fmt: skip
    with rls.tenant_context(people.principal(people.admin)):  # nothing was added by itself
        assert "REPORTS_TO" not in ontology_for(people.workspace.group_id).senses


def test_an_admin_accepts_a_suggestion_into_the_ontology_audited(
    people: Tenant, client: Client
) -> None:
    client.force_login(people.viewer)
    found = _learnt(people, client)
    accepted = client.post(f"/api/v1/question-words/{found['id']}/accept")
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["status"] == "accepted"
    assert accepted.json()["decided_by"] == people.admin.username
    with rls.tenant_context(people.principal(people.admin)):
        sense = ontology_for(people.workspace.group_id).senses["REPORTS_TO"]
        actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert "boss" in sense.words
    assert "manager" in sense.words  # the column it was mapped from stays a word of it
    assert "ontology.word.accepted" in actions
    again = client.post(f"/api/v1/question-words/{found['id']}/accept")
    assert again.status_code == 409, again.content
    # A decided word is not suggested again, and the list of pending ones is empty.
    learn_question_words()
    assert _suggestions(client) == []
    assert [s["status"] for s in _suggestions(client, status="all")] == ["accepted"]


def test_a_dismissed_suggestion_stays_dismissed_and_changes_nothing(
    people: Tenant, client: Client
) -> None:
    client.force_login(people.viewer)
    found = _learnt(people, client)
    dismissed = client.post(f"/api/v1/question-words/{found['id']}/dismiss")
    assert dismissed.status_code == 200, dismissed.content
    learn_question_words()
    with rls.tenant_context(people.principal(people.admin)):
        row = WordSuggestion.objects.get(pk=found["id"])
        assert "REPORTS_TO" not in ontology_for(people.workspace.group_id).senses
        assert AuditEvent.objects.filter(action="ontology.word.dismissed").exists()
    assert row.status == WordSuggestion.Status.DISMISSED


def test_only_an_admin_of_its_workspace_decides_and_another_tenant_sees_nothing(
    people: Tenant, tenant_b: Tenant, client: Client
) -> None:
    client.force_login(people.viewer)
    found = _learnt(people, client)
    client.force_login(people.reviewer)
    refused = client.post(f"/api/v1/question-words/{found['id']}/accept")
    assert refused.status_code == 403, refused.content
    client.force_login(tenant_b.admin)
    assert _suggestions(client) == []
    assert client.post(f"/api/v1/question-words/{found['id']}/dismiss").status_code == 404
    scoped = client.get("/api/v1/question-words", {"scope": people.workspace.group_id})
    assert scoped.status_code == 404
    assert client.get("/api/v1/question-words", {"status": "maybe"}).status_code == 400


def test_a_word_the_votes_go_against_is_not_suggested(people: Tenant, client: Client) -> None:
    client.force_login(people.viewer)
    for question in ASKED:
        _vote(client, question, "REPORTS_TO", helpful=False)
    learn_question_words()
    with rls.tenant_context(people.principal(people.admin)):
        assert not WordSuggestion.objects.exists()


def test_the_job_is_scheduled_nightly_on_the_maintenance_lane() -> None:
    migration = importlib.import_module("retrieval.migrations.0021_word_suggestions")
    name = migration.JOB[0]
    PeriodicTask.objects.filter(name=name).delete()  # a transactional test may have emptied it
    migration.schedule(apps, None)
    migration.schedule(apps, None)  # created once: an operator's changes are never overwritten
    row = PeriodicTask.objects.get(name=name)
    assert row.task == "retrieval.learn_question_words"
    assert row.task in app.tasks
    assert row.queue == "maintenance"
    assert settings.CELERY_TASK_ROUTES[row.task] == {"queue": "maintenance"}


def test_the_quality_page_shows_an_admin_the_word_to_accept_and_a_reviewer_no_button(
    people: Tenant, client: Client
) -> None:
    client.force_login(people.viewer)
    found = _learnt(people, client)  # signed in as the admin now
    group = people.workspace.group_id
    page = client.get("/quality/", {"group": group})
    assert page.status_code == 200
    row = f'id="question-word-{found["id"]}"'
    assert row in page.content.decode()
    assert "Accept</button>" in page.content.decode()
    client.force_login(people.reviewer)
    seen = client.get("/quality/", {"group": group}).content.decode()
    assert row in seen
    assert "Accept</button>" not in seen
    refused = client.post(f"/quality/words/{found['id']}/accept", {"group": group})
    assert refused.status_code == 403
    client.force_login(people.admin)
    done = client.post(f"/quality/words/{found['id']}/accept", {"group": group}, follow=True)
    assert done.status_code == 200
    assert "accepted for REPORTS_TO" in done.content.decode()
    assert row not in done.content.decode()
