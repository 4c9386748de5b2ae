"""Structured records: CMDB configuration items and Jira issues, field by field (pure)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from curation.domain.extraction.base import to_predicate, unique
from curation.domain.records import PREDICATE_PATTERN, ExtractedClaim, SourceRecord
from curation.domain.validtime import field_instant

DEFAULT_CMDB_MAPPING: Mapping[str, str] = {
    "host": "RUNS_ON",
    "runs_on": "RUNS_ON",
    "owner": "OWNED_BY",
    "owned_by": "OWNED_BY",
    "team": "OWNED_BY",
    "environment": "DEPLOYED_TO",
    "depends_on": "DEPENDS_ON",
    "location": "HOSTED_IN",
    "status": "HAS_STATUS",
    "version": "HAS_VERSION",
    "language": "WRITTEN_IN",
}


def cmdb_mapping(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CMDB mapping a source uses: its own columns merged over the defaults.

    Columns are case-insensitive and trimmed; a column mapped to "" is dropped (a default
    column the source does not want read, such as a `team` that is not the owner).
    """
    merged = {key.strip().lower(): predicate for key, predicate in DEFAULT_CMDB_MAPPING.items()}
    for key, predicate in (overrides or {}).items():
        column = key.strip().lower()
        if predicate:
            merged[column] = predicate
        else:
            merged.pop(column, None)
    return merged


# Fields whose values are values, not names of things (a HAS_* predicate is one too).
LITERAL_FIELDS = frozenset(
    {"status", "state", "version", "lifecycle", "operational_status", "ip_address"}
)
_STRUCTURED_CONFIDENCE = 0.95
_MULTI_VALUE_SPLIT = re.compile(r"\s*[,;]\s*")
_NAME_KEYS = ("displayname", "display_name", "name", "value", "key", "id")
_CI_NAME_KEYS = ("name", "id", "sys_id", "ci_id")
_CI_TYPE_KEYS = ("type", "ci_type", "class", "sys_class_name", "category")
_PHRASES = {
    "RUNS_ON": "runs on",
    "OWNED_BY": "is owned by",
    "DEPLOYED_TO": "is deployed to",
    "DEPENDS_ON": "depends on",
    "HOSTED_IN": "is hosted in",
    "HAS_STATUS": "has status",
    "HAS_VERSION": "has version",
    "HAS_TYPE": "is of type",
    "WRITTEN_IN": "is written in",
    "MAINTAINED_BY": "is maintained by",
    "ASSIGNED_TO": "is assigned to",
    "REPORTED_BY": "was reported by",
    "PART_OF": "is part of",
    "AFFECTS": "affects",
    "BLOCKS": "blocks",
    "RELATES_TO": "relates to",
    "DUPLICATES": "duplicates",
    "CLONES": "clones",
    "CAUSES": "causes",
}
_OBJECT_TYPES = {
    "RUNS_ON": "host",
    "OWNED_BY": "team",
    "MAINTAINED_BY": "team",
    "DEPLOYED_TO": "environment",
    "HOSTED_IN": "location",
    "WRITTEN_IN": "language",
}
# Jira: field -> (predicate, object type, is a literal value)
_JIRA_FIELDS = {
    "assignee": ("ASSIGNED_TO", "person", False),
    "reporter": ("REPORTED_BY", "person", False),
    "status": ("HAS_STATUS", "status", True),
    "issuetype": ("HAS_TYPE", "issue_type", True),
    "project": ("PART_OF", "project", False),
    "components": ("AFFECTS", "component", False),
}
# Jira link phrase -> (predicate, reversed: the other issue is the subject)
_LINK_PHRASES = {
    "blocks": ("BLOCKS", False),
    "is blocked by": ("BLOCKS", True),
    "relates to": ("RELATES_TO", False),
    "relates": ("RELATES_TO", False),
    "depends on": ("DEPENDS_ON", False),
    "is depended on by": ("DEPENDS_ON", True),
    "duplicates": ("DUPLICATES", False),
    "is duplicated by": ("DUPLICATES", True),
    "duplicate": ("DUPLICATES", False),
    "clones": ("CLONES", False),
    "is cloned by": ("CLONES", True),
    "cloners": ("CLONES", False),
    "causes": ("CAUSES", False),
    "is caused by": ("CAUSES", True),
}
_SYMMETRIC = frozenset({"RELATES_TO"})


def _lower_keys(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in fields.items()}


def _values(value: Any, *, split: bool) -> list[str]:
    """The non-empty string values of a field: strings, numbers, lists, {"name": ...}."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, Mapping):
        named = _lower_keys(value)
        key = next((key for key in _NAME_KEYS if named.get(key) not in (None, "")), None)
        return [] if key is None else _values(named[key], split=split)
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [text for item in items for text in _values(item, split=split)]
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, str):
        parts = _MULTI_VALUE_SPLIT.split(value) if split else [value]
        return [" ".join(part.split()) for part in parts if part.strip()]
    return []


def _fact(subject: str, predicate: str, obj: str) -> str:
    phrase = _PHRASES.get(predicate, predicate.lower().replace("_", " "))
    return f"{subject} {phrase} {obj}."


def _structured_claim(
    subject: tuple[str, str], predicate: str, obj: tuple[str, str], *, literal: bool
) -> ExtractedClaim:
    """A structured-field claim; subject and obj are (name, type)."""
    return ExtractedClaim(
        subject=subject[0],
        subject_type=subject[1],
        predicate=predicate,
        object_name=None if literal else obj[0],
        object_literal=obj[0] if literal else None,
        object_type=obj[1],
        fact_text=_fact(subject[0], predicate, obj[0]),
        confidence=_STRUCTURED_CONFIDENCE,
    )


def _jira_fields(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """Flat, lower-cased Jira fields (also from the API's {"key", "fields": {...}}), or None."""
    flat = _lower_keys(fields)
    nested = flat.pop("fields", None)
    if isinstance(nested, Mapping):
        flat = {**_lower_keys(nested), **flat}
    return flat if "key" in flat and "issuetype" in flat else None


def _link(link: Any) -> tuple[str, str, bool] | None:
    """(phrase, other issue key, this issue is the phrase's subject) of one issue link."""
    if not isinstance(link, Mapping):
        return None
    fields = _lower_keys(link)
    kind = fields.get("type", fields.get("relation", fields.get("link")))
    kind_fields = _lower_keys(kind) if isinstance(kind, Mapping) else {"name": kind}
    for side, outward in (("outwardissue", True), ("inwardissue", False)):
        if side not in fields:
            continue
        issues = _values(fields[side], split=False)
        phrase = kind_fields.get("outward" if outward else "inward")
        if issues and isinstance(phrase, str) and phrase.strip():
            return phrase, issues[0], True  # Jira's own wording, from this issue's side
        name = kind_fields.get("name")
        return (name, issues[0], outward) if issues and isinstance(name, str) else None
    other = _values(fields.get("key", fields.get("issue", fields.get("target"))), split=False)
    name = kind_fields.get("name")
    return (name, other[0], True) if isinstance(name, str) and other else None


def _link_claim(key: str, link: Any) -> ExtractedClaim | None:
    parsed = _link(link)
    if parsed is None:
        return None
    phrase, other, outward = parsed
    predicate, reverse = _LINK_PHRASES.get(" ".join(phrase.lower().split()), (None, False))
    predicate = predicate or to_predicate(phrase)
    if predicate is None:
        return None
    reverse = reverse != (not outward) and predicate not in _SYMMETRIC
    subject, obj = (other, key) if reverse else (key, other)
    return _structured_claim((subject, "issue"), predicate, (obj, "issue"), literal=False)


def _jira_key(fields: Mapping[str, Any]) -> str | None:
    keys = _values(fields["key"], split=False)
    return keys[0] if keys else None


def _ci_subject(record: SourceRecord, fields: Mapping[str, Any]) -> tuple[str, str]:
    """(name, type) of a configuration item: its name (else its id, else the record's)."""
    names = [value for key in _CI_NAME_KEYS for value in _values(fields.get(key), split=False)]
    subject = names[0] if names else record.title.strip() or record.external_id
    types = [value for key in _CI_TYPE_KEYS for value in _values(fields.get(key), split=False)]
    return subject, "_".join(types[0].lower().split()) if types else "configuration_item"


def structured_subject(record: SourceRecord) -> tuple[str, str] | None:
    """(name, type) of the item a structured record describes, as its claims name it:
    the Jira issue by its key, else the configuration item; None without fields."""
    jira = _jira_fields(record.fields)
    if jira is not None:
        key = _jira_key(jira)
        return None if key is None else (key, "issue")
    fields = _lower_keys(record.fields)
    return _ci_subject(record, fields) if fields else None


def _jira_claims(fields: Mapping[str, Any]) -> Iterator[ExtractedClaim]:
    key = _jira_key(fields)
    if key is None:
        return
    for name, (predicate, object_type, literal) in _JIRA_FIELDS.items():
        for value in _values(fields.get(name), split=False):
            obj = (value, object_type)
            yield _structured_claim((key, "issue"), predicate, obj, literal=literal)
    links = fields.get("issuelinks", fields.get("links"))
    for link in links if isinstance(links, list | tuple) else []:
        if (claim := _link_claim(key, link)) is not None:
            yield claim


# Bump when a change to the structured rules (CMDB columns, Jira fields) changes what
# is extracted from records already stored.
STRUCTURED_VERSION = 1


class StructuredExtractor:
    """Extractor for structured records: CMDB configuration items and Jira issues.

    `mapping` (field -> predicate, keys case-insensitive) replaces the default CMDB
    mapping (`cmdb_mapping` merges a source's own columns over it); Jira issues (fields
    with "key" and "issuetype") use fixed Jira rules.
    """

    def __init__(
        self,
        *,
        mapping: Mapping[str, str] | None = None,
        valid_from_field: str | None = None,
        valid_to_field: str | None = None,
    ) -> None:
        source = DEFAULT_CMDB_MAPPING if mapping is None else mapping
        for predicate in source.values():
            if not PREDICATE_PATTERN.match(predicate):
                raise ValueError(f"predicate {predicate!r} is not UPPER_SNAKE")
        self.mapping = {key.strip().lower(): predicate for key, predicate in source.items()}
        self.valid_from_field = (valid_from_field or "").strip().lower() or None
        self.valid_to_field = (valid_to_field or "").strip().lower() or None

    @property
    def version(self) -> str:
        """The rules' version and a digest of this source's mapping and validity fields."""
        configured = json.dumps(
            [sorted(self.mapping.items()), self.valid_from_field, self.valid_to_field]
        )
        digest = hashlib.sha256(configured.encode()).hexdigest()[:12]
        return f"structured/{STRUCTURED_VERSION}/mapping-{digest}"

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        jira = _jira_fields(record.fields)
        if jira is not None:
            claims = unique(_jira_claims(jira))
        else:
            claims = unique(self._ci_claims(record, _lower_keys(record.fields)))
        return [replace(claim, **self._validity(record)) for claim in claims]

    def _validity(self, record: SourceRecord) -> dict[str, Any]:
        """From when (and until when) the record says its facts held, by the configured
        fields; a value that is not a date is not guessed (the note says so)."""
        fields = _lower_keys(record.fields)
        nested = fields.get("fields")
        if isinstance(nested, Mapping):  # Jira's API shape: {"key", "fields": {...}}
            fields = {**_lower_keys(nested), **fields}
        out: dict[str, Any] = {}
        notes = []
        for name, key in (("valid_from", self.valid_from_field), ("valid_to", self.valid_to_field)):
            raw = fields.get(key) if key else None
            if raw in (None, ""):
                continue
            instant = field_instant(raw)
            if instant is None:
                notes.append(f"{key} {str(raw)[:40]!r} is not a date: record time used")
            else:
                out[name] = instant
        if notes:
            out["validity_note"] = "; ".join(notes)
        return out

    def _ci_claims(self, record: SourceRecord, fields: dict[str, Any]) -> Iterator[ExtractedClaim]:
        if not fields:
            return
        subject, subject_type = _ci_subject(record, fields)
        for key, value in fields.items():
            predicate = self.mapping.get(key)
            if predicate is None:
                continue
            literal = key in LITERAL_FIELDS or predicate.startswith("HAS_")
            object_type = "value" if literal else _OBJECT_TYPES.get(predicate, "thing")
            for item in _values(value, split=not literal):
                yield _structured_claim(
                    (subject, subject_type), predicate, (item, object_type), literal=literal
                )
