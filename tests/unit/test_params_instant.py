"""An `as_of` instant keeps its offset, unless the database cannot store it (+18:35 is
valid ISO 8601, and Postgres refuses past 15:59): then it is read in UTC."""

from __future__ import annotations

import datetime as dt

import pytest

from kernel.params import ParamReader


def _read(text: str) -> dt.datetime | None:
    reader = ParamReader({"as_of": text})
    value = reader.instant("as_of")
    reader.check()
    return value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # +18:35 is a valid ISO 8601 offset the database refuses (it stores up to 15:59)
        ("7687-12-12T19:02:11+18:35", dt.datetime(7687, 12, 12, 0, 27, 11, tzinfo=dt.UTC)),
        ("2022-03-01T00:00:00-23:59", dt.datetime(2022, 3, 1, 23, 59, tzinfo=dt.UTC)),
    ],
)
def test_an_instant_is_read_in_utc_when_its_offset_is_past_what_is_stored(
    text: str, expected: dt.datetime
) -> None:
    value = _read(text)
    assert value == expected
    assert value is not None
    assert value.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize(
    ("text", "edge"),
    [
        ("9999-12-31T23:00:00-20:00", "max"),
        ("0001-01-01T01:00:00+20:00", "min"),
    ],
)
def test_an_instant_past_the_calendar_is_its_end_when_utc_would_overflow(
    text: str, edge: str
) -> None:
    assert _read(text) == getattr(dt.datetime, edge).replace(tzinfo=dt.UTC)


def test_an_instant_keeps_its_offset_when_the_database_stores_it() -> None:
    value = _read("2022-03-01T00:00:00-05:00")
    assert value is not None
    assert value.utcoffset() == dt.timedelta(hours=-5)
