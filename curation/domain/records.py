"""What connectors fetch and extractors produce: plain, immutable values."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

PREDICATE_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")


@dataclass(frozen=True)
class SourceRecord:
    """One artifact as fetched: raw bytes plus where it came from.

    `external_id` is stable for the artifact across fetches (a path, a page id, an
    issue key, a message ts); `fields` carries structured data (CMDB or Jira fields)
    that a structured extractor turns into claims without a model.

    `version_from`: the record is one version of its item's history (a row of a history
    export), in effect from this instant until the item's next version; None for a
    record that is simply the artifact's current form. `location`: where in what was
    fetched the record was read ("line 3"), for its citation.
    """

    external_id: str
    content: bytes
    mime: str
    url: str = ""
    title: str = ""
    updated_at: dt.datetime | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    version_from: dt.datetime | None = None
    location: str = ""


@dataclass(frozen=True)
class RecordFailure:
    """An artifact that could not be fetched or parsed, and why (it fails alone)."""

    external_id: str
    reason: str
    url: str = ""
    content: bytes = b""


@dataclass(frozen=True)
class FetchPage:
    """A batch of fetched items and the cursor that is safe to store once they are in."""

    items: list[SourceRecord | RecordFailure]
    cursor: str | None


@dataclass(frozen=True)
class ExtractedClaim:
    """A (subject, PREDICATE, object) statement found in a record, with its evidence span.

    Exactly one of `object_name` (an entity) and `object_literal` (a value) is set.
    """

    subject: str
    predicate: str
    fact_text: str
    confidence: float
    object_name: str | None = None
    object_literal: str | None = None
    subject_type: str = "thing"
    object_type: str = "thing"
    span: tuple[int, int] | None = None
    # When the statement itself says its fact held ("since 2019"); None: the record's time.
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    validity_note: str = ""  # why a date it mentions was not used

    def __post_init__(self) -> None:
        if not PREDICATE_PATTERN.match(self.predicate):
            raise ValueError(f"predicate {self.predicate!r} is not UPPER_SNAKE")
        if (self.object_name is None) == (self.object_literal is None):
            raise ValueError("set exactly one of object_name and object_literal")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence {self.confidence} is outside [0, 1]")
        if not self.subject.strip():
            raise ValueError("the subject is empty")
