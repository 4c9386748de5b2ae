"""The MCP server, end to end: the SDK's own client over Streamable HTTP against a running
server process, with VERA API keys and OIDC access tokens from the local provider.

Tenant A's credentials see A's knowledge through every tool; tenant B's never do, by any
id, name or `scope`. Every way a token can be wrong is refused before any tool runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connections
from django.test import Client as DjangoClient

from curation.models import Claim, Entity
from retrieval.models import SearchHit
from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.services.api_keys import api_key_revoke
from tests.support.ingest import T0, drain_outbox, ingest_markdown, ingest_run, write_files
from tests.support.mcp_server import McpServer, call, mcp_server
from tests.support.oidc_provider import OIDCProvider
from tests.support.tenancy import Tenant, create_source, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = """# Caroline and Melanie

## Session 1 - 1:56 pm on 8 May, 2023

Caroline: Hey Mel! Good to see you!
Melanie: Hey Caroline! How have you been?
Caroline: I went to an LGBTQ support group yesterday and it was so powerful.
Melanie: That's great! What happened there?
Caroline: The stories of the people there inspired me a lot.
"""
FACT = (
    "# Billing\n\nThe billing-api runs on k8s-prod-1. The billing-api is owned by Team Payments.\n"
)
TOOLS = {"search", "context", "entity", "claim_history", "related", "feedback"}


@pytest.fixture(scope="module")
def provider() -> Iterator[OIDCProvider]:
    with OIDCProvider() as running:
        yield running


@pytest.fixture(scope="module")
def server(
    django_db_setup: None, provider: OIDCProvider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServer]:
    settings = connections["default"].settings_dict
    database = (
        f"postgres://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST']}:"
        f"{settings['PORT']}/{settings['NAME']}"
    )
    env = {
        # This module's refusals come from one address: they must not add up to a 429.
        "VERA_AUTH_FAILURE__LIMIT": "1000",
        "VERA_OIDC__ISSUER": provider.issuer,
        "OIDC_OP_JWKS_ENDPOINT": provider.jwks_endpoint,
        "VERA_OIDC__AUDIENCE": provider.api_audience,
    }
    log = tmp_path_factory.mktemp("mcp") / "mcp.log"
    with mcp_server(database_url=database, log=log, extra_env=env) as running:
        yield running


def _body(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


def _error(result: Any) -> str:
    assert result.is_error, result.structured_content
    return str(result.content[0].text)


@pytest.fixture
def tenants(tmp_path: Path) -> tuple[Tenant, Tenant]:
    a, b = make_tenant("Acme"), make_tenant("Bolt")
    ingest_markdown(a, tmp_path / "a", {"billing.md": FACT}, at=T0)
    return a, b


def test_a_key_lists_the_tools_and_searches_its_own_knowledge_when_connected(
    server: McpServer, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    key = a.issue_key(owner=a.viewer).plaintext
    names, (found,) = call(server, key, ("search", {"query": "where does the billing-api run"}))
    assert names >= TOOLS
    hits = _body(found)["hits"]
    runs_on = [hit for hit in hits if hit["predicate"] == "RUNS_ON"]
    assert runs_on
    assert runs_on[0]["object"] == "k8s-prod-1"
    assert runs_on[0]["citations"]
    assert runs_on[0]["id"]
    with rls.tenant_context(a.principal(a.viewer)):
        assert SearchHit.objects.filter(pk=runs_on[0]["id"]).exists()


def test_every_tool_answers_tenant_a_and_refuses_tenant_b_when_given_a_s_ids(
    server: McpServer, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    key_a = a.issue_key(owner=a.viewer).plaintext
    key_b = b.issue_key(owner=b.viewer).plaintext
    with rls.tenant_context(a.principal(a.viewer)):
        claim = Claim.objects.get(predicate="RUNS_ON")
        subject = Entity.objects.get(pk=claim.subject_id)
    _, (hits,) = call(server, key_a, ("search", {"query": "billing-api"}))
    hit_id = next(h["id"] for h in _body(hits)["hits"] if h["claim_id"] == claim.pk)
    asks: list[tuple[str, dict[str, Any]]] = [
        ("entity", {"name_or_id": str(subject.pk)}),
        ("entity", {"name_or_id": subject.canonical_name}),
        ("claim_history", {"claim_id": claim.pk}),
        ("related", {"entity": str(subject.pk)}),
        ("feedback", {"hit_id": hit_id, "helpful": True}),
        ("search", {"query": "billing-api", "scope": a.workspace.group_id}),
    ]
    _, mine = call(server, key_a, *asks)
    brief = _body(mine[0])
    assert brief["entity"]["id"] == subject.pk
    assert any(f["predicate"] == "RUNS_ON" and f["evidence"] for f in brief["facts"])
    assert _body(mine[1])["entity"]["id"] == subject.pk
    assert [c["id"] for c in _body(mine[2])["history"]] == [claim.pk]
    assert any(n["name"] == "k8s-prod-1" for n in _body(mine[3])["neighbours"])
    assert _body(mine[4])["helpful"] is True
    assert _body(mine[5])["hits"]

    _, theirs = call(server, key_b, *asks, ("search", {"query": "billing-api"}))
    for result in theirs[:5]:
        assert "visible to you" in _error(result) or "No entity named" in _error(result)
    assert "No such scope" in _error(theirs[5])
    assert all(h["scope"] == b.workspace.group_id for h in _body(theirs[6])["hits"])
    assert not any(h["claim_id"] == claim.pk for h in _body(theirs[6])["hits"])


def test_a_context_pack_over_mcp_is_the_rest_pack_and_holds_its_budget(
    server: McpServer, tenants: tuple[Tenant, Tenant], client: DjangoClient
) -> None:
    a, b = tenants
    key = a.issue_key(owner=a.viewer).plaintext
    question = "where does the billing-api run"
    _, (pack, again) = call(
        server, key, *[("context", {"query": question, "token_budget": 300})] * 2
    )
    body = _body(pack)
    assert 0 < body["tokens"] <= 300
    assert body["tokenizer"] == "minilm-wordpiece"
    assert any(fact["predicate"] == "RUNS_ON" for fact in body["current"]), body
    # Deterministic: the same pack again (its first line names the instant it packed at).
    assert _facts(body) == _facts(_body(again))
    rest = client.get(
        "/api/v1/context", {"q": question, "budget": 300}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert rest.status_code == 200, rest.content
    assert _facts(rest.json()) == _facts(body)  # one service behind both
    _, (theirs,) = call(
        server, b.issue_key(owner=b.viewer).plaintext, ("context", {"query": question})
    )
    assert not _body(theirs)["current"]


def test_a_conversation_pack_over_mcp_is_the_rest_pack(
    server: McpServer, client: DjangoClient, tmp_path: Path
) -> None:
    a = make_tenant("Chatty")
    write_files(tmp_path, {"chat.md": CHAT})
    source_id = create_source(
        a.principal(a.admin), group_id=a.workspace.group_id, kind="conversation",
        name="chats", config={"root": str(tmp_path)}, tier=2,
    )  # fmt: skip
    ingest_run(source_id=source_id, group_id=a.workspace.group_id)
    drain_outbox()
    key = a.issue_key(owner=a.viewer).plaintext
    question = "When did Caroline go to the support group?"
    _, (pack,) = call(server, key, ("context", {"query": question, "token_budget": 400}))
    body = _body(pack)
    rest = client.get(
        "/api/v1/context", {"q": question, "budget": 400}, HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert rest.status_code == 200, rest.content
    assert _facts(rest.json()) == _facts(body)
    assert [f["beside"] for f in rest.json()["current"]] == [f["beside"] for f in body["current"]]
    assert "(yesterday = 7 May 2023)" in body["text"]


def _facts(pack: dict[str, Any]) -> tuple[str, ...]:
    return tuple(pack["text"].splitlines()[1:])


def test_bad_arguments_are_tool_errors_the_model_can_read(
    server: McpServer, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    key = a.issue_key(owner=a.viewer).plaintext
    _, results = call(
        server, key,
        ("search", {"query": "x", "as_of": "last tuesday"}),
        ("search", {"query": "x", "k": 0}),
        ("search", {"query": "x", "scope": "tenant-b"}),
        ("entity", {"name_or_id": "no such thing anywhere"}),
        ("related", {"entity": "billing-api", "hops": 9}),
        ("claim_history", {"claim_id": 10**15}),
        ("context", {"query": "x", "token_budget": 10}),
        ("context", {"query": "x", "snapshot": 10**6}),
    )  # fmt: skip
    messages = [_error(result) for result in results]
    assert "as_of" in messages[0]
    assert "k" in messages[1]
    assert "scope" in messages[2]
    assert "No entity named" in messages[3]
    assert "hops" in messages[4]
    assert "No claim" in messages[5]
    assert "token_budget" in messages[6]
    assert "No snapshot" in messages[7]


PROPOSAL = {"subject": "billing-api", "predicate": "RUNS_ON", "object": "k8s-prod-7",
            "evidence": "billing-api moved to k8s-prod-7 last night."}  # fmt: skip


def test_propose_needs_its_scope_and_never_acts_past_the_persons_role(
    server: McpServer, provider: OIDCProvider, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    reader = provider.mint_access_token(user=_person(a.reviewer), aud=server.url, scope="vera:read")
    _, (refused,) = call(server, reader, ("propose", PROPOSAL))
    assert "needs the vera:propose scope" in _error(refused)
    # The scope asks for contributor; a viewer stays a viewer.
    wants = "vera:read vera:propose"
    viewer = provider.mint_access_token(user=_person(a.viewer), aud=server.url, scope=wants)
    _, (refused,) = call(server, viewer, ("propose", PROPOSAL))
    assert "contributor" in _error(refused)
    reviewer = provider.mint_access_token(user=_person(a.reviewer), aud=server.url, scope=wants)
    _, (done, again, bad) = call(
        server, reviewer, ("propose", PROPOSAL), ("propose", PROPOSAL),
        ("propose", {**PROPOSAL, "predicate": "LIVES_IN"}),
    )  # fmt: skip
    first = _body(done)
    assert (first["status"], first["created"], first["group_id"], first["scope"]) == (
        "proposed", True, a.workspace.group_id, a.workspace.group_id,
    )  # fmt: skip
    assert (_body(again)["claim_id"], _body(again)["created"]) == (first["claim_id"], False)
    assert "predicate" in _error(bad)
    with rls.tenant_context(a.principal(a.admin)):
        claim = Claim.objects.get(pk=first["claim_id"])
        assert claim.status == "proposed"
        assert claim.evidence.get().episode.title.startswith("Proposed by oidc:")


def test_a_principal_past_its_search_limit_gets_a_tool_error_naming_it(
    server: McpServer, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    Scope.objects.filter(pk=a.workspace.pk).update(principal_search_limit=2)
    key = a.issue_key(owner=a.viewer).plaintext
    _, results = call(server, key, *[("search", {"query": f"billing {n}"}) for n in range(3)])
    assert [result.is_error for result in results] == [False, False, True]
    assert "Search rate limit reached for this API key: 2 per" in _error(results[2])


# --- who may connect --------------------------------------------------------------------


def _initialize(server: McpServer, token: str | None, **headers: str) -> httpx.Response:
    sent = {"Accept": "application/json, text/event-stream", **headers}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    return httpx.post(server.url, json=body, headers=sent, timeout=30)


def _person(user: Any) -> dict[str, Any]:
    """The provider's claims for an existing VERA user (matched by verified email)."""
    name = user.get_username()
    return {"sub": f"sub-{name}", "email": user.email, "email_verified": True,
            "preferred_username": name}  # fmt: skip


def _refused(response: httpx.Response, status: int, error: str, server: McpServer) -> None:
    assert response.status_code == status, response.text
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'error="{error}"' in challenge
    metadata = f"{server.base}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata}"' in challenge


def test_the_metadata_names_the_resource_its_issuer_and_scopes(
    server: McpServer, provider: OIDCProvider
) -> None:
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        body = httpx.get(server.base + path, timeout=10).json()
        assert body["resource"] == server.url
        assert body["authorization_servers"] == [provider.issuer]
        assert body["scopes_supported"] == ["vera:read", "vera:propose"]


def test_requests_without_a_valid_credential_are_refused_when_connecting(
    server: McpServer, provider: OIDCProvider, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    user = _person(a.viewer)
    good: dict[str, Any] = {"aud": server.url, "scope": "vera:read"}
    _refused(_initialize(server, None), 401, "invalid_token", server)
    _refused(_initialize(server, "vera_nope"), 401, "invalid_token", server)
    expired = provider.mint_access_token(user=user, **good, exp=int(time.time()) - 600)
    _refused(_initialize(server, expired), 401, "invalid_token", server)
    foreign = provider.mint_access_token(user=user, **good, iss="https://elsewhere.example")
    _refused(_initialize(server, foreign), 401, "invalid_token", server)
    rest_token = provider.mint_access_token(user=user, scope="vera:read")  # aud: the REST API
    _refused(_initialize(server, rest_token), 401, "invalid_token", server)
    no_scope = provider.mint_access_token(user=user, aud=server.url, scope="openid email")
    _refused(_initialize(server, no_scope), 403, "insufficient_scope", server)
    valid = provider.mint_access_token(user=user, **good)
    assert _initialize(server, valid).status_code == 200


def test_a_revoked_key_and_a_deactivated_user_are_refused_from_the_next_request(
    server: McpServer, provider: OIDCProvider, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    issued = a.issue_key(owner=a.viewer)
    assert _initialize(server, issued.plaintext).status_code == 200
    actor = a.principal(a.admin)
    with rls.tenant_context(actor):
        api_key_revoke(actor=actor, key_id=issued.key.pk)
    _refused(_initialize(server, issued.plaintext), 401, "invalid_token", server)

    user = _person(a.viewer)
    token = provider.mint_access_token(user=user, aud=server.url, scope="vera:read")
    assert _initialize(server, token).status_code == 200
    get_user_model().objects.filter(pk=a.viewer.pk).update(is_active=False)
    _refused(_initialize(server, token), 401, "invalid_token", server)


def test_an_oidc_token_reads_as_its_person_and_never_past_their_role(
    server: McpServer, provider: OIDCProvider, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    user = _person(a.admin)
    token = provider.mint_access_token(user=user, aud=server.url, scope="vera:read")
    _, (found,) = call(server, token, ("search", {"query": "where does the billing-api run"}))
    assert {h["scope"] for h in _body(found)["hits"]} == {a.workspace.group_id}
    outsider = _person(b.viewer)
    theirs = provider.mint_access_token(user=outsider, aud=server.url, scope="vera:read")
    _, (none,) = call(server, theirs, ("search", {"query": "where does the billing-api run"}))
    assert not _body(none)["hits"]


def test_a_foreign_host_header_is_refused(
    server: McpServer, tenants: tuple[Tenant, Tenant]
) -> None:
    a, _ = tenants
    key = a.issue_key(owner=a.viewer, role=Role.VIEWER).plaintext
    response = _initialize(server, key, Host="evil.example")
    assert response.status_code == 421
    # Checked before credentials: the same answer without a token, or with a bad one.
    assert _initialize(server, None, Host="evil.example").status_code == 421
    assert _initialize(server, "vera_nope", Host="evil.example").status_code == 421
    assert _initialize(server, None, Origin="https://evil.example").status_code == 403
    metadata = httpx.get(
        f"{server.base}/.well-known/oauth-protected-resource", headers={"Host": "evil.example"}
    )
    assert metadata.status_code == 421
    assert httpx.get(f"{server.base}/healthz", headers={"Host": "pod-1"}).status_code == 200


def test_repeated_failed_authentications_turn_into_429_while_a_valid_key_still_passes(
    tenants: tuple[Tenant, Tenant], tmp_path: Path
) -> None:
    a, _ = tenants
    valid = a.issue_key(owner=a.viewer).plaintext
    settings = connections["default"].settings_dict
    database = (
        f"postgres://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST']}:"
        f"{settings['PORT']}/{settings['NAME']}"
    )
    limits = {"VERA_AUTH_FAILURE__LIMIT": "2", "VERA_AUTH_FAILURE__WINDOW_S": "120"}
    with mcp_server(database_url=database, log=tmp_path / "mcp.log", extra_env=limits) as one:
        forged = "vera_abcdefgh_" + "x" * 43
        # The counters live in the shared cache: this module's other refusals counted too.
        cache.delete_many(["authfail:ip:127.0.0.1", "authfail:key:abcdefgh"])
        codes = [_initialize(one, forged).status_code for _ in range(4)]
        assert codes == [401, 401, 429, 429]
        assert _initialize(one, valid).status_code == 200
