"""Cursor bookkeeping for sources searched oldest change first by a minute-precision date.

Confluence CQL and Jira JQL compare dates to the minute, in a zone the server picks,
so the query only narrows the search; the exact filter runs here on the items' own
millisecond timestamps. The cursor means "everything changed at or before this instant
has been yielded", which decides what a page may claim:

- the last page claims the newest timestamp seen;
- an earlier page claims one microsecond less, because items sharing that timestamp
  may continue on the next page (bulk imports stamp many pages alike), and a crash
  between pages must not skip them.
"""

from __future__ import annotations

import datetime as dt

from curation.domain.errors import ConnectorError

_TICK = dt.timedelta(microseconds=1)


def parse_instant(value: object) -> dt.datetime | None:
    """An aware datetime from an ISO 8601 string (naive means UTC); None if it is not one."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def parse_cursor(cursor: str | None) -> dt.datetime | None:
    """The instant a stored cursor names; ConnectorError if it is not ISO 8601."""
    if cursor is None:
        return None
    when = parse_instant(cursor)
    if when is None:
        raise ConnectorError(f"stored cursor {cursor!r} is not an ISO 8601 timestamp")
    return when


def query_minute(when: dt.datetime, *, tz: dt.tzinfo, fmt: str) -> str:
    """`when` in the zone the server reads query dates in, floored to the minute by `fmt`."""
    return when.astimezone(tz).strftime(fmt)


class TimeCursor:
    """Tracks the newest timestamp yielded since `since` and what a page may claim."""

    def __init__(self, since: dt.datetime | None) -> None:
        self.since = since
        self.newest = since

    def is_new(self, when: dt.datetime) -> bool:
        """Whether an item changed after the stored cursor (and so was not yielded before)."""
        return self.since is None or when > self.since

    def see(self, when: dt.datetime) -> None:
        """Record that an item with this timestamp is in the page being built."""
        if self.newest is None or when > self.newest:
            self.newest = when

    def moved(self, claimed: str | None) -> bool:
        """Whether a claimed cursor differs from the stored one (then even an empty page counts)."""
        return claimed != (self.since.isoformat() if self.since else None)

    def claim(self, *, last_page: bool) -> str | None:
        """The cursor a page may carry (see the module docstring)."""
        if self.newest is None:
            return None
        if last_page or self.newest == self.since:
            return self.newest.isoformat()
        held_back = self.newest - _TICK
        if self.since is not None and held_back < self.since:
            held_back = self.since
        return held_back.isoformat()
