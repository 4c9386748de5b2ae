"""Relative time phrases in chat turns, resolved against the instant the turn was said."""

from __future__ import annotations

import datetime as dt

import pytest

from curation.domain.reltime import Mention, annotated, mentions


def at(year: int, month: int, day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(year, month, day, hour, tzinfo=dt.UTC)


MON = at(2023, 5, 8)  # Monday 8 May 2023
SUN = at(2023, 5, 14)  # Sunday 14 May 2023

RESOLVED = [
    # Days named by a word.
    ("I went yesterday", MON, "yesterday", "7 May 2023", True),
    ("Yesterday's meeting ran long", MON, "Yesterday", "7 May 2023", True),
    ("we shipped it today.", MON, "today", "8 May 2023", True),
    ("the demo is tonight", MON, "tonight", "8 May 2023", True),
    ("I called them this morning", MON, "this morning", "8 May 2023", True),
    ("it broke this afternoon", MON, "this afternoon", "8 May 2023", True),
    ("we meet this evening", MON, "this evening", "8 May 2023", True),
    ("it was the day before yesterday", MON, "the day before yesterday", "6 May 2023", True),
    ("see you tomorrow", MON, "tomorrow", "9 May 2023", False),
    ("due the day after tomorrow", MON, "the day after tomorrow", "10 May 2023", False),
    ("call me tomorrow morning", MON, "tomorrow morning", "9 May 2023", False),
    ("the build failed last night", MON, "last night", "7 May 2023", True),
    # N units ago or from now.
    ("it happened two days ago", MON, "two days ago", "6 May 2023", True),
    ("it happened 3 days ago", MON, "3 days ago", "5 May 2023", True),
    ("a day ago it worked", MON, "a day ago", "7 May 2023", True),
    ("a couple of days ago", MON, "a couple of days ago", "6 May 2023", True),
    ("it started a few days ago", MON, "a few days ago", "5 May 2023", True),
    ("we met two weeks ago", MON, "two weeks ago", "the week of 24 April 2023", True),
    ("a week ago it was fine", MON, "a week ago", "the week of 1 May 2023", True),
    ("they moved three months ago", MON, "three months ago", "February 2023", True),
    ("she joined a year ago", MON, "a year ago", "2022", True),
    ("twelve years ago", MON, "twelve years ago", "2011", True),
    ("two weeks from now", MON, "two weeks from now", "the week of 22 May 2023", False),
    # In N units.
    ("it ships in two days", MON, "in two days", "10 May 2023", False),
    ("it ships in 10 days", MON, "in 10 days", "18 May 2023", False),
    ("back in a week", MON, "in a week", "the week of 15 May 2023", False),
    ("back in 3 weeks", MON, "in 3 weeks", "the week of 29 May 2023", False),
    ("review in a month", MON, "in a month", "June 2023", False),
    ("review in two months", MON, "in two months", "July 2023", False),
    # Last, this, next week, month, year, weekend.
    ("it broke last week", MON, "last week", "the week of 1 May 2023", True),
    ("busy this week", MON, "this week", "the week of 8 May 2023", True),
    ("ships next week", MON, "next week", "the week of 15 May 2023", False),
    ("hired last month", MON, "last month", "April 2023", True),
    ("hired this month", MON, "this month", "May 2023", True),
    ("starts next month", MON, "next month", "June 2023", False),
    ("it was last year", MON, "last year", "2022", True),
    ("the plan this year", MON, "this year", "2023", True),
    ("maybe next year", MON, "next year", "2024", False),
    ("hiking last weekend", MON, "last weekend", "the weekend of 6 May 2023", True),
    ("hiking this weekend", MON, "this weekend", "the weekend of 13 May 2023", False),
    ("hiking this weekend", SUN, "this weekend", "the weekend of 13 May 2023", True),
    ("hiking next weekend", MON, "next weekend", "the weekend of 20 May 2023", False),
    ("LAST WEEK it rained", MON, "LAST WEEK", "the week of 1 May 2023", True),
    # Weekdays.
    ("I saw her last Friday", MON, "last Friday", "5 May 2023", True),
    ("I saw her on Friday", MON, "on Friday", "5 May 2023", True),
    ("Friday night was loud", MON, "Friday night", "5 May 2023", True),
    ("we spoke on Monday", MON, "on Monday", "1 May 2023", True),
    ("we meet next Monday", MON, "next Monday", "15 May 2023", False),
    ("we meet next Tuesday", MON, "next Tuesday", "9 May 2023", False),
    ("due this Wednesday", MON, "this Wednesday", "10 May 2023", False),
    ("started this Monday", MON, "this Monday", "8 May 2023", True),
    ("last Sunday morning", MON, "last Sunday morning", "7 May 2023", True),
    # Month and year boundaries.
    ("hired last month", at(2024, 1, 2), "last month", "December 2023", True),
    ("left yesterday", at(2024, 3, 1), "yesterday", "29 February 2024", True),
    ("left yesterday", at(2023, 3, 1), "yesterday", "28 February 2023", True),
    ("see you tomorrow", at(2023, 12, 31), "tomorrow", "1 January 2024", False),
    ("review in a month", at(2024, 1, 31), "in a month", "February 2024", False),
    ("review in two months", at(2023, 11, 15), "in two months", "January 2024", False),
    ("two months ago", at(2024, 1, 10), "two months ago", "November 2023", True),
    ("it broke last week", at(2024, 1, 3), "last week", "the week of 25 December 2023", True),
    ("on Sunday", at(2024, 1, 1), "on Sunday", "31 December 2023", True),
    ("maybe next year", at(2023, 12, 31), "next year", "2024", False),
    # The said instant's own date, whatever its zone or hour.
    (
        "left yesterday",
        dt.datetime(2023, 5, 8, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-7))),
        "yesterday",
        "7 May 2023",
        True,
    ),
]


@pytest.mark.parametrize(("text", "said", "phrase", "label", "past"), RESOLVED)
def test_a_relative_phrase_resolves_against_the_said_day(
    text: str, said: dt.datetime, phrase: str, label: str, past: bool
) -> None:
    [mention] = mentions(text, said)
    assert (mention.phrase, mention.label, mention.past) == (phrase, label, past)
    assert text[mention.start : mention.end] == mention.phrase
    assert annotated(text, said)[0] == text.replace(phrase, f"{phrase} ({label})", 1)


@pytest.mark.parametrize(
    "text",
    [
        "I saw it recently",
        "the other day we met",
        "it will ship soon",
        "lately I have been busy",
        "Friday is my favourite day",
        "on Fridays we deploy",
        "it was todayish",
        "all our yesterdays",
        "the last weekday of the month",
        "upon Monday's arrival",
        "we met on 5 May 2023",
        "the release is 2023-05-05",
        "we met on Friday, 5 May 2023",
        "we met on Friday May 5th",
        "in one of the rooms",
        "back in a day or two",
        "this is the thisweek page",
    ],
)
def test_vague_phrases_absolute_dates_and_bare_weekdays_are_left_alone(text: str) -> None:
    assert mentions(text, MON) == []
    assert annotated(text, MON) == (text, [])


def test_several_mentions_come_in_order_with_their_spans() -> None:
    text = "Yesterday I planned it, today I built it, and next week I ship it."
    found = mentions(text, MON)
    assert [(m.phrase, m.label, m.past) for m in found] == [
        ("Yesterday", "7 May 2023", True),
        ("today", "8 May 2023", True),
        ("next week", "the week of 15 May 2023", False),
    ]
    assert all(text[m.start : m.end] == m.phrase for m in found)
    assert annotated(text, MON) == (
        "Yesterday (7 May 2023) I planned it, today (8 May 2023) I built it, "
        "and next week (the week of 15 May 2023) I ship it.",
        found,
    )


def test_the_longest_phrase_wins_where_candidates_overlap() -> None:
    text = "the day before yesterday, then last Friday night"
    assert [m.phrase for m in mentions(text, MON)] == [
        "the day before yesterday",
        "last Friday night",
    ]


def test_annotating_annotated_text_changes_nothing() -> None:
    text = "two weeks ago I left, last month I moved, and in 3 days I start."
    once, _ = annotated(text, MON)
    assert once == (
        "two weeks ago (the week of 24 April 2023) I left, last month (April 2023) I moved, "
        "and in 3 days (11 May 2023) I start."
    )
    assert annotated(once, MON)[0] == once


def test_a_mention_spans_the_days_it_denotes() -> None:
    def days(text: str, said: dt.datetime = MON) -> tuple[dt.date, dt.date]:
        [mention] = mentions(text, said)
        return mention.first, mention.last

    assert days("last week") == (dt.date(2023, 5, 1), dt.date(2023, 5, 7))
    assert days("last weekend") == (dt.date(2023, 5, 6), dt.date(2023, 5, 7))
    assert days("next month", at(2024, 1, 15)) == (dt.date(2024, 2, 1), dt.date(2024, 2, 29))
    assert days("last year") == (dt.date(2022, 1, 1), dt.date(2022, 12, 31))
    assert days("yesterday") == (dt.date(2023, 5, 7), dt.date(2023, 5, 7))


def test_a_range_of_no_named_kind_is_labelled_by_its_ends() -> None:
    mention = Mention(0, 3, "abc", dt.date(2023, 5, 2), dt.date(2023, 5, 4), past=True)
    assert mention.label == "2 May 2023 to 4 May 2023"
