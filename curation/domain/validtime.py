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


# --- Dates written in a sentence ---------------------------------------------------------

_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)  # fmt: skip
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = rf"(?:\d{{4}}-\d{{2}}-\d{{2}}|{_MONTH}\s+(?:\d{{1,2}},?\s+)?\d{{4}}|\d{{4}})"
_RANGE = re.compile(
    rf"\bfrom\s+(?P<start>{_DATE})\s+(?:to|until|till|through)\s+(?P<end>{_DATE})\b", re.I
)
_START = re.compile(rf"\b(?:since|as\s+of|from|starting)\s+(?P<start>{_DATE})\b", re.I)
_END = re.compile(rf"\b(?:until|till)\s+(?P<end>{_DATE})\b", re.I)
# A cue word followed by something that is not a date ("since last spring").
_VAGUE = re.compile(
    rf"\b(?P<cue>since|as\s+of|until|till)\s+(?!{_DATE}\b)(?P<what>[\w'-]+(?:\s+[\w'-]+)?)", re.I
)


@dataclass(frozen=True)
class Stated:
    """The validity a sentence states about its fact: from, until, or why it is unused."""

    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None
    note: str = ""


def written_date(text: str) -> dt.datetime | None:
    """ "2019", "March 2021", "March 3, 2021", "2021-03-03" as the instant the period
    named begins (midnight UTC); None if it is none of these or not a real date."""
    text = text.strip().rstrip(".").replace(",", " ")
    parts = text.split()
    try:
        if len(parts) == 1 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", parts[0]):
            return parse_instant(parts[0])
        if len(parts) == 1 and parts[0].isdigit():
            return dt.datetime(int(parts[0]), 1, 1, tzinfo=dt.UTC)
        month = next(
            n for n, name in enumerate(_MONTHS, 1) if name.startswith(parts[0].lower()[:3])
        )
        day = int(parts[1]) if len(parts) == 3 else 1
        return dt.datetime(int(parts[-1]), month, day, tzinfo=dt.UTC)
    except (StopIteration, ValueError, IndexError):
        return None


def field_instant(value: object) -> dt.datetime | None:
    """The instant a structured record's validity field holds (an ISO 8601 date or
    date-time, or a written date such as "March 2021"); None if it holds none. Connectors
    that order an item's history and the extractor that dates its claims read it alike."""
    if value is None or isinstance(value, bool) or value == "":
        return None
    raw = str(value)
    return parse_instant(raw) or written_date(raw)


def stated_validity(sentence: str) -> Stated:
    """When a sentence says its fact held: "since 2019", "as of 2022", "from March 2021 to
    June 2023", "until 2020". An end is where the named period begins (the fact is not
    claimed past what the sentence says for sure). A vague phrase ("since last spring")
    is not guessed at: the note says so and the record's time holds."""
    if found := _RANGE.search(sentence):
        start, end = written_date(found["start"]), written_date(found["end"])
        if start is not None and end is not None and end > start:
            return Stated(valid_from=start, valid_to=end)
        return Stated(note=f"{found.group(0)!r} is not a period: record time used")
    start_match, end_match = _START.search(sentence), _END.search(sentence)
    start = written_date(start_match["start"]) if start_match else None
    end = written_date(end_match["end"]) if end_match else None
    if start is not None or end is not None:
        if start is not None and end is not None and end <= start:
            return Stated(note=f"{end_match.group(0)!r} ends before it begins: record time used")  # type: ignore[union-attr]
        return Stated(valid_from=start, valid_to=end)
    if vague := _VAGUE.search(sentence):
        said = f"{vague['cue']} {vague['what']}"
        return Stated(note=f"{said!r} is not a date: record time used")
    return Stated()
