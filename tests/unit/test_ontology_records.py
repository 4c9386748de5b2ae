"""The ontology as stored: records round-trip, the columns' bounds, what an edit changed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curation.domain.ontology import DEFAULT_ONTOLOGY, ENTITY_SLOT, MAX_TEXT, PredicateSense
from curation.domain.ontology_records import (
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_OBJECT_TYPE,
    SENSE_FIELDS,
    changed_fields,
    name_refusal,
    ontology_of,
    ontology_records,
    sense_of,
    sense_record,
    stored_refusal,
)
from kernel.names import name_refusal as display_name_refusal

RUNS_ON = DEFAULT_ONTOLOGY.senses["RUNS_ON"]

_entry = st.text(min_size=1, max_size=MAX_TEXT).filter(str.strip)
senses = st.builds(
    PredicateSense,
    name=st.from_regex(r"\A[A-Z][A-Z0-9]{0,8}(_[A-Z0-9]{1,8}){0,3}\Z"),
    label=_entry.filter(lambda label: not display_name_refusal(label)),  # a label is a name
    description=st.text(max_size=50),
    words=st.lists(_entry, max_size=5).map(tuple),
    questions=st.lists(_entry.map(lambda text: f"{text} {ENTITY_SLOT}"), max_size=5).map(tuple),
    object_type=st.text(max_size=MAX_OBJECT_TYPE),
    functional=st.booleans(),
)


@given(senses)
def test_a_sense_survives_its_record_through_json(sense: PredicateSense) -> None:
    assert sense_of(json.loads(json.dumps(sense_record(sense)))) == sense


def test_an_ontology_survives_its_records_at_its_version() -> None:
    edited = DEFAULT_ONTOLOGY.overridden([replace(RUNS_ON, label="is served from")], version=3)
    records = json.loads(json.dumps(ontology_records(edited)))
    assert [record["name"] for record in records] == sorted(edited.senses)
    assert ontology_of(records, version=3) == edited


def test_a_record_the_rules_refuse_is_a_value_error_naming_the_field() -> None:
    record = {**sense_record(RUNS_ON), "questions": ["where does it run"]}
    with pytest.raises(ValueError, match="question form"):
        sense_of(record)


def test_a_record_may_leave_out_what_has_a_default() -> None:
    assert sense_of({"name": "PAGED_BY", "label": "is paged by"}) == PredicateSense(
        name="PAGED_BY", label="is paged by"
    )


def test_a_default_sense_can_be_stored() -> None:
    assert all(stored_refusal(sense) == "" for sense in DEFAULT_ONTOLOGY.senses.values())


@pytest.mark.parametrize(
    ("field", "bound", "filler"),
    [("name", MAX_NAME, "R"), ("description", MAX_DESCRIPTION, "d"),
     ("object_type", MAX_OBJECT_TYPE, "t")],
)  # fmt: skip
def test_a_sense_longer_than_its_column_is_refused_naming_the_field(
    field: str, bound: int, filler: str
) -> None:
    too_long = replace(RUNS_ON, **{field: filler * (bound + 1)})
    assert stored_refusal(too_long) == f"{field} must be at most {bound} characters"
    assert stored_refusal(replace(RUNS_ON, **{field: filler * bound})) == ""


def test_a_name_is_refused_when_not_upper_snake_case() -> None:
    assert "UPPER_SNAKE_CASE" in name_refusal("runs_on")
    assert name_refusal("RUNS_ON") == ""


def test_an_edit_names_only_the_fields_it_changes_in_their_order() -> None:
    edited = replace(RUNS_ON, functional=not RUNS_ON.functional, words=("served",), label="x")
    assert changed_fields(RUNS_ON, edited) == ["label", "words", "functional"]
    assert changed_fields(RUNS_ON, RUNS_ON) == []


def test_an_edit_that_adds_or_removes_a_predicate_changes_every_field() -> None:
    assert changed_fields(None, RUNS_ON) == list(SENSE_FIELDS)
    assert changed_fields(RUNS_ON, None) == list(SENSE_FIELDS)
    assert changed_fields(None, None) == []
