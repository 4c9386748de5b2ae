"""The search API as its OpenAPI schema documents it, and the responses keep to it."""

from __future__ import annotations

import pytest
import yaml
from django.test import Client

from retrieval.api.serializers import SearchHitSerializer, SearchResultSerializer
from retrieval.domain.ranking import SIGNALS
from tests.integration.test_search import _search, corpus  # noqa: F401 - the shared fixture
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


def _schema(client: Client, tenant: Tenant) -> dict:
    client.force_login(tenant.admin)
    response = client.get("/api/v1/schema")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def test_schema_documents_every_search_parameter_and_the_hit_shape(
    tenant_a: Tenant, client: Client
) -> None:
    schema = _schema(client, tenant_a)
    operation = schema["paths"]["/api/v1/search"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert names == {
        "q", "k", "as_of", "predicate", "entity", "source", "tier", "snapshot", "scope",
    }  # fmt: skip
    components = schema["components"]["schemas"]
    assert set(components["Signals"]["properties"]) == {*SIGNALS, "understood"}
    # How to authenticate: an API key or an OIDC access token, both bearer.
    schemes = schema["components"]["securitySchemes"]
    assert {schemes["apiKey"]["scheme"], schemes["oidc"]["scheme"]} == {"bearer"}
    assert {"apiKey": []} in operation["security"]
    assert {"id", "score", "signals", "citations", "rerank"} <= set(
        components["SearchHit"]["properties"]
    )


def test_a_real_response_has_exactly_the_documented_fields(
    corpus: Tenant,  # noqa: F811
    client: Client,
) -> None:
    body = _search(client, corpus, q="billing-api")
    assert set(body) == set(SearchResultSerializer().fields)
    for hit in body["hits"]:
        assert set(hit) == set(SearchHitSerializer().fields)
        assert set(hit["signals"]) == {*SIGNALS, "understood"}
        assert hit["group_id"] == hit["scope"] == corpus.workspace.group_id
