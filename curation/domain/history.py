"""An item's history: rows of one id over time read as its versions (pure).

A structured export may carry history: one row per item *and period* (a slowly
changing dimension, an HR or asset register, a CMDB audit export). With a valid-from
field configured, rows that share an id and differ in their valid-from instant are
versions of one item, each in effect from its instant until the next one's. This
module decides, for the rows of one export, which row is which version and in what
order they are read (valid time, whatever the order in the file), and which rows fail
and why; and, for a version being recorded, which of the item's stored versions come
before and after it.

Rows that repeat both the id and the instant cannot both be the item in that period:
the first in the file is read, the others fail with the reason. In an item of several
rows, a row whose instant cannot be read cannot be placed and fails; a lone row keeps
the extractor's rule (its record's time is used, and the claim's reason says why).
Without a valid-from field a repeated id is an error, and the message names the
setting that would make the rows a history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from curation.domain.validtime import field_instant


@dataclass(frozen=True)
class Row:
    """One row of an export as the history rule sees it: its item's id, where it was,
    and its valid-from cell as read (None when the row has none)."""

    identifier: str
    where: str
    valid_from: object = None


@dataclass(frozen=True)
class Placed:
    """A row in reading order: the index it had in the export, the instant its version
    begins (None: not a version), or why it fails (`refusal`)."""

    index: int
    version_from: dt.datetime | None = None
    refusal: str = ""


def _shown(value: object) -> str:
    return repr(str(value)[:40])


def _undatable(row: Row, rows: int, field: str) -> str:
    if row.valid_from is None:
        what = f"has no {field!r} value"
    else:
        what = f"has {field} {_shown(row.valid_from)}, which is not a date"
    return (
        f"{row.where} {what}, and id {row.identifier!r} has {rows} rows (a history): "
        "a row without its instant cannot be placed in it"
    )


def _versions(group: Sequence[tuple[int, Row]], field: str) -> list[Placed]:
    """The rows of one id in valid-time order, then those that fail."""
    dated: list[tuple[dt.datetime, int, Row]] = []
    failed: list[Placed] = []
    for index, row in group:
        instant = field_instant(row.valid_from)
        if instant is None:
            failed.append(Placed(index, refusal=_undatable(row, len(group), field)))
        else:
            dated.append((instant, index, row))
    dated.sort(key=lambda each: (each[0], each[1]))  # file order breaks a tie
    placed: list[Placed] = []
    first_at: dict[dt.datetime, str] = {}
    for instant, index, row in dated:
        if instant in first_at:
            reason = (
                f"{row.where} repeats id {row.identifier!r} and {field} "
                f"{instant.isoformat()} (first on {first_at[instant]}): "
                "one item has one version per instant"
            )
            failed.append(Placed(index, refusal=reason))
            continue
        first_at[instant] = row.where
        placed.append(Placed(index, version_from=instant))
    return placed + failed


def _repeats(group: Sequence[tuple[int, Row]], id_field: str) -> list[Placed]:
    """An id's rows without a valid-from field: the first is read, the rest fail."""
    (first_index, first), *rest = group
    placed = [Placed(first_index)]
    for index, row in rest:
        reason = (
            f"{row.where} repeats id {row.identifier!r} (first on {first.where}); "
            f"set valid_from_field to read the rows of one {id_field!r} as its history"
        )
        placed.append(Placed(index, refusal=reason))
    return placed


def reading_order(
    rows: Sequence[Row], *, valid_from_field: str | None, id_field: str = "id"
) -> list[Placed]:
    """Every row once, in the order it is read: items in the order they first appear,
    an item's versions together in valid-time order, its failing rows after them."""
    groups: dict[str, list[tuple[int, Row]]] = {}
    for index, row in enumerate(rows):
        groups.setdefault(row.identifier, []).append((index, row))
    placed: list[Placed] = []
    for group in groups.values():
        if valid_from_field is None:
            placed.extend(_repeats(group, id_field))
        elif len(group) == 1:
            index, row = group[0]
            placed.append(Placed(index, version_from=field_instant(row.valid_from)))
        else:
            placed.extend(_versions(group, valid_from_field))
    return placed


@dataclass(frozen=True)
class StoredVersion:
    """One stored reading of an item: its episode and the instant its version begins
    (None: a reading that is not a version, the artifact's plain revision)."""

    episode_id: int
    version_from: dt.datetime | None


@dataclass(frozen=True)
class Neighbours:
    """Around a version being recorded: the item's readings it follows (earlier versions,
    an older reading of the same version, plain revisions) and the current readings of
    its later versions, the next one first."""

    before: tuple[int, ...]
    after: tuple[StoredVersion, ...]

    @property
    def next(self) -> StoredVersion | None:
        return self.after[0] if self.after else None


def neighbours(version_from: dt.datetime, stored: Iterable[StoredVersion]) -> Neighbours:
    """Which stored readings of the item come before a version of `version_from`, and
    which later versions follow it (the latest reading of each instant is its current
    one; episode ids grow with time, so the highest id is the latest)."""
    before: list[int] = []
    latest: dict[dt.datetime, int] = {}
    for each in stored:
        if each.version_from is None or each.version_from <= version_from:
            before.append(each.episode_id)
        elif latest.get(each.version_from, -1) < each.episode_id:
            latest[each.version_from] = each.episode_id
    after = tuple(StoredVersion(pk, instant) for instant, pk in sorted(latest.items()))
    return Neighbours(before=tuple(sorted(before)), after=after)
