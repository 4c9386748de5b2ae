"""A plain question about the demo estate is answered by the current fact first, and the
response says what was understood (the entity, the relation, a stated time)."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import dj_database_url
import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from retrieval.domain.query import Query
from retrieval.domain.ranking import DEFAULT_WEIGHTS
from retrieval.services.search import sql
from retrieval.services.weights import weight_set_activate, weight_set_create
from tenants import rls
from tenants.selectors import principal_system

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(tmp_path: Path, client: Client) -> Client:
    """A client signed in as the seeded demo's reviewer."""
    call_command("seed_demo", sources_dir=tmp_path / "demo", stdout=StringIO(), stderr=StringIO())
    client.force_login(get_user_model().objects.get(username="reviewer"))
    return client


def _search(client: Client, q: str, **params: str) -> dict:
    response = client.get("/api/v1/search", {"q": q, **params})
    assert response.status_code == 200, response.content
    return dict(response.json())


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("what does billing-api run on", "billing-api runs on k8s-prod-1."),
        ("where does payments-api run", "payments-api runs on k8s-prod-2."),
        ("who owns billing-api", "billing-api is owned by"),
        # On-call is the owner's: "who" asks for someone, and a host is never someone.
        ("who do I page for billing-api", "billing-api is owned by"),
        ("who do I page for payments-api?", "payments-api is owned by"),
    ],
)
def test_the_asked_fact_comes_first_when_a_plain_question_names_the_entity(
    reviewer: Client, question: str, fact: str
) -> None:
    hits = _search(reviewer, question)["hits"]
    assert hits[0]["fact"].startswith(fact), [hit["fact"] for hit in hits[:5]]
    assert hits[0]["signals"]["understood"] == 1.0


def test_a_yes_no_question_naming_a_value_is_answered_by_the_fact_holding_it(
    reviewer: Client,
) -> None:
    # "production" is an entity too (the object of DEPLOYED_TO claims), not the subject
    result = _search(reviewer, "is billing-api in production?")
    assert result["understood"]["entities"] == ["billing-api"]
    assert result["understood"]["predicates"] == ["DEPLOYED_TO"]
    assert result["hits"][0]["fact"].startswith("billing-api is deployed to production")


def test_the_response_says_what_was_understood_of_a_question_asked_backwards(
    reviewer: Client,
) -> None:
    result = _search(reviewer, "what runs on k8s-prod-1?")
    understood = result["understood"]
    assert (understood["entities"], understood["predicates"]) == (["k8s-prod-1"], ["RUNS_ON"])
    assert understood["inverse"] is True
    assert understood["ambiguous"] == []
    assert result["hits"][0]["fact"].endswith("runs on k8s-prod-1.")


def test_the_response_says_what_was_understood_when_a_question_names_entity_and_relation(
    reviewer: Client,
) -> None:
    understood = _search(reviewer, "what does billing-api run on")["understood"]
    assert understood["entities"] == ["billing-api"]
    assert understood["predicates"] == ["RUNS_ON"]
    assert understood["as_of"] is None


def test_a_stated_time_becomes_as_of_when_the_caller_gave_none(reviewer: Client) -> None:
    result = _search(reviewer, "where did payments-api run as of March 2020")
    assert result["understood"]["as_of"] == "2020-03-31T23:59:59.999999Z"
    assert result["understood"]["time_text"] == "as of March 2020"


def test_a_stated_time_nothing_was_valid_at_falls_back_to_now_and_says_so(
    reviewer: Client,
) -> None:
    # The demo was recorded this week: nothing was valid in March 2020.
    result = _search(reviewer, "where did payments-api run as of March 2020")
    understood = result["understood"]
    assert understood["time_fallback"] == (
        "nothing about payments-api was valid as of 2020-03-31 ('as of March 2020'): "
        "searched without it"
    )
    assert result["hits"][0]["fact"] == "payments-api runs on k8s-prod-2."


def test_a_callers_as_of_stays_exact_when_nothing_was_valid_then(reviewer: Client) -> None:
    result = _search(reviewer, "where does payments-api run", as_of="2020-03-31T00:00:00Z")
    assert result["hits"] == []
    assert result["understood"]["time_fallback"] == ""


@pytest.mark.parametrize(
    "question",
    ["what is payments-api's host?", "payments-api\u2019s host", "where does 'payments-api' run?"],
)
def test_a_name_is_understood_when_written_possessive_or_quoted(
    reviewer: Client, question: str
) -> None:
    result = _search(reviewer, question)
    assert result["understood"]["entities"] == ["payments-api"], result["understood"]
    assert result["hits"][0]["fact"] == "payments-api runs on k8s-prod-2."


def test_the_understood_list_weighs_what_the_workspace_active_set_learnt(
    reviewer: Client,
) -> None:
    before = _search(reviewer, "what does billing-api run on")
    assert before["understood"]["weight"] == 2.0
    group = before["weights"][0]["group_id"]  # the demo workspace billing-api is in
    admin = principal_system("test", group_ids=[group])
    with rls.tenant_context(admin):
        chosen = weight_set_create(
            group_id=group, weights=DEFAULT_WEIGHTS, origin="manual", understood=0.5
        )
        weight_set_activate(actor=admin, weight_set_id=chosen.pk, confirm=True)
    assert _search(reviewer, "what does billing-api run on")["understood"]["weight"] == 0.5
    assert _search(reviewer, "where does the unknown-service run")["understood"]["weight"] is None


def test_a_year_about_facts_that_never_changed_is_a_search_term_and_says_so(
    reviewer: Client,
) -> None:
    # ledger-db's facts were recorded once and never ended: a year cannot pick a revision
    # of them, so it is what the question is about, not a time to search at.
    result = _search(reviewer, "what did ledger-db depend on in 2015")
    understood = result["understood"]
    assert understood["time_fallback"] == (
        "the facts of ledger-db never changed: 2015-12-31 ('in 2015') is a search term"
    )
    assert result["hits"], "the facts recorded since still answer"


def test_a_name_without_an_asked_relation_adds_no_understood_list(reviewer: Client) -> None:
    # Every fact about billing-api would otherwise outrank what the words are about.
    result = _search(reviewer, "billing-api")
    assert result["understood"]["entities"] == ["billing-api"]
    assert result["understood"]["predicates"] == []
    assert result["understood"]["weight"] is None
    assert all(hit["signals"]["understood"] == 0.0 for hit in result["hits"])


def test_nothing_is_understood_when_the_question_names_no_known_entity(reviewer: Client) -> None:
    understood = _search(reviewer, "where does the unknown-service run")["understood"]
    assert understood["entities"] == []
    assert understood["predicates"] == []


def test_the_portal_says_why_a_stated_time_did_not_narrow_the_search(reviewer: Client) -> None:
    page = reviewer.get("/search/", {"q": "where did payments-api run in 2019"})
    assert page.status_code == 200
    assert (
        "nothing about payments-api was valid as of 2019-12-31 (&#x27;in 2019&#x27;): "
        "searched without it" in (page.content.decode())
    )


def _analyze(table: str) -> None:
    """ANALYZE a table as its owner (the application role may not)."""
    owner = dj_database_url.parse(os.environ["DATABASE_OWNER_URL"])
    with psycopg.connect(
        host=owner["HOST"], port=owner["PORT"], user=owner["USER"], password=owner["PASSWORD"],
        dbname=connection.settings_dict["NAME"], autocommit=True,
    ) as conn:  # fmt: skip
        conn.execute(f"ANALYZE {table}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("entity_filter", [False, True])
def test_the_understood_list_finds_a_name_through_its_index_under_row_level_security(
    reviewer: Client, entity_filter: bool
) -> None:
    # Its cost must follow the facts about the name, not the workspace's size: the
    # condition on the subject must be one the planner may run before the tenancy
    # policy (its functions leakproof), through the subject index, as the application's
    # (non-owner) role. On `lower(subject_name)` it may not (`lower()` is not
    # leakproof): every document the policy lets through was read and filtered. The
    # seeded demo is committed and analyzed, so the planner knows a name is rarer than
    # a workspace's status.
    _analyze("retrieval_searchdocument")
    group = _search(reviewer, "what does billing-api run on")["weights"][0]["group_id"]
    query = Query(text="where does it run", entity="Billing-API" if entity_filter else None)
    where, params = sql.where_clause(query)
    with (
        rls.tenant_context(principal_system("test", group_ids=[group])),
        CaptureQueriesContext(connection) as ran,
    ):
        found = sql.understood(["BILLING-api"], ["RUNS_ON"], where, params, 10)
    assert found, "the name is found whatever its case"
    [statement] = [q["sql"] for q in ran.captured_queries if "subject_key" in q["sql"]]
    with (
        transaction.atomic(),
        rls.tenant_context(principal_system("test", group_ids=[group])),
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False,), "the test must run as a role RLS applies to"
        cursor.execute("SET LOCAL enable_seqscan = off")  # a demo-sized table is one page
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan on searchdoc_subject_key" in plan, plan
