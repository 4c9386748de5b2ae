"""Valid time a record declares about itself (pure).

A Markdown document may say from when what it states holds, in its front matter:

    ---
    valid_from: 2019-01-01
    ---

Its claims are then valid from that instant instead of the record's update time (a
document written today about a move in 2019). A date without a time is midnight UTC;
a time without a zone is UTC. A value that is not a date is not guessed at: the
record's own time is used, and `note` says why.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_KEY = re.compile(r"^\s*valid_from\s*:\s*(.*?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Declared:
    """What the record declares: its valid-from instant, or why none is used."""

    valid_from: dt.datetime | None = None
    note: str = ""


def front_matter(text: str) -> list[str]:
    """The lines of a leading YAML front matter block ("---" ... "---"), if any."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    for n, line in enumerate(lines[1:], 1):
        if line.strip() in {"---", "..."}:
            return lines[1:n]
    return []


def parse_instant(value: str) -> dt.datetime | None:
    """An ISO 8601 date or date-time as an aware instant (UTC when no zone); None if not."""
    value = value.strip().strip("'\"")
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            day = dt.date.fromisoformat(value)
            return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        instant = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=dt.UTC)


def declared_validity(text: str) -> Declared:
    """The valid-from instant the document's front matter declares, if it declares one."""
    for line in front_matter(text):
        if found := _KEY.match(line):
            raw = found.group(1)
            instant = parse_instant(raw)
            if instant is None:
                return Declared(note=f"valid_from {raw[:40]!r} is not a date: record time used")
            return Declared(valid_from=instant)
    return Declared()
