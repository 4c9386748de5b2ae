"""Query strings read into typed values (stdlib only): one reader for every GET entrypoint.

Every app's entrypoints (REST API, portal, MCP) and the rules that parse a request in
their domains read parameters with `ParamReader`, and each renders an `InvalidQuery` its
own way: the API as a 400 with a message per field, the portal beside its form.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping

MAX_ID = 2**62  # a bigint primary key, with room: larger values are no id
UNKNOWN_FIELD = "detail"  # unknown parameters are not a field of their own


class InvalidQuery(ValueError):
    """A query string that cannot be answered: a message per offending field."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {message}" for name, message in self.errors.items()))


class ParamReader:
    """Typed values out of a query string; every problem is kept and raised by `check()`."""

    def __init__(
        self, params: Mapping[str, str], *, allowed: Collection[str] | None = None
    ) -> None:
        self.params = params
        self.errors: dict[str, str] = {}
        unknown = sorted(set(params) - set(allowed)) if allowed is not None else []
        if unknown:
            self.fail(UNKNOWN_FIELD, f"unknown parameter(s): {', '.join(unknown)}")

    def fail(self, name: str, message: str) -> None:
        """Record a problem with `name` (the first one per field is kept)."""
        self.errors.setdefault(name, message)

    def text(self, name: str) -> str | None:
        """The value as given; a blank value is no value."""
        return self.params.get(name) or None

    def integer(self, name: str, *, low: int, high: int) -> int | None:
        """An integer in [low, high], or None when absent."""
        if name not in self.params:
            return None
        try:
            value = int(self.params[name])
        except ValueError:
            self.fail(name, "must be an integer")
            return None
        if not low <= value <= high:
            self.fail(name, f"must be between {low} and {high}")
            return None
        return value

    def instant(self, name: str) -> dt.datetime | None:
        """An ISO 8601 instant with its time zone, or None when absent."""
        if name not in self.params:
            return None
        try:
            value = dt.datetime.fromisoformat(self.params[name])
        except ValueError:
            value = None
        if value is None or value.tzinfo is None:
            self.fail(name, "use an ISO 8601 instant with a time zone")
            return None
        return storable(value)

    def choice(self, name: str, choices: Collection[str]) -> str | None:
        """One of `choices`, or None when absent."""
        if name not in self.params:
            return None
        value = self.params[name]
        if value not in choices:
            self.fail(name, f"must be one of {', '.join(sorted(choices))}")
            return None
        return value

    def check(self) -> None:
        """Raise InvalidQuery naming every problem found so far."""
        if self.errors:
            raise InvalidQuery(self.errors)


# The largest offset the database stores (ISO 8601 allows up to 23:59).
STORED_OFFSET = dt.timedelta(hours=15, minutes=59)


def storable(value: dt.datetime) -> dt.datetime:
    """The instant as given, or in UTC when its offset is past what the database stores
    (+18:35 is valid ISO 8601). Within a day of the calendar's ends, that end (no
    fact's validity reaches there)."""
    offset = value.utcoffset() or dt.timedelta(0)
    if abs(offset) <= STORED_OFFSET:
        return value
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        edge = dt.datetime.max if value.year > 1 else dt.datetime.min  # noqa: DTZ901 - given a zone below
        return edge.replace(tzinfo=dt.UTC)
