"""One search, three doors: REST, the portal and MCP call the same use case
(`retrieval.usecases.search`), so the same question by the same credential gets the same
hits, in the same order, with the same citations, narrowed to a scope alike.

Real servers throughout: Postgres under row-level security as the app role, the index
drained through the real outbox, and the MCP server as a process of its own driven by the
SDK's client.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.services.scopes import membership_grant, scope_create
from tests.support.ingest import T0, ingest_markdown
from tests.support.mcp_server import McpServer, call, mcp_server
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "where do the billing-api and the ledger-api run"
# What a hit is compared by: its claim and each citation's source and document.
Answer = list[tuple[int, list[tuple[str, str]]]]
CITATION = r'<li class="citation" data-source="([^"]*)" data-episode="([^"]*)"'


@pytest.fixture(scope="module")
def server(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpServer]:
    settings = connections["default"].settings_dict
    database = (
        f"postgres://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST']}:"
        f"{settings['PORT']}/{settings['NAME']}"
    )
    log = tmp_path_factory.mktemp("mcp-doors") / "mcp.log"
    with mcp_server(database_url=database, log=log) as running:
        yield running


@pytest.fixture
def corpus(tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path) -> tuple[Tenant, Scope]:
    """Tenant A's two workspaces, each with facts in two documents, and tenant B's own
    copy of one of them (never an answer for A); returns A and its second workspace."""
    west = scope_create(kind=ScopeKind.WORKSPACE, name="West & Co", parent_id=tenant_a.org.pk)
    membership_grant(user_id=tenant_a.admin.pk, scope_id=west.pk, role=Role.ADMIN)
    billing = "# Billing\n\nThe billing-api runs on {}. The billing-api is owned by Team Pay.\n"
    ingest_markdown(
        tenant_a, tmp_path / "one",
        {"billing.md": billing.format("k8s-prod-1"),
         "ledger.md": "# Ledger\n\nThe ledger-api runs on k8s-prod-2.\n"},
        at=T0,
    )  # fmt: skip
    ingest_markdown(
        replace(tenant_a, workspace=west), tmp_path / "two",
        {"ledger.md": "# Ledger west\n\nThe ledger-api runs on k8s-west-7.\n",
         "billing.md": billing.format("k8s-west-8")},
        name="west-docs", at=T0,
    )  # fmt: skip
    ingest_markdown(tenant_b, tmp_path / "b", {"billing.md": billing.format("k8s-globex-9")}, at=T0)
    return tenant_a, west


def _rest(client: Client, *, key: str | None = None, **params: str) -> Answer:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    response = client.get("/api/v1/search", {"q": QUESTION, **params}, **headers)
    assert response.status_code == 200, response.content
    return _from_json(response.json())


def _from_json(body: dict[str, Any]) -> Answer:
    return [
        (hit["claim_id"], [(c["source"], c["episode"]) for c in hit["citations"]])
        for hit in body["hits"]
    ]


def _portal(client: Client, **params: str) -> Answer:
    response = client.get("/search/", {"q": QUESTION, **params})
    assert response.status_code == 200
    page = response.content.decode()
    answer: Answer = []
    for item in re.split(r'<li class="hit" ', page)[1:]:
        claim = int(re.match(r'data-claim="(\d+)"', item).group(1))  # type: ignore[union-attr]
        cited = re.findall(CITATION, item)
        answer.append((claim, [(html.unescape(s), html.unescape(e)) for s, e in cited]))
    return answer


def _mcp(server: McpServer, key: str, **arguments: str) -> Answer:
    _, (result,) = call(server, key, ("search", {"query": QUESTION, "k": 10, **arguments}))
    assert not result.is_error, result.content
    return _from_json(dict(result.structured_content))


def _sources(answer: Answer) -> set[str]:
    return {source for _, citations in answer for source, _ in citations}


def test_rest_and_the_portal_give_a_person_the_same_hits_and_citations(
    client: Client, corpus: tuple[Tenant, Scope]
) -> None:
    tenant, west = corpus
    client.force_login(tenant.admin)
    everywhere = _rest(client, k="50")  # all of them
    assert len(everywhere) >= 4
    assert all(citations for _, citations in everywhere)
    assert _portal(client, k="50") == everywhere

    narrowed = _rest(client, k="50", scope=west.group_id)
    assert narrowed
    assert _sources(narrowed) == {"west-docs"} < _sources(everywhere)
    assert _portal(client, k="50", scope=west.group_id) == narrowed


def test_rest_and_mcp_give_a_key_the_same_hits_and_citations(
    client: Client, server: McpServer, corpus: tuple[Tenant, Scope]
) -> None:
    tenant, west = corpus
    key = tenant.issue_key(owner=tenant.admin).plaintext  # the first workspace's, as a viewer
    by_rest = _rest(client, key=key)
    assert by_rest
    assert all(citations for _, citations in by_rest)
    assert _mcp(server, key) == by_rest
    scope = tenant.workspace.group_id
    assert _mcp(server, key, scope=scope) == _rest(client, key=key, scope=scope)
    # A scope past the key is refused by both doors alike: a 404 and a tool error.
    response = client.get(
        "/api/v1/search", {"q": QUESTION, "scope": west.group_id},
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )  # fmt: skip
    assert response.status_code == 404
    _, (refused,) = call(server, key, ("search", {"query": QUESTION, "scope": west.group_id}))
    assert refused.is_error
    assert "No such scope visible to you" in refused.content[0].text


def test_the_portal_and_mcp_give_the_same_hits_and_citations_in_a_scope(
    client: Client, server: McpServer, corpus: tuple[Tenant, Scope]
) -> None:
    tenant, _ = corpus
    key = tenant.issue_key(owner=tenant.admin).plaintext
    client.force_login(tenant.admin)
    scope = tenant.workspace.group_id
    by_portal = _portal(client, scope=scope)
    assert len(by_portal) >= 2
    assert _mcp(server, key, scope=scope) == by_portal
