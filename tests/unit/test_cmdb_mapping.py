"""A CMDB source's own columns over the default mapping, checked at save (pure, no database)."""

from __future__ import annotations

from typing import Any

import pytest

from curation.domain.connector_config import MAX_MAPPED_COLUMNS, config_refusal
from curation.domain.extraction.structured import (
    DEFAULT_CMDB_MAPPING,
    StructuredExtractor,
    cmdb_mapping,
    structured_subject,
)
from curation.domain.records import SourceRecord

# --- the merge ------------------------------------------------------------------------------


def test_defaults_are_the_mapping_when_the_source_maps_nothing() -> None:
    assert cmdb_mapping(None) == dict(DEFAULT_CMDB_MAPPING)


def test_a_new_column_is_added_when_the_source_maps_it() -> None:
    assert cmdb_mapping({"runtime_host": "RUNS_ON"})["runtime_host"] == "RUNS_ON"


def test_defaults_are_kept_when_the_source_adds_a_column() -> None:
    assert cmdb_mapping({"runtime_host": "RUNS_ON"})["owner"] == "OWNED_BY"


def test_a_default_column_is_remapped_when_the_source_maps_it_anew() -> None:
    assert cmdb_mapping({"team": "MAINTAINED_BY"})["team"] == "MAINTAINED_BY"


def test_a_column_is_dropped_when_the_source_maps_it_to_nothing() -> None:
    assert "team" not in cmdb_mapping({"team": ""})


def test_columns_match_in_any_case_when_the_source_names_them() -> None:
    assert "host" not in cmdb_mapping({" Host ": ""})


# --- extraction with the merged mapping ----------------------------------------------------------


def _claims(fields: dict[str, Any], overrides: dict[str, str]) -> set[tuple[str, str, str]]:
    record = SourceRecord(external_id="CI1", content=b"{}", mime="application/json", fields=fields)
    extractor = StructuredExtractor(mapping=cmdb_mapping(overrides))
    return {
        (c.subject, c.predicate, c.object_name or c.object_literal or "")
        for c in extractor.extract(record, "")
    }


def test_a_custom_column_gives_claims_when_the_source_maps_it() -> None:
    claims = _claims(
        {"name": "billing-api", "Runtime_Host": "k8s-prod-1"}, {"runtime_host": "RUNS_ON"}
    )
    assert claims == {("billing-api", "RUNS_ON", "k8s-prod-1")}


def test_a_dropped_column_gives_no_claim_when_the_source_maps_it_to_nothing() -> None:
    claims = _claims({"name": "billing-api", "team": "Payments", "owner": "Ops"}, {"team": ""})
    assert claims == {("billing-api", "OWNED_BY", "Ops")}


# --- the item a record describes -----------------------------------------------------------------


def test_the_item_is_named_as_its_claims_name_it_when_the_record_is_a_ci() -> None:
    fields = {"Name": "billing-api", "Class": "Business Service", "host": "x"}
    record = SourceRecord(external_id="CI1", content=b"{}", mime="application/json", fields=fields)
    (claim,) = StructuredExtractor().extract(record, "")
    assert structured_subject(record) == (claim.subject, claim.subject_type)


def test_the_item_is_the_issue_key_when_the_record_is_a_jira_issue() -> None:
    fields = {"key": "PAY-12", "fields": {"issuetype": {"name": "Bug"}}}
    record = SourceRecord(
        external_id="PAY-12", content=b"{}", mime="application/json", fields=fields
    )
    assert structured_subject(record) == ("PAY-12", "issue")


def test_no_item_when_the_record_has_no_fields() -> None:
    record = SourceRecord(external_id="a.md", content=b"x", mime="text/markdown")
    assert structured_subject(record) is None


# --- checked at save -----------------------------------------------------------------------------


def _refusal(mapping: Any) -> str:
    return config_refusal("cmdb", {"path": "/srv/cmdb.csv", "mapping": mapping})


def test_mapping_accepted_when_columns_map_to_predicates_or_nothing() -> None:
    assert _refusal({"runtime_host": "RUNS_ON", "team": ""}) == ""


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        pytest.param(["host"], "wrong type", id="not-an-object"),
        pytest.param({"host": "runs on"}, "UPPER_SNAKE", id="lower-case"),
        pytest.param({"host": 7}, "a predicate is a string", id="not-a-string"),
        pytest.param({" ": "RUNS_ON"}, "blank column", id="blank-column"),
        pytest.param({"host": "R" * 101}, "at most 100 characters", id="too-long"),
    ],
)
def test_mapping_refused_naming_the_key_when_an_entry_breaks_a_rule(
    mapping: Any, message: str
) -> None:
    refusal = _refusal(mapping)
    assert "mapping" in refusal
    assert message in refusal


def test_mapping_refused_when_it_maps_too_many_columns() -> None:
    mapping = {f"c{n}": "RUNS_ON" for n in range(MAX_MAPPED_COLUMNS + 1)}
    assert f"at most {MAX_MAPPED_COLUMNS}" in _refusal(mapping)
