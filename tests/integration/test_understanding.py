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
from django.db.models import Count
from django.test import Client
from django.test.utils import CaptureQueriesContext

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity
from retrieval.domain import understanding as rules
from retrieval.domain.query import Query
from retrieval.domain.ranking import DEFAULT_WEIGHTS
from retrieval.services.search import sql, understanding
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


def _demo_group(reviewer: Client) -> str:
    return str(_search(reviewer, "what does billing-api run on")["weights"][0]["group_id"])


def _only_objects(group: str) -> dict[int, dict[str, int]]:
    """The oracle: every entity of the workspace no published claim has as its subject,
    with its published claims as an object counted per predicate by the ORM."""
    published = Claim.objects.filter(status=ClaimStatus.PUBLISHED)
    subjects = set(published.values_list("subject_id", flat=True))
    counts: dict[int, dict[str, int]] = {}
    rows = (
        published.filter(object_entity__isnull=False)
        .exclude(object_entity_id__in=subjects)
        .values_list("object_entity_id", "predicate")
        .annotate(n=Count("id"))
    )
    for entity_id, predicate, n in rows:
        counts.setdefault(entity_id, {})[predicate] = n
    return counts


@pytest.mark.parametrize("sample", [1000, 2])
def test_a_value_named_in_a_question_is_counted_per_predicate_up_to_the_sample(
    reviewer: Client, monkeypatch: pytest.MonkeyPatch, sample: int
) -> None:
    # "is billing-api in production": production's share of DEPLOYED_TO claims decides
    # the relation; counting is bounded (however many claims point at a region), exact
    # below the bound.
    monkeypatch.setattr(understanding, "VALUE_SAMPLE", sample)
    group = _demo_group(reviewer)
    with rls.tenant_context(principal_system("test", group_ids=[group])):
        expected = _only_objects(group)
        assert any(n > 2 for c in expected.values() for n in c.values()), "a busy value"
        subject = Entity.objects.get(canonical_name="billing-api")
        values = Entity.objects.filter(pk__in=expected)
        spans = {rules.Span(0, 1, "billing-api"): [subject]}
        spans |= {rules.Span(i + 1, i + 2, v.canonical_name): [v] for i, v in enumerate(values)}
        found = understanding._values(spans)
    counted = {entities[0].pk: found[span] for span, entities in spans.items() if span in found}
    assert counted == {
        entity: {predicate: min(n, sample) for predicate, n in per.items()}
        for entity, per in expected.items()
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("statement", ["facts", "values"])
def test_the_predicates_a_value_is_the_object_of_are_read_through_the_object_index(
    reviewer: Client, statement: str
) -> None:
    # A region is the object of a share of every claim: listing its few predicates must
    # probe the object index (a loose scan, a probe per predicate), as the application
    # role, not read every claim pointing at it.
    _analyze("curation_claim")
    group = _demo_group(reviewer)
    with rls.tenant_context(principal_system("test", group_ids=[group])):
        production = Entity.objects.get(canonical_name="production").pk
    text, params = {
        "facts": (understanding._FACTS_SQL, {"ids": [production], "ever": ["published"],
                                             "statuses": ["published"], "at": None}),
        "values": (understanding._VALUES_SQL, {"ids": [production], "statuses": ["published"],
                                               "sample": 1000}),
    }[statement]  # fmt: skip
    with (
        transaction.atomic(),
        rls.tenant_context(principal_system("test", group_ids=[group])),
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False,), "the test must run as a role RLS applies to"
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN {text}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(text, params)
        rows = cursor.fetchall()
    assert "Index Scan using claim_object_idx on curation_claim" in plan, plan
    # (EXPLAIN does not print the recursive term's probe, `predicate > i.predicate`: the
    # values test above checks what the scan returns.)
    assert any("DEPLOYED_TO" in row for row in rows), rows
