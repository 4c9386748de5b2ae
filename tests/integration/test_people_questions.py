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
    "id,name,manager,team,office,title\n"
    "E1,Noah Dubois,Ana Silva,Payments,Lyon,Product Manager\n"
    "E2,Mai Tran,Ana Silva,Ledger,Hanoi,Staff Engineer\n"
    "E3,Ana Silva,Ben Okafor,Leadership,Paris,Engineering Director\n"
)
MAPPING = {"manager": "REPORTS_TO", "team": "MEMBER_OF", "office": "BASED_IN",
           "title": "HAS_TITLE"}  # fmt: skip


@pytest.fixture
def people(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    ingest_cmdb(tenant_a, tmp_path / "people.csv", EXPORT, mapping=MAPPING)
    drain_outbox()
    return tenant_a


def _first(tenant: Tenant, question: str) -> tuple[str, str, dict[str, object]]:
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = retrieval_bootstrap.search()(query=Query(text=question, k=10), now=timezone.now())
        first = Claim.objects.select_related("object_entity").get(pk=result.hits[0].claim_id)
    value = str(first.object_entity) if first.object_entity else first.object_literal or ""
    understood = {
        "entities": result.understood.entities,
        "predicates": result.understood.predicates,
    }
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
    assert (found, answer) == (predicate, value), understood
    assert understood["predicates"] == (predicate,), understood


def test_a_built_in_sense_without_facts_is_not_understood(people: Tenant) -> None:
    # "team" is a word of the built-in OWNED_BY; nobody here owns or is owned by anything.
    _, _, understood = _first(people, "what team is Noah Dubois on")
    assert understood["predicates"] != ("OWNED_BY",)
