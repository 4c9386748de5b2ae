"""One supersession policy for structured and free-text claims (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from curation.domain.names import normalize_name

OBJECT_KEY_MAX = 300  # Claim.object_key's length
_DIGEST = "#sha256:"


def value_key(*, entity_id: int | None, literal: str | None) -> str:
    """What makes two values "the same value": "e:<entity id>" or "l:<normalised literal>".

    A literal key that would not be shorter than OBJECT_KEY_MAX characters keeps its
    readable head and ends with the SHA-256 of the whole normalised literal, so it is
    exactly OBJECT_KEY_MAX long (no plain key is) and never merely cut:
    passages of a repetitive document often share their first few hundred characters and
    differ only at the end, and a cut key made them "the same value", so all but the first
    were dropped as re-confirmations of it.
    """
    if entity_id is not None:
        return f"e:{entity_id}"
    normalized = normalize_name(literal or "")
    key = f"l:{normalized}"
    if len(key) < OBJECT_KEY_MAX:
        return key
    tail = _DIGEST + hashlib.sha256(normalized.encode("utf-8")).hexdigest()
    return key[: OBJECT_KEY_MAX - len(tail)] + tail


@dataclass(frozen=True)
class CurrentValue:
    """A published claim for the same subject and predicate as a new one."""

    claim_id: int
    object_key: str
    fact_text: str


@dataclass(frozen=True)
class Plan:
    """What publishing a new value does to the current ones."""

    duplicate_of: int | None
    supersedes: tuple[int, ...]


def plan(
    *,
    new_object_key: str,
    new_fact: str,
    current: Sequence[CurrentValue],
    functional: bool,
    replaces: Callable[[str, str], bool] | None = None,
) -> Plan:
    """Decide duplicates and supersessions for a new published value.

    - The same object already published: the new claim is a duplicate (re-confirmation),
      nothing is superseded.
    - A functional predicate (one value at a time) supersedes every other value.
    - A multi-valued predicate keeps other values unless a contradiction judge says the
      new fact replaces one; with no judge, values coexist.
    """
    for value in current:
        if value.object_key == new_object_key:
            return Plan(duplicate_of=value.claim_id, supersedes=())
    if functional:
        return Plan(duplicate_of=None, supersedes=tuple(v.claim_id for v in current))
    if replaces is None:
        return Plan(duplicate_of=None, supersedes=())
    gone = tuple(v.claim_id for v in current if replaces(new_fact, v.fact_text))
    return Plan(duplicate_of=None, supersedes=gone)
