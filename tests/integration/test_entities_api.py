"""Entities over REST: the entity with its facts, and its neighbourhood read from the graph.

Real pipeline (Markdown source, supersession by a newer document), real FalkorDB fed by
the outbox, real RLS: the graph's answer is re-read in Postgres, so a path the caller
may not see, or one the graph holds stale, never reaches the response.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.test import Client

from curation import bootstrap
from curation.domain.graph import GraphEdge, GraphNode, epoch_ms
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity
from tenants import rls
from tests.support.ingest import T0, T1, ingest_billing_history
from tests.support.lifecycle import history_written_by_hand
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path) -> tuple[Tenant, Tenant]:
    bootstrap.providers().graph().clear()
    ingest_billing_history(tenant_a, tmp_path / "a")
    ingest_billing_history(tenant_b, tmp_path / "b")  # the same names, another tenant
    return tenant_a, tenant_b


def _entity(tenant: Tenant, name: str) -> Entity:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Entity.objects.get(canonical_name=name)


def _get(client: Client, tenant: Tenant, url: str, **params: object) -> tuple[int, object]:
    client.force_login(tenant.viewer)
    response = client.get(url, params)
    return response.status_code, response.json()


def _related(client: Client, tenant: Tenant, entity: Entity, **params: object) -> list[tuple]:
    status, body = _get(client, tenant, f"/api/v1/entities/{entity.pk}/related", **params)
    assert status == 200, body
    assert body["entity"]["id"] == entity.pk
    predicates = {claim["id"]: claim["predicate"] for claim in body["claims"]}
    assert len(predicates) == len(body["claims"])  # each claim once
    return [
        (p["name"], p["hops"], [predicates[c] for c in p["claim_ids"]]) for p in body["neighbours"]
    ]


def test_an_entity_with_its_facts_now_and_before(world, client: Client) -> None:
    tenant_a, _ = world
    billing = _entity(tenant_a, "billing-api")

    status, body = _get(client, tenant_a, f"/api/v1/entities/{billing.pk}")

    assert status == 200
    assert (body["name"], body["group_id"]) == ("billing-api", tenant_a.workspace.group_id)
    now = sorted((c["predicate"], c["object"].get("entity")) for c in body["current"])
    assert now == [("OWNED_BY", "payments-team"), ("RUNS_ON", "k8s-prod-2")]
    assert [(c["object"]["entity"], c["status"]) for c in body["past"]] == [
        ("k8s-prod-1", "superseded")
    ]
    assert body["past"][0]["evidence"][0]["external_id"] == "billing.md"


def test_related_walks_the_graph_as_of_any_time(world, client: Client) -> None:
    tenant_a, _ = world
    billing = _entity(tenant_a, "billing-api")

    now = _related(client, tenant_a, billing)
    before = _related(client, tenant_a, billing, as_of=(T0 + dt.timedelta(days=1)).isoformat())
    owners = _related(client, tenant_a, billing, predicate="owned_by")
    team = _entity(tenant_a, "payments-team")
    two_hops = _related(client, tenant_a, team, hops=2)

    assert sorted(now) == [("k8s-prod-2", 1, ["RUNS_ON"]), ("payments-team", 1, ["OWNED_BY"])]
    assert ("k8s-prod-1", 1, ["RUNS_ON"]) in before
    assert ("k8s-prod-2", 1, ["RUNS_ON"]) not in before
    assert owners == [("payments-team", 1, ["OWNED_BY"])]
    assert ("k8s-prod-2", 2, ["OWNED_BY", "RUNS_ON"]) in two_hops


def test_another_tenant_sees_neither_the_entity_nor_its_neighbours(world, client: Client) -> None:
    tenant_a, tenant_b = world
    billing_a, billing_b = _entity(tenant_a, "billing-api"), _entity(tenant_b, "billing-api")

    assert _get(client, tenant_b, f"/api/v1/entities/{billing_a.pk}")[0] == 404
    assert _get(client, tenant_b, f"/api/v1/entities/{billing_a.pk}/related")[0] == 404
    _, body = _get(client, tenant_a, f"/api/v1/entities/{billing_a.pk}/related", hops=3)
    ids = {c["id"] for c in body["claims"]}
    assert ids
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert ids <= set(Claim.objects.values_list("pk", flat=True))
    assert billing_b.pk != billing_a.pk


def test_the_graph_is_re_checked_against_postgres(world, client: Client) -> None:
    """A stale edge (its claim no longer valid) and a forged one (another tenant's claim
    under this group's id) come back from the graph, and are dropped by the re-read."""
    tenant_a, tenant_b = world
    graph = bootstrap.providers().graph()
    billing = _entity(tenant_a, "billing-api")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        owned = Claim.objects.get(predicate="OWNED_BY")
        with history_written_by_hand():
            Claim.objects.filter(pk=owned.pk).update(status=ClaimStatus.RETRACTED, valid_to=T1)
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        theirs = Claim.objects.get(predicate="OWNED_BY")
    graph.upsert_claim(
        GraphEdge(
            claim_id=theirs.pk, group_id=tenant_a.workspace.group_id,
            subject=GraphNode(f"e:{billing.pk}", "billing-api", "service"),
            object=GraphNode("e:999999", "leak", "team"), predicate="OWNED_BY", fact="x",
            valid_from=epoch_ms(T0), episode_ids=(),
        )
    )  # fmt: skip

    names = {name for name, _, _ in _related(client, tenant_a, billing)}

    assert "payments-team" not in names  # retracted in Postgres, still an edge in the graph
    assert "leak" not in names  # the graph named tenant B's claim: RLS hides it
    assert "k8s-prod-2" in names


@pytest.mark.parametrize(
    ("params", "field"),
    [({"hops": 4}, "hops"), ({"hops": "two"}, "hops"), ({"as_of": "yesterday"}, "as_of"),
     ({"limit": 0}, "limit"), ({"depth": 2}, "depth")],
)  # fmt: skip
def test_a_bad_query_is_a_400_naming_the_parameter(
    world, client: Client, params: dict, field: str
) -> None:
    tenant_a, _ = world
    billing = _entity(tenant_a, "billing-api")
    status, body = _get(client, tenant_a, f"/api/v1/entities/{billing.pk}/related", **params)
    assert status == 400
    assert field in str(body)  # a field's own message, or the unknown parameter named


def test_an_id_past_any_key_is_a_404(world, client: Client) -> None:
    tenant_a, _ = world
    assert _get(client, tenant_a, f"/api/v1/entities/{10**22}")[0] == 404


def test_search_hits_link_their_entities(world, client: Client) -> None:
    tenant_a, _ = world
    _, body = _get(client, tenant_a, "/api/v1/search", q="billing-api runs on", k=5)
    hit = next(h for h in body["hits"] if h["predicate"] == "RUNS_ON")
    assert _get(client, tenant_a, f"/api/v1/entities/{hit['subject_id']}")[1]["name"] == (
        "billing-api"
    )
    assert _get(client, tenant_a, f"/api/v1/entities/{hit['object_id']}")[1]["name"] == (
        "k8s-prod-2"
    )


def test_the_row_reader_answers_what_the_claim_serializer_would(world) -> None:
    """`related` serialises its claims from plain rows (speed); the output must not drift
    from `ClaimSerializer`'s, field for field, whatever the claim's state."""
    from curation.api.serializers import ClaimSerializer, claims_data

    tenant_a, _ = world
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        claims = Claim.objects.all()
        rows = claims_data(claims)
        models = ClaimSerializer(
            claims.select_related("subject", "object_entity").prefetch_related(
                "evidence__episode__source"
            ),
            many=True,
        ).data

    assert {claim["status"] for claim in models} >= {"published", "superseded"}
    assert any(claim["superseded_by"] for claim in models)
    assert len(rows) == len(models) > 0
    for claim in models:
        expected = {**claim, "evidence": sorted(claim["evidence"], key=lambda e: e["episode"])}
        assert rows[claim["id"]] == expected
        assert list(rows[claim["id"]]) == list(claim)  # the same keys in the same order
