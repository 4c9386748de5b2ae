"""VERA's MCP server: the official SDK's Streamable HTTP app at `/mcp`, an OAuth 2.1
resource server (see `vera.mcp.auth`), with the tools of `vera.mcp.tools`.

Run as its own ASGI process from the same code and settings as web (`vera.mcp.asgi`):
`uvicorn vera.mcp.asgi:app --port 8001`. Its lifespan runs the SDK's session manager.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import urlparse

import anyio
from django.conf import settings
from django.db import close_old_connections
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import AnyHttpUrl, Field
from rest_framework.exceptions import Throttled
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from curation.domain.proposals import MAX_ENTITY_NAME, MAX_EVIDENCE, MAX_URL
from retrieval.domain.context import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET
from retrieval.domain.query import DEFAULT_K, MAX_K, MAX_QUERY_CHARS
from tenants.api.authentication import FailureLimiter
from tenants.domain import api_keys
from tenants.domain.access import Principal
from vera.health import check_all, verdict
from vera.mcp import auth, tools

INSTRUCTIONS = """\
VERA is an organisation's curated knowledge: which service runs where, who owns what,
what depends on what. Every fact carries its validity and citations. Prefer `context`
for a prompt-ready block of facts, `search` for ranked cited hits, `entity` for all that
is known about one thing. Facts you learn elsewhere can be offered with `propose`: a
human reviewer decides; nothing you propose is published by the call."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

Question = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="the question, in words")
]
AsOf = Annotated[
    str | None,
    Field(
        description="ISO 8601 instant (e.g. 2025-03-01T00:00:00Z): facts valid then, instead of now"
    ),
]
Scope = Annotated[
    str | None,
    Field(
        description="a group id (e.g. w:0123...) of a scope you read: only it and what is "
        "under it; it can only narrow what you see"
    ),
]


def _principal() -> Principal:
    principal = auth.principal_from(get_access_token())
    if principal is None:  # the bearer middleware admits no request without one
        raise ToolError("Not authenticated.")
    return principal


async def _call(function: Callable[..., dict[str, Any]], **arguments: Any) -> dict[str, Any]:
    """The tool's function on a worker thread (Django's ORM is synchronous), as the token's
    principal."""
    principal = _principal()
    if function is tools.propose:
        access = get_access_token()
        arguments["token_scopes"] = list(access.scopes) if access else []
    return await anyio.to_thread.run_sync(
        lambda: tools.run(lambda: function(principal, **arguments))
    )


def build_server() -> MCPServer:
    """The MCP server with VERA's tools, authenticating as a resource server."""
    server = MCPServer(
        name="VERA",
        instructions=INSTRUCTIONS,
        token_verifier=auth.VeraTokenVerifier(),
        auth=AuthSettings(
            # The SDK wants one; the metadata VERA serves (below) names the configured ones.
            issuer_url=AnyHttpUrl((settings.VERA_MCP__AUTHORIZATION_SERVERS or [_origin()])[0]),
            resource_server_url=AnyHttpUrl(settings.VERA_MCP__RESOURCE_URL),
            required_scopes=[auth.SCOPE_READ],
            validate_token_resource=True,
        ),
    )

    @server.tool(
        description="Ranked, cited facts for a question. Each hit has the fact, its "
        "validity (valid_from/valid_to), trust tier, citations (source, document, snippet), "
        "the six ranking signals and an `id` to vote on with `feedback` (its hit_id); `understood` "
        "says which entities and relation the question was read as.",
        annotations=READ_ONLY,
    )
    async def search(
        query: Question,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many hits")] = DEFAULT_K,
        as_of: AsOf = None,
        scope: Scope = None,
    ) -> dict[str, Any]:
        return await _call(tools.search, query=query, k=k, as_of=as_of, scope=scope)

    @server.tool(
        description="A context pack for a prompt: the best cited facts for the question, "
        "packed into `token_budget` tokens (counted with the local MiniLM WordPiece "
        "tokenizer, close to GPT-style counts). Current facts come first, history after "
        "(marked with its validity), no fact twice; the same inputs give the same pack. "
        "`text` is ready to paste; `current` and `history` carry each fact's validity, "
        "tier and citations.",
        annotations=READ_ONLY,
    )
    async def context(
        query: Question,
        token_budget: Annotated[
            int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="tokens the pack may take")
        ] = DEFAULT_BUDGET,
        as_of: AsOf = None,
        scope: Scope = None,
        snapshot: Annotated[
            int | None, Field(ge=1, description="pack from this sealed knowledge snapshot")
        ] = None,
    ) -> dict[str, Any]:
        return await _call(
            tools.context, query=query, token_budget=token_budget, as_of=as_of, scope=scope,
            snapshot=snapshot,
        )  # fmt: skip

    @server.tool(
        description="An entity brief: its current facts (or those valid `as_of`), what "
        "changed in the last 30 days, its aliases and its neighbours one hop away, every "
        "fact cited. Name it by id or by name (canonical or alias).",
        annotations=READ_ONLY,
    )
    async def entity(
        name_or_id: Annotated[str, Field(min_length=1, max_length=300)], as_of: AsOf = None
    ) -> dict[str, Any]:
        return await _call(tools.entity, name_or_id=name_or_id, as_of=as_of)

    @server.tool(
        description="Every value a claim's subject and predicate have had, oldest first, "
        "with validity and citations: how a fact changed over time.",
        annotations=READ_ONLY,
    )
    async def claim_history(claim_id: Annotated[int, Field(ge=1)]) -> dict[str, Any]:
        return await _call(tools.claim_history, claim_id=claim_id)

    @server.tool(
        description="Entities and values within `hops` (1-3) of an entity (id or name), "
        "valid now or `as_of`, each path with the claims it runs through.",
        annotations=READ_ONLY,
    )
    async def related(
        entity: Annotated[str, Field(min_length=1, max_length=300)],
        hops: Annotated[int, Field(ge=1, le=3)] = 1,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        return await _call(tools.related, entity=entity, hops=hops, as_of=as_of)

    @server.tool(
        description="Offer a fact you learnt elsewhere: (subject, PREDICATE, object) with the "
        "text that states it. It goes to VERA's human reviewers as a proposal, attributed "
        "to you; it is never published by this call and no search returns it until a "
        "reviewer accepts it. Use the workspace's predicates (e.g. RUNS_ON, OWNED_BY, "
        "DEPENDS_ON); an unknown one is refused with the list. Proposing the same fact "
        "again returns the first proposal. Needs the vera:propose scope.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def propose(
        subject: Annotated[
            str, Field(min_length=1, max_length=MAX_ENTITY_NAME, description="what it is about")
        ],
        predicate: Annotated[str, Field(min_length=1, max_length=100, description="e.g. RUNS_ON")],
        object: Annotated[
            str, Field(min_length=1, max_length=MAX_ENTITY_NAME, description="the value")
        ],
        evidence: Annotated[
            str, Field(min_length=1, max_length=MAX_EVIDENCE, description="the text that states it")
        ],
        source_url: Annotated[str, Field(max_length=MAX_URL, description="where it was read")] = "",
        scope: Annotated[
            str | None,
            Field(description="the workspace (group id) to propose to, when you have several"),
        ] = None,
    ) -> dict[str, Any]:
        return await _call(
            tools.propose, subject=subject, predicate=predicate, object=object,
            evidence=evidence, source_url=source_url, scope=scope,
        )  # fmt: skip

    @server.tool(
        description="Say whether a search hit helped (hit_id from `search`). Votes tune "
        "VERA's ranking.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def feedback(hit_id: Annotated[int, Field(ge=1)], helpful: bool) -> dict[str, Any]:
        return await _call(tools.feedback, hit_id=hit_id, helpful=helpful)

    return server


def _origin() -> str:
    parsed = urlparse(settings.VERA_MCP__RESOURCE_URL)
    return f"{parsed.scheme}://{parsed.netloc}"


LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def transport_security() -> TransportSecuritySettings:
    """Host and Origin headers answered (VERA_MCP__ALLOWED_*; default: the resource URL's,
    and for a loopback URL every loopback name with its port)."""
    parsed = urlparse(settings.VERA_MCP__RESOURCE_URL)
    hosts, origins = [parsed.netloc], [_origin()]
    if parsed.hostname in {"127.0.0.1", "localhost", "::1"}:
        port = f":{parsed.port}" if parsed.port else ""
        hosts = [f"{name}{port}" for name in LOOPBACK]
        origins = [f"{parsed.scheme}://{host}" for host in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=settings.VERA_MCP__ALLOWED_HOSTS or hosts,
        allowed_origins=settings.VERA_MCP__ALLOWED_ORIGINS or origins,
    )


def resource_metadata() -> dict[str, Any]:
    """RFC 9728 protected-resource metadata: this resource, who issues its tokens, scopes."""
    metadata: dict[str, Any] = {
        "resource": settings.VERA_MCP__RESOURCE_URL,
        "scopes_supported": list(auth.SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "VERA",
    }
    if settings.VERA_MCP__AUTHORIZATION_SERVERS:
        metadata["authorization_servers"] = list(settings.VERA_MCP__AUTHORIZATION_SERVERS)
    return metadata


async def _metadata(request: Request) -> Response:
    return JSONResponse(resource_metadata(), headers={"Cache-Control": "public, max-age=3600"})


def _health() -> dict[str, Any]:
    close_old_connections()
    try:
        checks = check_all()
    finally:
        close_old_connections()
    failing, degraded = verdict(checks)
    status = "fail" if failing else "degraded" if degraded else "ok"
    return {"status": status, "failing": failing, "degraded": degraded, "checks": checks}


async def _healthz(request: Request) -> Response:
    """What web's /healthz says, for this process: 503 only when Postgres does not answer
    (no tool can work); a graph, Redis or object store outage is "degraded", named."""
    report = await anyio.to_thread.run_sync(_health)
    return JSONResponse(report, status_code=503 if report["failing"] else 200)


class FailedAuthentications:
    """REST's failed-authentication limit (`FailureLimiter`) on the MCP endpoint too: each
    401 counts against the client's address and, for a `vera_` key, its prefix; past
    either limit the 401 becomes a 429. A credential that verifies never meets it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ip = (scope.get("client") or ("unknown",))[0]
        headers = dict(scope.get("headers") or [])
        offered = headers.get(b"authorization", b"").decode("latin-1").partition(" ")[2]
        parsed = api_keys.parse(offered.strip())
        prefix = parsed[0] if parsed else None

        async def answer(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                refusal = await anyio.to_thread.run_sync(_failed, ip, prefix)
                if refusal is not None:
                    body = json.dumps({"error": "too_many_requests", "error_description":
                                       str(refusal.detail)}).encode()  # fmt: skip
                    await send({"type": "http.response.start", "status": 429, "headers": [
                        (b"content-type", b"application/json"),
                        (b"retry-after", str(settings.VERA_AUTH_FAILURE__WINDOW_S).encode()),
                        (b"content-length", str(len(body)).encode()),
                    ]})  # fmt: skip
                    await send({"type": "http.response.body", "body": body})
                    raise _Answered
            await send(message)

        try:
            await self.app(scope, receive, answer)
        except _Answered:
            return


class HostAndOriginFirst:
    """The Host and Origin checks (DNS rebinding) before anything else, credentials
    included: a request for another host is answered 421 (a foreign Origin 403) whether
    or not it carries a token, so a refusal never says whether a credential was good.
    `/healthz` is left to probes, which name the pod rather than the service."""

    def __init__(self, app: Any, security: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") != "/healthz":
            refusal = await self.check.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _Answered(Exception):
    """The 401 was replaced by a 429: the rest of the original response is dropped."""


def _failed(ip: str, prefix: str | None) -> Throttled | None:
    error = FailureLimiter().failed(ip=ip, prefix=prefix)
    return error if isinstance(error, Throttled) else None


METADATA_PATH = "/.well-known/oauth-protected-resource"


def build_app() -> Starlette:
    """The ASGI app: `/mcp`, its metadata (path-suffixed and root forms) and `/healthz`."""
    server = build_server()
    security = transport_security()
    app = server.streamable_http_app(
        streamable_http_path=urlparse(settings.VERA_MCP__RESOURCE_URL).path or "/mcp",
        transport_security=security,
    )
    path = urlparse(settings.VERA_MCP__RESOURCE_URL).path
    # VERA serves the metadata itself, so it names every configured authorization server
    # (or none, when only API keys are accepted) rather than the SDK's single issuer.
    app.router.routes[:] = [
        route
        for route in app.router.routes
        if not getattr(route, "path", "").startswith(METADATA_PATH)
    ]
    for where in dict.fromkeys([METADATA_PATH + path, METADATA_PATH]):
        app.router.routes.append(Route(where, _metadata, methods=["GET"]))
    app.router.routes.append(Route("/healthz", _healthz, methods=["GET"]))
    app.add_middleware(FailedAuthentications)
    app.add_middleware(HostAndOriginFirst, security=security)  # the outermost: first
    return app
