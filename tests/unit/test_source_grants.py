"""The pure rules behind a source's secret grants, denied paths and the servers' own ports."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from hypothesis import given
from hypothesis import strategies as st

from curation.domain.source_policy import (
    SourcePolicy,
    denied_refusal,
    endpoint_refusal,
    file_refusal,
    secret_grant_refusal,
    token_env_refusal,
)
from vera.settings.env import env_list_map

PREFIX = "VERA_SOURCE_SECRET__"
WIKI = f"{PREFIX}WIKI"


def _policy(**grants: tuple[str, ...]) -> SourcePolicy:
    return SourcePolicy(PREFIX, secret_scopes={f"{PREFIX}{k}": v for k, v in grants.items()})


def test_an_old_flat_secret_name_is_refused_saying_its_new_name() -> None:
    reason = token_env_refusal("VERA_SOURCE_SECRET_WIKI", prefix=PREFIX)
    assert reason.endswith("; the variable's name is now VERA_SOURCE_SECRET__WIKI")
    assert "now" not in token_env_refusal("DATABASE_URL", prefix=PREFIX)
    assert "now" not in token_env_refusal("ACME_WIKI", prefix="ACME_TOKEN_")  # no "__" prefix
    assert token_env_refusal(WIKI, prefix=PREFIX) == ""


def test_a_secret_is_usable_when_given_to_the_scope() -> None:
    assert secret_grant_refusal(WIKI, ["w:1", "o:1"], _policy(WIKI=("w:1",))) == ""


def test_a_secret_is_usable_when_given_to_an_ancestor() -> None:
    assert secret_grant_refusal(WIKI, ["p:1", "w:1", "o:1"], _policy(WIKI=("o:1",))) == ""


def test_a_secret_is_refused_naming_the_setting_when_given_to_a_sibling() -> None:
    reason = secret_grant_refusal(WIKI, ["w:2", "o:1"], _policy(WIKI=("w:1",)))
    assert reason.startswith(f"token_env {WIKI!r} is not given to w:2")
    assert "VERA_SOURCES__SECRET_SCOPES" in reason


def test_a_secret_is_refused_when_given_to_nobody() -> None:
    assert secret_grant_refusal(WIKI, ["w:1"], _policy()) != ""


def test_no_secret_needs_no_grant() -> None:
    assert secret_grant_refusal("", ["w:1"], _policy()) == ""


def test_a_grant_of_a_variable_outside_the_prefix_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="VERA_SOURCES__SECRET_SCOPES"):
        SourcePolicy(PREFIX, secret_scopes={"DATABASE_URL": ("w:1",)})


@pytest.mark.parametrize(
    ("path", "refused"),
    [("/srv/state", True), ("/srv/state/pg/secrets.json", True), ("/srv/state/../state/x", True),
     ("/srv/stateful/x", False), ("/srv/docs/x.md", False)],
)  # fmt: skip
def test_denied_paths_cover_their_subtree_only(path: str, refused: bool) -> None:
    assert bool(denied_refusal(path, ["/srv/state"])) is refused


def test_a_denied_path_is_refused_when_below_an_allowed_root() -> None:
    reason = file_refusal("/srv/state/secrets.json", ["/srv"], denied=["/srv/state"])
    assert "own state or secrets" in reason


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1", "[::1]"])
def test_a_loopback_service_port_is_refused_on_every_loopback_address(address: str) -> None:
    assert "own services" in endpoint_refusal(address, 5432, [("127.0.0.1", 5432)])


def test_another_port_of_the_same_host_is_not_a_service() -> None:
    assert endpoint_refusal("127.0.0.1", 8080, [("127.0.0.1", 5432)]) == ""


def test_a_remote_service_is_refused_only_at_its_own_address() -> None:
    denied = [("10.0.0.5", 6379)]
    assert endpoint_refusal("10.0.0.5", 6379, denied) != ""
    assert endpoint_refusal("10.0.0.6", 6379, denied) == ""


@given(st.integers(min_value=1, max_value=65535), st.integers(min_value=1, max_value=65535))
def test_a_port_is_refused_exactly_when_it_is_a_services(port: int, service: int) -> None:
    refused = endpoint_refusal("127.0.0.1", port, [("127.0.0.1", service)]) != ""
    assert refused is (port == service)


def test_secret_scopes_are_read_from_their_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_GRANTS", f" {WIKI}=w:1, o:2 ;{PREFIX}JIRA=w:3;")
    assert env_list_map("X_GRANTS") == {WIKI: ["w:1", "o:2"], f"{PREFIX}JIRA": ["w:3"]}


@pytest.mark.parametrize("value", ["NAME", "NAME=", "=w:1"])
def test_a_malformed_grant_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("X_GRANTS", value)
    with pytest.raises(ImproperlyConfigured, match="X_GRANTS"):
        env_list_map("X_GRANTS")
