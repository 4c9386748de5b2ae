"""What a bearer token's claims grant over MCP: scopes, the role they cap at, audience."""

from __future__ import annotations

from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from vera.mcp.auth import audience_matches, key_scopes, scope_ceiling, token_scopes


def test_scopes_are_read_from_the_scope_string_or_the_scp_list() -> None:
    assert token_scopes({"scope": "openid vera:read email"}) == ["vera:read"]
    assert token_scopes({"scp": ["vera:propose", "vera:read"]}) == ["vera:read", "vera:propose"]
    assert token_scopes({"scope": "openid"}) == []
    assert token_scopes({"scope": 42}) == []


def test_propose_acts_as_a_contributor_and_read_as_a_viewer() -> None:
    assert scope_ceiling(["vera:read"]) == Role.VIEWER
    assert scope_ceiling(["vera:read", "vera:propose"]) == Role.CONTRIBUTOR
    assert scope_ceiling([]) is None


def test_a_key_may_propose_only_where_it_reaches_contributor() -> None:
    viewer = Principal(label="k", roles={"w:1": Role.VIEWER})
    contributor = Principal(label="k", roles={"w:1": Role.CONTRIBUTOR, "w:2": Role.VIEWER})
    assert key_scopes(viewer) == ["vera:read"]
    assert key_scopes(contributor) == ["vera:read", "vera:propose"]
    assert key_scopes(Principal(label="k")) == []


def test_the_audience_must_name_this_server() -> None:
    here = "https://vera.example/mcp"
    assert audience_matches({"aud": here}, here)
    assert audience_matches({"aud": ["vera-api", here + "/"]}, here)
    assert not audience_matches({"aud": "vera-api"}, here)
    assert not audience_matches({"aud": "https://vera.example/mcp-other"}, here)
    assert not audience_matches({}, here)
