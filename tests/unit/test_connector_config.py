"""config_refusal: the per-kind config rules a source is checked with at save and at run."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

from curation.domain.connector_config import (
    KINDS,
    MAX_BYTES_CAP,
    PAGE_SIZE_CAPS,
    config_refusal,
    kind_rules,
    time_zone,
)
from curation.domain.sources import ConnectorKind

# The smallest valid config of each kind; tests add one key to it.
MINIMAL: dict[str, dict[str, Any]] = {
    "markdown": {"root": "/srv/docs"},
    "cmdb": {"path": "/srv/cmdb.csv"},
    "confluence": {"base_url": "https://x.atlassian.net"},
    "jira": {"base_url": "https://x.atlassian.net"},
    "slack": {"channel": "C0OPS"},
}


def _refusal(kind: str, **extra: Any) -> str:
    return config_refusal(kind, {**MINIMAL[kind], **extra})


def test_every_kind_has_rules_and_a_page_size_cap_when_listed() -> None:
    assert set(KINDS) == set(ConnectorKind) == set(PAGE_SIZE_CAPS)


@pytest.mark.parametrize("kind", list(MINIMAL))
def test_minimal_config_is_accepted_when_only_required_keys_are_set(kind: str) -> None:
    assert _refusal(kind) == ""


def test_unknown_kind_is_refused_when_checked() -> None:
    assert "unknown connector kind 'sharepoint'" in config_refusal("sharepoint", {})


def test_non_object_config_is_refused_when_checked() -> None:
    assert config_refusal("jira", ["base_url"]) == "config must be a JSON object"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "key"),
    [("markdown", "root"), ("cmdb", "path"), ("confluence", "base_url"), ("slack", "channel")],
)
def test_missing_required_key_is_named_when_absent(kind: str, key: str) -> None:
    assert config_refusal(kind, {}) == f"the {kind} connector needs config key(s): {key}"


def test_required_key_is_missing_when_empty() -> None:
    assert "needs config key(s): channel" in config_refusal("slack", {"channel": ""})


def test_required_string_is_refused_when_blank() -> None:
    assert _refusal("slack", channel="   ") == "the slack config's channel must not be blank"


def test_unknown_key_is_refused_naming_the_expected_ones_when_misspelt() -> None:
    assert _refusal("jira", jqll="x") == (
        "unknown jira config key(s): jqll (expected: base_url, jql, page_size, timezone, "
        "valid_from_field, valid_to_field)"
    )


def test_unknown_keys_are_cut_short_when_there_are_many() -> None:
    extra = {f"k{n}": 1 for n in range(10)}
    assert "k0, k1, k2, k3, k4, ... (expected:" in _refusal("cmdb", **extra)


@pytest.mark.parametrize("value", [True, False])
def test_bool_is_refused_when_an_integer_is_expected(value: bool) -> None:
    assert "'page_size' has the wrong type" in _refusal("cmdb", page_size=value)


@pytest.mark.parametrize("value", ["50", 2.5, None])
def test_page_size_is_refused_when_not_an_integer(value: object) -> None:
    assert "'page_size' has the wrong type" in _refusal("slack", page_size=value)


@pytest.mark.parametrize("value", [0, -5])
def test_page_size_is_refused_when_below_one(value: int) -> None:
    assert "the cmdb config's page_size must be at least 1 and at most 1000" in _refusal(
        "cmdb", page_size=value
    )


@pytest.mark.parametrize("kind", list(MINIMAL))
def test_page_size_is_accepted_when_at_its_kinds_cap(kind: str) -> None:
    assert _refusal(kind, page_size=PAGE_SIZE_CAPS[ConnectorKind(kind)]) == ""


@pytest.mark.parametrize("kind", list(MINIMAL))
def test_page_size_is_refused_when_above_its_kinds_cap(kind: str) -> None:
    cap = PAGE_SIZE_CAPS[ConnectorKind(kind)]
    assert f"page_size must be at least 1 and at most {cap}, not {cap + 1}" in _refusal(
        kind, page_size=cap + 1
    )


def test_page_size_cap_is_the_upstreams_when_the_kind_is_jira() -> None:
    assert "at most 100" in _refusal("jira", page_size=500)


def test_max_bytes_is_refused_when_zero() -> None:
    assert "max_bytes must be at least 1" in _refusal("markdown", max_bytes=0)


def test_max_bytes_is_refused_naming_the_cap_when_unbounded() -> None:
    reason = _refusal("markdown", max_bytes=10**12)
    assert f"max_bytes must be at least 1 and at most {MAX_BYTES_CAP} bytes (50 MiB)" in reason


def test_max_bytes_is_accepted_when_at_the_cap() -> None:
    assert _refusal("markdown", max_bytes=MAX_BYTES_CAP) == ""


@pytest.mark.parametrize("zone", ["Europe/Paris", "Asia/Ho_Chi_Minh", "UTC"])
def test_timezone_is_accepted_when_it_is_an_iana_zone(zone: str) -> None:
    assert _refusal("jira", timezone=zone) == ""


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "", "utc", "Europe", "/etc/localtime", "../etc/passwd", "localtime"]
)
def test_timezone_is_refused_naming_the_key_when_not_a_zone(zone: str) -> None:
    assert _refusal("confluence", timezone=zone).startswith(
        f"the confluence config's timezone names an unknown time zone {zone!r}"
    )


def test_time_zone_gives_the_zone_when_named() -> None:
    assert str(time_zone("Asia/Ho_Chi_Minh")) == "Asia/Ho_Chi_Minh"


def test_time_zone_raises_when_unknown() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        time_zone("Mars/Olympus")


def test_patterns_are_accepted_when_relative_globs() -> None:
    assert _refusal("markdown", patterns=["**/*.md", "notes/*.txt"]) == ""


def test_patterns_are_accepted_when_a_tuple() -> None:
    assert _refusal("markdown", patterns=("*.md",)) == ""


def test_patterns_are_refused_when_empty() -> None:
    assert "patterns must list at least one glob pattern" in _refusal("markdown", patterns=[])


@pytest.mark.parametrize("pattern", ["", "  ", 7, None])
def test_patterns_are_refused_when_one_is_not_a_non_empty_string(pattern: object) -> None:
    assert "patterns must hold non-empty strings" in _refusal("markdown", patterns=[pattern])


def test_patterns_are_refused_when_one_is_absolute() -> None:
    assert "not absolute" in _refusal("markdown", patterns=["/etc/*.conf"])


@pytest.mark.parametrize("pattern", ["../*.md", "docs/../../*", ".."])
def test_patterns_are_refused_when_one_climbs_out(pattern: str) -> None:
    assert "may not climb out of the folder" in _refusal("markdown", patterns=[pattern])


def test_patterns_are_refused_when_a_string_instead_of_a_list() -> None:
    assert "'patterns' has the wrong type" in _refusal("markdown", patterns="*.md")


def test_jql_is_refused_when_it_sets_the_order() -> None:
    assert "jql must not have ORDER BY" in _refusal("jira", jql="project = OPS order by key")


def test_optional_string_is_refused_when_blank_and_blank_means_nothing() -> None:
    assert _refusal("slack", base_url="") == "the slack config's base_url must not be blank"


def test_optional_string_is_accepted_when_empty_means_none() -> None:
    assert _refusal("confluence", space="") == ""


def test_path_is_accepted_when_given_as_a_path_object() -> None:
    assert config_refusal("markdown", {"root": PurePosixPath("/srv/docs")}) == ""


def test_long_value_is_cut_short_when_repeated_in_a_message() -> None:
    reason = _refusal("jira", timezone="x" * 10_000)
    assert len(reason) < 200


@pytest.mark.parametrize(
    ("kind", "needs"),
    [("markdown", False), ("cmdb", False), ("confluence", True), ("jira", True), ("slack", True)],
)
def test_token_is_needed_when_the_kind_calls_an_api(kind: str, needs: bool) -> None:
    rules = kind_rules(kind)
    assert rules is not None
    assert rules.needs_token is needs
