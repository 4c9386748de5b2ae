"""One supersession policy for structured and free-text claims (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


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
