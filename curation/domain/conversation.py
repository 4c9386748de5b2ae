"""Conversations: transcripts read as turns, each with its speaker, time and position (pure).

A transcript is the Markdown a conversation source stores for each conversation
(`render_transcript` writes it; `parse_transcript` reads it back, and reads transcripts
people wrote by hand the same way):

    # Caroline and Melanie

    ## Session 1, 1:56 pm on 8 May, 2023

    Caroline: Hey Mel! Good to see you!

    [2:01 pm] Melanie: Hi Caroline, I went to the lake yesterday.

- A heading that holds a date, or says "session", starts a session; its date and time
  (any common English or ISO form) is the session's time. Another heading is the title.
- A turn is a line `Speaker: text` (the speaker optionally in bold), optionally led by
  its own time in brackets (`[14:02]` refines the session's day, `[2023-05-08 14:02]`
  replaces it). Lines that follow a turn without a speaker continue it.
- Each turn's span is its text in the transcript, so a citation quotes what was said.

Naive times are read in the zone the caller gives (the source's), so every turn's time
is an aware instant.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ISO = re.compile(
    r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.\d+)?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?)?"
)
_DAY_MONTH = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH})\.?,?\s+(?P<y>\d{{4}})\b",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    rf"\b(?P<mon>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b",
    re.IGNORECASE,
)
_CLOCK = re.compile(
    r"\b(?P<H>\d{1,2})(?::(?P<M>\d{2}))?(?::(?P<S>\d{2}))?\s*(?P<half>[ap]\.?m\b\.?)?",
    re.IGNORECASE,
)
_HALF_DAY = re.compile(r"\s*[ap]\.?m\b", re.IGNORECASE)
# A session heading as `render_transcript` writes it: its time last, in parentheses.
_STAMPED = re.compile(r"\((?P<iso>\d{4}-\d{2}-\d{2}T[^()]*)\)\s*$")
_HEADING = re.compile(r"^ {0,3}(?P<marks>#{1,6})\s+(?P<text>.*?)\s*#*\s*$")
_SPEAKER = r"[^\W\d_][\w.'\u2019 -]{0,58}?"
_BOLD_SPEAKER = r"[^*:\[\]\n]{1,60}?"  # bold marks a name, whatever it looks like
_TURN = re.compile(
    rf"^\s*(?:\[(?P<time>[^\]\n]{{1,40}})\]\s*)?"
    rf"(?:\*\*(?P<bold>{_BOLD_SPEAKER})(?::\*\*|\*\*:)|(?P<plain>{_SPEAKER}):)"
    rf"\s*(?P<text>\S.*)$"
)
_SESSION_WORD = re.compile(r"\bsession\b", re.IGNORECASE)
MAX_SPEAKER_WORDS = 5
_NOT_SPEAKERS = frozenset({"http", "https", "mailto", "note", "ps", "re", "fwd", "nb"})


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation: who said what, when, and where in the transcript."""

    speaker: str
    text: str
    said: dt.datetime | None  # the turn's own time, else its session's; None if neither
    session: int  # 1-based; 0 before any session heading
    position: int  # 1-based, over the whole transcript
    span: tuple[int, int]  # the text's offsets in the transcript

    @property
    def line(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Session:
    number: int
    title: str
    said: dt.datetime | None


@dataclass(frozen=True)
class Transcript:
    title: str
    sessions: tuple[Session, ...]
    turns: tuple[Turn, ...]


# --- Times -----------------------------------------------------------------------------


def _clock(text: str) -> tuple[int, int, int] | None:
    """The time of day a text gives ("1:56 pm", "13:56", "9am"), if it gives one."""
    for found in _CLOCK.finditer(text):
        if found.group("M") is None and not found.group("half"):
            continue  # a bare number is a day or a year, not a time
        hour, minute = int(found.group("H")), int(found.group("M") or 0)
        second = int(found.group("S") or 0)
        if half := found.group("half"):
            if not 1 <= hour <= 12:
                continue
            hour = hour % 12 + (12 if half.lower().startswith("p") else 0)
        if hour < 24 and minute < 60 and second < 60:
            return hour, minute, second
    return None


def _date(text: str) -> tuple[dt.date, re.Match[str]] | None:
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        if found := pattern.search(text):
            month = MONTHS[found.group("mon").lower()]
            try:
                return dt.date(int(found.group("y")), month, int(found.group("d"))), found
            except ValueError:
                return None
    return None


def parse_when(text: str, zone: dt.tzinfo = dt.UTC) -> dt.datetime | None:
    """The instant a date and time written in a common form denotes ("1:56 pm on 8 May,
    2023", "May 8, 2023 13:56", "2023-05-08T13:56:00Z"), naive ones read in `zone`;
    None when the text holds no date."""
    if found := _ISO.search(text):
        try:
            day = dt.date(int(found["y"]), int(found["m"]), int(found["d"]))
            clock = (int(found["H"] or 0), int(found["M"] or 0), int(found["S"] or 0))
            if found["H"] is None:  # "2023-05-08 at 1:56 pm": the clock written beside it
                clock = _clock(text[: found.start()] + " " + text[found.end() :]) or clock
            elif _HALF_DAY.match(text, found.end()):  # "2023-05-08 1:56 pm"
                clock = _clock(text[found.start("H") :]) or clock
            when = dt.datetime.combine(day, dt.time(*clock))
        except ValueError:
            return None
        if tz := found["tz"]:
            if tz == "Z":
                return when.replace(tzinfo=dt.UTC)
            sign = 1 if tz[0] == "+" else -1
            hours, minutes = int(tz[1:3]), int(tz[-2:])
            offset = dt.timedelta(hours=hours, minutes=minutes) * sign
            return when.replace(tzinfo=dt.timezone(offset))
        return when.replace(tzinfo=zone)
    dated = _date(text)
    if dated is None:
        return None
    day, match = dated
    rest = text[: match.start()] + " " + text[match.end() :]
    clock = _clock(rest) or (0, 0, 0)
    return dt.datetime.combine(day, dt.time(*clock)).replace(tzinfo=zone)


def refine(session: dt.datetime | None, text: str, zone: dt.tzinfo) -> dt.datetime | None:
    """A turn's own time: a full date replaces the session's, a time of day refines the
    session's day; None or unreadable keeps the session's time."""
    if when := parse_when(text, zone):
        return when
    clock = _clock(text)
    if clock is None or session is None:
        return session
    return session.replace(hour=clock[0], minute=clock[1], second=clock[2], microsecond=0)


def day_label(day: dt.date) -> str:
    """A day as a turn's text names it: "8 May 2023"."""
    return f"{day.day} {MONTH_NAMES[day.month - 1]} {day.year}"


@dataclass(frozen=True)
class Said:
    """Who said a turn's statement and on which day, read back from its text."""

    day: str  # as `day_label` writes it: "8 May 2023"
    speaker: str
    words: str  # the rest after the day: "Caroline said: I went there yesterday."


_SAID = re.compile(
    rf"On (?P<day>\d{{1,2}} (?:{'|'.join(MONTH_NAMES)}) \d{{4}}), "
    r"(?P<rest>(?P<speaker>\S.{0,119}?) said: .*)",
    re.DOTALL,
)


def statement_said(text: str) -> Said | None:
    """The day and speaker of a turn's statement as the conversation extractor writes it
    ("On 8 May 2023, Caroline said: ..."); None for any other text (a turn of unknown
    time says no day, and is not read back)."""
    found = _SAID.match(text)
    if found is None:
        return None
    return Said(found["day"], found["speaker"], found["rest"])


# --- Reading and writing transcripts ----------------------------------------------------


def _speaker(found: re.Match[str], seen: set[str]) -> str | None:
    """Who a `Name: text` line names, if it names someone: a speaker already heard, else
    a name of at most MAX_SPEAKER_WORDS words, each capitalised (one word may be a user
    name), so "the reason is: ..." inside a turn continues it; a name in bold is one,
    whatever it looks like."""
    if bold := " ".join((found.group("bold") or "").split()):
        return bold
    speaker = " ".join((found.group("plain") or "").split())
    if speaker in seen:
        return speaker
    words = speaker.split()
    if not words or len(words) > MAX_SPEAKER_WORDS or speaker.casefold() in _NOT_SPEAKERS:
        return None
    if len(words) > 1 and not all(word[0].isupper() for word in words):
        return None
    return speaker


@dataclass
class _Open:
    """The turn being read: its speaker and time, and where its words start and end."""

    speaker: str
    said: dt.datetime | None
    start: int
    end: int


@dataclass
class _Reader:
    """What parse_transcript has read so far."""

    text: str
    zone: dt.tzinfo
    title: str = ""
    sessions: list[Session] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    current: _Open | None = None
    session_time: dt.datetime | None = None
    seen: set[str] = field(default_factory=set)

    def close(self) -> None:
        if (turn := self.current) is not None:
            self.turns.append(
                Turn(
                    speaker=turn.speaker,
                    text=" ".join(self.text[turn.start : turn.end].split()),
                    said=turn.said,
                    session=len(self.sessions),
                    position=len(self.turns) + 1,
                    span=(turn.start, turn.end),
                )
            )
        self.current = None

    def heading(self, words: str, level: int) -> None:
        self.close()
        if level == 1 and not self.title and not _SESSION_WORD.search(words):
            self.title = words  # "# #general 2023-05-08": the title, though it has a date
            return
        stamped = _STAMPED.search(words)
        when = parse_when(stamped["iso"] if stamped else words, self.zone)
        if when is not None or _SESSION_WORD.search(words):
            self.session_time = when
            self.sessions.append(Session(len(self.sessions) + 1, words, when))
        elif not self.title:
            self.title = words

    def line(self, line: str, begin: int) -> None:
        if heading := _HEADING.match(line):
            self.heading(heading.group("text"), len(heading.group("marks")))
            return
        found = _TURN.match(line)
        speaker = _speaker(found, self.seen) if found else None
        if found and speaker:
            self.close()
            self.seen.add(speaker)
            said = self.session_time
            if own := found.group("time"):
                said = refine(self.session_time, own, self.zone)
            end = begin + len(line.rstrip())
            self.current = _Open(speaker, said, begin + found.start("text"), end)
        elif self.current is not None:
            self.current.end = begin + len(line.rstrip())


def parse_transcript(text: str, *, zone: dt.tzinfo = dt.UTC) -> Transcript:
    """The transcript's title, sessions and turns (see the module docstring)."""
    reader = _Reader(text, zone)
    offset = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        begin = offset
        offset += len(raw)
        if line.strip():
            reader.line(line, begin)
    reader.close()
    return Transcript(
        title=reader.title, sessions=tuple(reader.sessions), turns=tuple(reader.turns)
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class WrittenTurn:
    """A turn as a connector read it, to be written into a transcript."""

    speaker: str
    text: str
    said: dt.datetime | None = None


@dataclass(frozen=True)
class WrittenSession:
    title: str
    said: dt.datetime | None
    turns: Sequence[WrittenTurn]


def _stamp(when: dt.datetime) -> str:
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def _reads_plain(speaker: str) -> bool:
    """Whether `Speaker: text` reads back as this speaker's turn without bold."""
    found = _TURN.match(f"{speaker}: x")
    return bool(found and found.group("plain") == speaker and _speaker(found, set()))


def render_transcript(title: str, sessions: Sequence[WrittenSession]) -> str:
    """The Markdown transcript `parse_transcript` reads back turn for turn: a session's
    heading carries its ISO time; a turn whose time differs from its session's leads with
    its own. A speaker's name loses what would end it early (a colon, brackets)."""
    lines = [f"# {_one_line(title)}"] if title.strip() else []
    for number, session in enumerate(sessions, start=1):
        heading = _one_line(session.title) or f"Session {number}"
        if not _SESSION_WORD.search(heading) and session.said is None:
            heading = f"Session {number}: {heading}"
        if session.said is not None:
            heading = f"{heading} ({_stamp(session.said)})"
        lines += ["", f"## {heading.replace('#', '')}"]
        for turn in session.turns:
            said = _one_line(turn.text)
            if not said:
                continue
            speaker = re.sub(r"[:*\[\]\n]+", " ", turn.speaker)
            speaker = _one_line(speaker) or "Unknown"
            if not _reads_plain(speaker):
                speaker = f"**{speaker}**"
            lead = ""
            if turn.said is not None and turn.said != session.said:
                lead = f"[{_stamp(turn.said)}] "
            lines += ["", f"{lead}{speaker}: {said}"]
    return "\n".join(lines).strip() + "\n"
