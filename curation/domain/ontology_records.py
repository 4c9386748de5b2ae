"""The ontology as stored and audited: a sense as a plain record, and what an edit changed.

A workspace's own senses are rows (one per predicate); every edit also keeps the whole
ontology as it then was, as records, so a snapshot pinning that version reads it back
exactly. Both use the records below; the bounds here are the columns' (a name, an object
type), beyond what `sense_refusal` asks of any sense.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from curation.domain.ontology import Ontology, PredicateSense, sense_refusal
from curation.domain.records import PREDICATE_PATTERN

MAX_NAME = 100  # characters of a predicate's name (Claim.predicate's column)
MAX_OBJECT_TYPE = 50  # characters of an object type (Entity.entity_type's column)
MAX_DESCRIPTION = 2000  # characters of a description
# What an admin edits, in the order the audit trail names it.
SENSE_FIELDS = ("label", "description", "words", "questions", "object_type", "functional")


def name_refusal(name: str) -> str:
    """Why `name` names no predicate that can be stored ("" when it does)."""
    if not PREDICATE_PATTERN.match(name):
        return f"name {name!r} must be UPPER_SNAKE_CASE, like RUNS_ON"
    if len(name) > MAX_NAME:
        return f"name must be at most {MAX_NAME} characters"
    return ""


def stored_refusal(sense: PredicateSense) -> str:
    """Why the sense cannot be stored ("" when it can): `sense_refusal`, then the columns."""
    if reason := sense_refusal(sense) or name_refusal(sense.name):
        return reason
    if len(sense.description) > MAX_DESCRIPTION:
        return f"description must be at most {MAX_DESCRIPTION} characters"
    if len(sense.object_type) > MAX_OBJECT_TYPE:
        return f"object_type must be at most {MAX_OBJECT_TYPE} characters"
    return ""


def sense_record(sense: PredicateSense) -> dict[str, Any]:
    """The sense as JSON-ready values (lists for the tuples)."""
    return {
        "name": sense.name,
        "label": sense.label,
        "description": sense.description,
        "words": list(sense.words),
        "questions": list(sense.questions),
        "object_type": sense.object_type,
        "functional": sense.functional,
    }


def sense_of(record: Mapping[str, Any]) -> PredicateSense:
    """The sense a record holds (ValueError, naming the field, when it is not one)."""
    return PredicateSense(
        name=str(record["name"]),
        label=str(record["label"]),
        description=str(record.get("description") or ""),
        words=tuple(str(word) for word in record.get("words") or ()),
        questions=tuple(str(question) for question in record.get("questions") or ()),
        object_type=str(record.get("object_type") or ""),
        functional=bool(record.get("functional", False)),
    )


def ontology_records(ontology: Ontology) -> list[dict[str, Any]]:
    """Every sense of the ontology as a record, by name (a stable order to store)."""
    return [sense_record(ontology.senses[name]) for name in sorted(ontology.senses)]


def ontology_of(records: Iterable[Mapping[str, Any]], *, version: int) -> Ontology:
    """The ontology these records make, at `version` (the inverse of `ontology_records`)."""
    senses = [sense_of(record) for record in records]
    return Ontology(senses={sense.name: sense for sense in senses}, version=version)


def changed_fields(before: PredicateSense | None, after: PredicateSense | None) -> list[str]:
    """The fields an edit changes, in SENSE_FIELDS order; all of them when one side is none."""
    if before is None or after is None:
        return [] if before is after else list(SENSE_FIELDS)
    return [name for name in SENSE_FIELDS if getattr(before, name) != getattr(after, name)]
