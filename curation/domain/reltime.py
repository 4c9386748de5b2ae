"""Relative time in chat text, resolved against the instant a turn was said (pure).

A turn said on 8 May 2023 that reads "I went yesterday" means 7 May 2023; once the turn
is stored and read later, "yesterday" no longer says when. `mentions` finds the English
relative phrases in a turn (today, yesterday, last week, two days ago, in a month, next
Friday, ...) and resolves each to the days it denotes; `annotated` writes the resolved
time after each phrase ("I went yesterday (7 May 2023)"), so the text keeps its meaning.

Resolution uses the said instant's own date (`said.date()`, no time-zone conversion).
Weeks are Monday-based (ISO); a weekend is the Saturday and Sunday of a week. A phrase
resolves at the granularity it speaks in: "two days ago" is a day, "last week" a week,
"three months ago" a month, "last year" a year. Vague phrases ("recently", "the other
day", "soon", "lately") and absolute dates are left alone, and a bare weekday only counts
with a word that makes it relative ("on Friday", "last Friday", "Friday night"; not
"Friday is my favourite day").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER_WORDS = (
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
_NUMBERS = {word: n for n, word in enumerate(_NUMBER_WORDS, 1)}
_ONE_DAY = dt.timedelta(days=1)
_ONE_WEEK = dt.timedelta(days=7)

# A count: digits, a number word, "a"/"an" (1), "a couple (of)" (2), "a few" (3).
_QTY = r"(?P<n>\d{1,3}|" + "|".join(_NUMBERS) + r"|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|an?)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PART_OF_DAY = r"(?:morning|afternoon|evening|night)"

# Days named by a word: "yesterday", "the day after tomorrow", "last night", "this morning".
_DAY_WORD = re.compile(
    r"\b(?:(?P<rel>the\s+day\s+(?:before\s+yesterday|after\s+tomorrow)|yesterday|tomorrow)"
    rf"(?:\s+{_PART_OF_DAY})?"
    r"|(?P<now>today|tonight|last\s+night|this\s+(?:morning|afternoon|evening)))\b",
    re.IGNORECASE,
)
# "two days ago", "a couple of weeks ago", "three months from now".
_AGO = re.compile(rf"\b{_QTY}\s+{_UNIT}\s+(?P<dir>ago|from\s+now)\b", re.IGNORECASE)
# "in two days", "in a week", "in 3 months"; not "in a day or two", which is a guess.
_IN = re.compile(rf"\bin\s+{_QTY}\s+{_UNIT}\b(?!\s+or\b)", re.IGNORECASE)
# "last week", "next month", "this year", "last weekend".
_PERIOD = re.compile(
    r"\b(?P<which>last|next|this)\s+(?P<unit>weekend|week|month|year)\b", re.IGNORECASE
)
# "on Friday", "last Monday", "next Tuesday", "this Sunday", "Friday night".
_WEEKDAY = re.compile(
    r"\b(?:(?P<which>on|last|next|this)\s+)?(?P<day>" + "|".join(_WEEKDAYS) + ")"
    rf"(?:\s+(?P<part>{_PART_OF_DAY}))?\b",
    re.IGNORECASE,
)
# An absolute date right after a weekday ("Friday, 5 May", "Friday May 5th", "Friday
# 2023-05-05") makes the weekday part of that date, not a relative phrase.
_MONTH_NAMES = "|".join(_MONTHS)
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE_AFTER = re.compile(
    rf",?\s+(?:(?:the\s+)?{_ORDINAL}(?:\s+of)?\s+(?:{_MONTH_NAMES})\b"
    rf"|(?:{_MONTH_NAMES})\s+{_ORDINAL}\b"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2})",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Mention:
    """A relative phrase at text[start:end] and the days it denotes, first to last."""

    start: int
    end: int
    phrase: str
    first: dt.date
    last: dt.date
    past: bool

    @property
    def label(self) -> str:
        """The resolved time in words: a day, week, weekend, month or year."""
        first, last = self.first, self.last
        if first == last:
            return _day_label(first)
        span = (last - first).days
        if span == 6 and first.weekday() == 0:
            return f"the week of {_day_label(first)}"
        if span == 1 and first.weekday() == 5:
            return f"the weekend of {_day_label(first)}"
        if first == dt.date(first.year, 1, 1) and last == dt.date(first.year, 12, 31):
            return str(first.year)
        if first.day == 1 and last == _month_end(first):
            return f"{_MONTHS[first.month - 1]} {first.year}"
        return f"{_day_label(first)} to {_day_label(last)}"


# What a rule resolves a match to: first day, last day and whether it is past.
type _Span = tuple[dt.date, dt.date, bool]
type _Resolver = Callable[[re.Match[str], dt.date], _Span | None]


def mentions(text: str, said: dt.datetime) -> list[Mention]:
    """Every relative phrase in `text`, resolved against `said`, in order of position.

    Phrases do not overlap: where two candidates do, the longer wins ("the day before
    yesterday" over "yesterday").
    """
    today = said.date()
    candidates: list[Mention] = []
    for pattern, resolve in _RULES:
        for found in pattern.finditer(text):
            try:
                span = resolve(found, today)
            except (ValueError, OverflowError):  # past the calendar's range
                continue
            if span is not None:
                start, end = found.span()
                candidates.append(Mention(start, end, text[start:end], *span))
    chosen: list[Mention] = []
    for candidate in sorted(candidates, key=lambda m: (m.start - m.end, m.start)):
        if all(candidate.end <= m.start or m.end <= candidate.start for m in chosen):
            chosen.append(candidate)
    return sorted(chosen, key=lambda m: m.start)


def annotated(text: str, said: dt.datetime) -> tuple[str, list[Mention]]:
    """The text with each relative phrase followed by its resolved time in parentheses,
    e.g. "I went yesterday" said on 8 May 2023 -> "I went yesterday (7 May 2023)", and the mentions.

    The mentions' offsets are into the text as given. A phrase already followed by its
    label is left as it is, so annotating annotated text changes nothing.
    """
    found = mentions(text, said)
    for mention in reversed(found):
        note = f" ({mention.label})"
        if not text.startswith(note, mention.end):
            text = text[: mention.end] + note + text[mention.end :]
    return text, found


def _day_label(day: dt.date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def _month_end(day: dt.date) -> dt.date:
    following = _add_months(day.replace(day=1), 1)
    return following - _ONE_DAY


def _add_months(day: dt.date, months: int) -> dt.date:
    """The first of the month `months` after (or before, when negative) `day`'s month."""
    index = day.year * 12 + day.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def _week(day: dt.date) -> tuple[dt.date, dt.date]:
    monday = day - dt.timedelta(days=day.weekday())
    return monday, monday + dt.timedelta(days=6)


def _month(first: dt.date) -> tuple[dt.date, dt.date]:
    return first, _month_end(first)


def _year(year: int) -> tuple[dt.date, dt.date]:
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def _words(found: str) -> str:
    return _SPACE.sub(" ", found.lower())


def _count(word: str) -> int:
    word = _words(word)
    if word.isdigit():
        return int(word)
    if "couple" in word:
        return 2
    if "few" in word:
        return 3
    return _NUMBERS.get(word, 1)  # "a", "an"


_DAY_OFFSETS = {
    "the day before yesterday": -2,
    "yesterday": -1,
    "last night": -1,
    "tomorrow": 1,
    "the day after tomorrow": 2,
}


def _resolve_day_word(found: re.Match[str], today: dt.date) -> _Span:
    word = _words(found.group("rel") or found.group("now"))
    offset = _DAY_OFFSETS.get(word, 0)
    day = today + dt.timedelta(days=offset)
    return day, day, offset <= 0


def _shifted(today: dt.date, unit: str, n: int) -> tuple[dt.date, dt.date]:
    """The day, week, month or year `n` units from `today` (earlier when negative)."""
    if unit == "day":
        day = today + dt.timedelta(days=n)
        return day, day
    if unit == "week":
        return _week(today + n * _ONE_WEEK)
    if unit == "month":
        return _month(_add_months(today, n))
    return _year(today.year + n)


def _resolve_ago(found: re.Match[str], today: dt.date) -> _Span:
    n = _count(found.group("n"))
    past = found.group("dir").lower() == "ago"
    first, last = _shifted(today, found.group("unit").lower(), -n if past else n)
    return first, last, past


def _resolve_in(found: re.Match[str], today: dt.date) -> _Span:
    first, last = _shifted(today, found.group("unit").lower(), _count(found.group("n")))
    return first, last, False


def _resolve_period(found: re.Match[str], today: dt.date) -> _Span:
    which = found.group("which").lower()
    unit = found.group("unit").lower()
    step = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "weekend":
        monday, _ = _week(today + step * _ONE_WEEK)
        first, last = monday + dt.timedelta(days=5), monday + dt.timedelta(days=6)
    else:
        first, last = _shifted(today, unit, step)
    past = first <= today if which == "this" else which == "last"
    return first, last, past


def _resolve_weekday(found: re.Match[str], today: dt.date) -> _Span | None:
    which = (found.group("which") or "").lower()
    if not which and not found.group("part"):
        return None  # a bare weekday: maybe a habit or a name, not a day
    if _DATE_AFTER.match(found.string, found.end()):
        return None  # part of an absolute date
    weekday = _WEEKDAYS.index(found.group("day").lower())
    if which == "next":
        day = today + dt.timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
    elif which == "this":
        day = _week(today)[0] + dt.timedelta(days=weekday)
    else:
        day = today - dt.timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
    return day, day, day <= today


_RULES: tuple[tuple[re.Pattern[str], _Resolver], ...] = (
    (_DAY_WORD, _resolve_day_word),
    (_AGO, _resolve_ago),
    (_IN, _resolve_in),
    (_PERIOD, _resolve_period),
    (_WEEKDAY, _resolve_weekday),
)
