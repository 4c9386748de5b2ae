"""What every extractor shares: the error it raises, the batch it returns, predicate names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from curation.domain.records import PREDICATE_PATTERN, ExtractedClaim

Span = tuple[int, int]


class ExtractionError(ValueError):
    """A record (or a model's answer about it) cannot be turned into claims at all.

    A ValueError, because ingestion records a ValueError from an extractor as the failure
    of that one episode, with this message as its reason, and carries on with the rest.
    """


class ClaimBatch(list[ExtractedClaim]):
    """Extracted claims, plus how many candidates were dropped as malformed and why."""

    def __init__(
        self, claims: Iterable[ExtractedClaim] = (), *, dropped: int = 0, notes: Sequence[str] = ()
    ) -> None:
        super().__init__(claims)
        self.dropped = dropped
        self.notes = tuple(notes)


def to_predicate(phrase: str) -> str | None:
    """The UPPER_SNAKE predicate of a relation phrase ("runs on", "runsOn" -> RUNS_ON), or None."""
    if not phrase.isascii():
        return None
    split_camel = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", phrase.strip())
    candidate = re.sub(r"[^A-Za-z0-9]+", "_", split_camel).strip("_").upper()
    return candidate if PREDICATE_PATTERN.match(candidate) else None


def extraction_version(extractors: Iterable[Any]) -> str:
    """The version of a source's whole extraction: its extractors' versions, in order
    (each has a `version`: `curation.ports.Extractor`)."""
    return " + ".join(str(extractor.version) for extractor in extractors)


def unique(claims: Iterable[ExtractedClaim]) -> list[ExtractedClaim]:
    """The claims in order, each equal claim once."""
    return list(dict.fromkeys(claims))
