"""build_connector: the right adapter per kind, clear errors for bad configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from curation.adapters.connectors import (
    CmdbExportConnector,
    ConfluenceConnector,
    JiraConnector,
    MarkdownFolderConnector,
    SlackConnector,
    build_connector,
)
from curation.domain.source_policy import SourcePolicy

TOKEN = "factory-token"
# Wide enough for every config below: these tests are about building, not the policy.
POLICY = SourcePolicy(
    token_env_prefix="VERA_SOURCE_SECRET__",
    allowed_hosts=("*.atlassian.net", "x.example", "slack.com", "slack.example"),
    # pytest's tmp_path lives here (tests/conftest.py), never in the temp folder.
    file_roots=("/srv", "/x.csv", str(settings.TEST_SOURCES_DIR)),
)


def _build(kind: str, config: dict[str, Any], *, secret: str | None) -> Any:
    return build_connector(kind, config, secret=secret, policy=POLICY)


@pytest.mark.parametrize(
    ("kind", "config", "expected"),
    [
        ("markdown", {"root": "/srv/docs", "patterns": ["**/*.md"]}, MarkdownFolderConnector),
        ("cmdb", {"path": "/srv/cmdb.csv", "id_field": "ci"}, CmdbExportConnector),
        (
            "confluence",
            {"base_url": "https://x.atlassian.net", "space": "OPS"},
            ConfluenceConnector,
        ),
        (
            "jira",
            {"base_url": "https://x.atlassian.net", "timezone": "Asia/Ho_Chi_Minh"},
            JiraConnector,
        ),
        ("slack", {"channel": "C0OPS", "page_size": 100}, SlackConnector),
    ],
)
def test_each_kind_builds_its_connector_when_configured(
    kind: str, config: dict[str, Any], expected: type
) -> None:
    connector = _build(kind, config, secret=TOKEN)
    assert isinstance(connector, expected)
    assert connector.kind == kind


def test_file_kinds_need_no_secret_when_built(tmp_path: Path) -> None:
    connector = _build("markdown", {"root": str(tmp_path)}, secret=None)
    assert connector.kind == "markdown"


def test_unknown_kind_raises_listing_the_known_ones_when_requested() -> None:
    with pytest.raises(
        ValueError, match="unknown connector kind 'sharepoint'; expected one of: markdown"
    ):
        _build("sharepoint", {}, secret=None)


@pytest.mark.parametrize(
    ("kind", "config", "missing"),
    [
        ("markdown", {}, "root"),
        ("cmdb", {"path": ""}, "path"),
        ("confluence", {"space": "OPS"}, "base_url"),
        ("jira", {}, "base_url"),
        ("slack", {"base_url": "https://slack.example/api"}, "channel"),
    ],
)
def test_missing_required_key_raises_naming_it_when_absent_or_empty(
    kind: str, config: dict[str, Any], missing: str
) -> None:
    with pytest.raises(
        ValueError, match=f"the {kind} connector needs config key\\(s\\): {missing}"
    ):
        _build(kind, config, secret=TOKEN)


@pytest.mark.parametrize("kind", ["confluence", "jira", "slack"])
@pytest.mark.parametrize("secret", [None, ""])
def test_http_kind_raises_when_no_token_is_given(kind: str, secret: str | None) -> None:
    config = {"channel": "C1"} if kind == "slack" else {"base_url": "https://x.example"}
    with pytest.raises(ValueError, match=f"the {kind} connector needs a token"):
        _build(kind, config, secret=secret)


def test_unknown_key_raises_with_the_expected_ones_when_misspelt() -> None:
    with pytest.raises(
        ValueError, match=r"unknown jira config key\(s\): jqll \(expected: base_url, jql"
    ):
        _build("jira", {"base_url": "https://x.example", "jqll": "x"}, secret=TOKEN)


@pytest.mark.parametrize("page_size", ["50", True, 2.5])
def test_wrong_type_raises_when_page_size_is_not_an_integer(page_size: object) -> None:
    with pytest.raises(ValueError, match="'page_size' has the wrong type"):
        _build("slack", {"channel": "C1", "page_size": page_size}, secret=TOKEN)


def test_nonpositive_page_size_raises_when_configured() -> None:
    with pytest.raises(ValueError, match="page_size must be at least 1"):
        _build("cmdb", {"path": "/x.csv", "page_size": 0}, secret=None)


def test_unknown_time_zone_raises_when_configured() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        _build(
            "confluence",
            {"base_url": "https://x.example", "timezone": "Mars/Olympus"},
            secret=TOKEN,
        )


def test_token_is_kept_out_of_the_repr_when_a_connector_is_printed() -> None:
    connector = _build("jira", {"base_url": "https://x.example"}, secret=TOKEN)
    assert TOKEN not in repr(connector)
