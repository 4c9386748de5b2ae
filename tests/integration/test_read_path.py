"""One read path: query strings parsed once (pure), rendered per entrypoint, hits hydrated once."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse

from curation.domain.params import ClaimFilters, parse_claim_filters
from curation.domain.tiers import ClaimStatus
from kernel.params import InvalidQuery, ParamReader
from retrieval.domain.query import MAX_QUERY_CHARS, Query, parse_query
from tests.integration.test_search import _search, corpus  # noqa: F401 - the shared fixture
from tests.support.tenancy import Tenant

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _errors(parse, params: dict[str, str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidQuery) as raised:
        parse(params)
    return raised.value.errors


# --- parsing (no database) --------------------------------------------------------------


def test_every_search_parameter_is_read_into_the_query_when_all_are_valid() -> None:
    query = parse_query(
        {"q": "  billing-api  ", "k": "5", "as_of": "2026-01-01T00:00:00Z",
         "predicate": "RUNS_ON", "entity": "billing-api", "source": "7", "tier": "2"}
    )  # fmt: skip
    assert query == Query(
        text="billing-api", k=5, as_of=T0, predicate="RUNS_ON", entity="billing-api",
        source=7, tier=2,
    )  # fmt: skip


def test_absent_and_blank_parameters_take_their_defaults_when_parsed() -> None:
    assert parse_query({"q": "x", "predicate": "", "entity": ""}) == Query(text="x", k=10)


def test_a_parsed_query_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_query({"q": "x"}).k = 99  # type: ignore[misc]


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"q": ""}, "q", "the query is empty"),
        ({"q": "   "}, "q", "the query is empty"),
        ({"q": "a\x00b"}, "q", "the query contains a NUL character"),
        ({"q": "x" * (MAX_QUERY_CHARS + 1)}, "q", f"longer than {MAX_QUERY_CHARS} characters"),
        ({"q": "a", "k": "0"}, "k", "must be between 1 and 100"),
        ({"q": "a", "k": "101"}, "k", "must be between 1 and 100"),
        ({"q": "a", "k": "ten"}, "k", "must be an integer"),
        ({"q": "a", "k": ""}, "k", "must be an integer"),
        ({"q": "a", "as_of": "yesterday"}, "as_of", "with a time zone"),
        ({"q": "a", "as_of": "2026-01-01T00:00:00"}, "as_of", "with a time zone"),
        ({"q": "a", "as_of": "2026-13-01T00:00:00Z"}, "as_of", "with a time zone"),
        ({"q": "a", "source": "0"}, "source", "must be between 1 and"),
        ({"q": "a", "source": str(2**63)}, "source", "must be between 1 and"),
        ({"q": "a", "tier": "9"}, "tier", "must be between 1 and 4"),
        ({"q": "a", "colour": "red"}, "detail", "unknown parameter(s): colour"),
    ],
)
def test_a_bad_search_parameter_is_named_with_a_message_when_parsed(
    params: dict[str, str], field: str, message: str
) -> None:
    errors = _errors(parse_query, params)
    assert list(errors) == [field]
    assert message in errors[field]


def test_every_bad_parameter_is_reported_at_once_when_several_are_wrong() -> None:
    errors = _errors(parse_query, {"q": " ", "k": "ten", "tier": "0", "colour": "red"})
    assert set(errors) == {"q", "k", "tier", "detail"}


def test_an_offset_instant_keeps_its_offset_when_parsed() -> None:
    query = parse_query({"q": "a", "as_of": "2026-01-01T01:00:00+01:00"})
    assert query.as_of == T0
    assert query.as_of.utcoffset() == dt.timedelta(hours=1)


def test_the_first_problem_with_a_field_is_the_one_reported() -> None:
    reader = ParamReader({"k": "x"})
    reader.integer("k", low=1, high=2)
    reader.fail("k", "a later complaint")
    assert reader.errors == {"k": "must be an integer"}


def test_claim_filters_are_read_with_the_same_rules_when_valid() -> None:
    filters = parse_claim_filters(
        {"status": "retracted", "as_of": "2026-01-01T00:00:00Z", "predicate": "RUNS_ON",
         "subject": "billing-api", "source": "3", "tier": "1", "limit": "5", "offset": "10"}
    )  # fmt: skip
    assert filters == ClaimFilters(
        status=ClaimStatus.RETRACTED, as_of=T0, predicate="RUNS_ON", subject="billing-api",
        source=3, tier=1,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "gone"}, "status"),
        ({"as_of": "yesterday"}, "as_of"),
        ({"source": "x"}, "source"),
        ({"tier": "x"}, "tier"),
        ({"colour": "red"}, "detail"),
    ],
)
def test_a_bad_claim_filter_is_named_when_parsed(params: dict[str, str], field: str) -> None:
    assert list(_errors(parse_claim_filters, params)) == [field]


# --- each entrypoint renders the error its own way --------------------------------------


@pytest.mark.django_db
def test_the_search_api_answers_400_with_a_message_per_field_when_the_query_is_bad(
    tenant_a: Tenant, client: Client
) -> None:
    client.force_login(tenant_a.admin)
    response = client.get("/api/v1/search", {"q": " ", "k": "ten", "tier": "9"})
    assert response.status_code == 400
    assert response.json() == {
        "q": "the query is empty",
        "k": "must be an integer",
        "tier": "must be between 1 and 4",
    }


@pytest.mark.django_db
def test_the_claims_api_answers_400_with_a_message_per_field_when_a_filter_is_bad(
    tenant_a: Tenant, client: Client
) -> None:
    client.force_login(tenant_a.admin)
    response = client.get("/api/v1/claims", {"tier": "x", "as_of": "2026-01-01T00:00:00"})
    assert response.status_code == 400
    assert response.json() == {
        "as_of": "use an ISO 8601 instant with a time zone",
        "tier": "must be an integer",
    }


@pytest.mark.django_db
def test_the_portal_shows_each_message_beside_the_form_when_the_query_is_bad(
    tenant_a: Tenant, client: Client
) -> None:
    client.force_login(tenant_a.viewer)
    html = client.get("/search/", {"q": "x" * 2001, "k": "0"}).content.decode()
    assert f"the query is longer than {MAX_QUERY_CHARS} characters" in html
    assert "k: must be between 1 and 100" in html


# --- one hydration ----------------------------------------------------------------------


def test_the_portal_lists_the_hits_the_api_returns_when_both_search_alike(
    corpus: Tenant,  # noqa: F811
    client: Client,
) -> None:
    api = _search(client, corpus, q="billing-api ledger-db")["hits"]
    assert api
    client.force_login(corpus.admin)
    html = client.get("/search/", {"q": "billing-api ledger-db"}).content.decode()
    links = [f'href="{reverse("review:claim-detail", args=[hit["claim_id"]])}"' for hit in api]
    positions = [html.index(link) for link in links]
    assert positions == sorted(positions)
