"""Questions about a people directory, out of the box: no ontology entry for its predicates.

An HR export through the real CMDB connector, its columns mapped onto the workspace's
own predicates (manager -> REPORTS_TO, team -> MEMBER_OF, office -> BASED_IN, title ->
HAS_TITLE). The built-in ops senses know none of them ("team" reads as OWNED_BY there),
and these people have no facts of those: understanding is grounded in the facts the
mentioned person has, so the built-in senses cannot steal the question, and a predicate
nobody described gets a sense from its name and the column it was mapped from.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from curation.models import Claim
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.domain.query import Query
from tenants import rls
from tests.support.ingest import drain_outbox, ingest_cmdb
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

EXPORT = (
    "id,name,manager,team,office,title,start_date\n"
    "E1,Noah Dubois,Ana Silva,Payments,Lyon,Product Manager,2019-03-04\n"
    "E2,Mai Tran,Ana Silva,Ledger,Hanoi,Staff Engineer,2021-11-15\n"
    "E3,Ana Silva,Ben Okafor,Leadership,Paris,Engineering Director,2015-06-01\n"
    "E4,Li Chen,Mai Tran,Ledger,Hanoi,Software Engineer,2023-01-09\n"
    "E5,Chen Wei,Mai Tran,Ledger,Berlin,Data Scientist,2024-05-20\n"
)
MAPPING = {"manager": "REPORTS_TO", "team": "MEMBER_OF", "office": "BASED_IN",
           "title": "HAS_TITLE", "start_date": "HAS_START_DATE"}  # fmt: skip


@pytest.fixture
def people(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    ingest_cmdb(tenant_a, tmp_path / "people.csv", EXPORT, mapping=MAPPING)
    drain_outbox()
    return tenant_a


def _search(tenant: Tenant, question: str) -> tuple[list[Claim], dict[str, object]]:
    """The hits' claims, best first, and what the search understood."""
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = retrieval_bootstrap.search()(query=Query(text=question, k=10), now=timezone.now())
        claims = Claim.objects.select_related("subject", "object_entity").in_bulk(
            [hit.claim_id for hit in result.hits]
        )
    understood = {
        "entities": result.understood.entities,
        "predicates": result.understood.predicates,
        "inverse": result.understood.inverse,
        "ambiguous": result.understood.ambiguous,
        "answer": result.understood.answer,
        "scores": dict(result.understood.scores),
    }
    return [claims[hit.claim_id] for hit in result.hits], understood


def _first(tenant: Tenant, question: str) -> tuple[str, str, dict[str, object]]:
    hits, understood = _search(tenant, question)
    first = hits[0]
    value = str(first.object_entity) if first.object_entity else first.object_literal or ""
    return first.predicate, value, understood


@pytest.mark.parametrize(
    ("question", "predicate", "value"),
    [
        ("who is Noah Dubois's manager?", "REPORTS_TO", "Ana Silva"),
        ("who does Mai Tran report to", "REPORTS_TO", "Ana Silva"),
        ("what team is Noah Dubois on", "MEMBER_OF", "Payments"),
        ("Mai Tran's team", "MEMBER_OF", "Ledger"),
        ("which office is Ana Silva in", "BASED_IN", "Paris"),
        ("what is Mai Tran's title", "HAS_TITLE", "Staff Engineer"),
    ],
)
def test_a_people_question_is_answered_first_when_no_ontology_entry_describes_it(
    people: Tenant, question: str, predicate: str, value: str
) -> None:
    found, answer, understood = _first(people, question)
    assert (found, answer) == (predicate, value), understood["scores"]
    assert understood["predicates"] == (predicate,), understood


def test_a_built_in_sense_without_facts_is_not_understood(people: Tenant) -> None:
    # "team" is a word of the built-in OWNED_BY; nobody here owns or is owned by anything.
    _, _, understood = _first(people, "what team is Noah Dubois on")
    assert understood["predicates"] != ("OWNED_BY",)


@pytest.mark.parametrize(
    ("question", "predicate", "value"),
    [
        # No word of "start date" is in these: the answer's kind (a date) is.
        ("when did Noah Dubois join", "HAS_START_DATE", "2019-03-04"),
        ("when was Mai Tran hired?", "HAS_START_DATE", "2021-11-15"),
        # "manager" is a word of a title here; the question wants someone, not a title.
        ("who is Noah Dubois's manager", "REPORTS_TO", "Ana Silva"),
        ("where does Ana Silva work from?", "BASED_IN", "Paris"),
    ],
)
def test_the_answer_kind_a_question_wants_picks_the_relation_whose_values_can_answer(
    people: Tenant, question: str, predicate: str, value: str
) -> None:
    found, answer, understood = _first(people, question)
    assert (found, answer) == (predicate, value), understood["scores"]


def test_a_question_naming_the_object_is_answered_by_its_subjects(people: Tenant) -> None:
    hits, understood = _search(people, "who reports to Ana Silva")
    assert understood["inverse"] is True, understood
    assert understood["predicates"] == ("REPORTS_TO",)
    first = hits[0]
    assert (first.predicate, str(first.object_entity)) == ("REPORTS_TO", "Ana Silva")
    assert first.subject.canonical_name in {"Noah Dubois", "Mai Tran"}
    # Both of her reports come before anything else.
    assert {str(hit.subject) for hit in hits[:2]} == {"Noah Dubois", "Mai Tran"}


@pytest.mark.parametrize("question", ["who are Ana Silva's direct reports", "Ana Silva's reports"])
def test_a_noun_of_the_relations_verb_asks_for_its_subjects(people: Tenant, question: str) -> None:
    hits, understood = _search(people, question)
    assert understood["inverse"] is True, understood
    assert {str(hit.subject) for hit in hits[:2]} == {"Noah Dubois", "Mai Tran"}
    assert {str(hit.object_entity) for hit in hits[:2]} == {"Ana Silva"}


def test_the_same_relation_asked_forwards_answers_with_the_object(people: Tenant) -> None:
    found, answer, understood = _first(people, "who does Ana Silva report to")
    assert (found, answer) == ("REPORTS_TO", "Ben Okafor"), understood
    assert understood["inverse"] is False


def test_a_unique_surname_alone_names_its_person(people: Tenant) -> None:
    found, answer, understood = _first(people, "who does Dubois report to")
    assert understood["entities"] == ("Noah Dubois",), understood
    assert (found, answer) == ("REPORTS_TO", "Ana Silva")


def test_a_name_part_two_people_share_is_reported_ambiguous_and_both_are_considered(
    people: Tenant,
) -> None:
    hits, understood = _search(people, "where is Chen based")
    assert set(understood["entities"]) == {"Li Chen", "Chen Wei"}, understood  # type: ignore[arg-type]
    assert understood["ambiguous"] == ("Chen",)
    top = {(str(hit.subject), hit.predicate, str(hit.object_entity)) for hit in hits[:2]}
    assert top == {("Li Chen", "BASED_IN", "Hanoi"), ("Chen Wei", "BASED_IN", "Berlin")}
