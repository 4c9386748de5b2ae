"""Conversation transcripts: Markdown read as turns, and JSON, JSON lines and Slack read
into that Markdown.

Pure unit tests: no database, no network.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest

from curation.domain import transcripts
from curation.domain.conversation import (
    Session,
    Transcript,
    Turn,
    WrittenSession,
    WrittenTurn,
    day_label,
    parse_transcript,
    parse_when,
    refine,
    render_transcript,
)
from curation.domain.transcripts import (
    attachments,
    from_json,
    from_json_lines,
    from_slack_day,
    instant,
    is_slack_day,
    slack_users,
)

UTC = dt.UTC
MINUS_7 = dt.timezone(dt.timedelta(hours=-7))
PLUS_2 = dt.timezone(dt.timedelta(hours=2))


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, tz: dt.tzinfo = UTC
) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, tzinfo=tz)


SESSION_1 = at(2023, 5, 8, 13, 56)
SESSION_2 = at(2023, 5, 25, 19, 0)

TRANSCRIPT = """\
# Caroline and Melanie

## Session 1 \u2014 1:56 pm on 8 May, 2023

Caroline: Hey Mel! Good to see you!
It has been a while.

[2:01 pm] Melanie: Hi Caroline, the reason is: I went to the lake yesterday.
the plan is: swim again soon.

**Caroline**: That sounds lovely.

[2023-05-09 10:00] Melanie: Sending photos now.

## Session 2 \u2014 7:00 pm on 25 May, 2023

Caroline: Back again.
Note: the lake was cold.
Melanie: Brr.
"""

# (speaker, text, said, session, position) of each turn of TRANSCRIPT.
TURNS = [
    (
        "Caroline",
        "Hey Mel! Good to see you! It has been a while.",
        SESSION_1,
        1,
        1,
    ),
    (
        "Melanie",
        "Hi Caroline, the reason is: I went to the lake yesterday. the plan is: swim again soon.",
        at(2023, 5, 8, 14, 1),
        1,
        2,
    ),
    ("Caroline", "That sounds lovely.", SESSION_1, 1, 3),
    ("Melanie", "Sending photos now.", at(2023, 5, 9, 10, 0), 1, 4),
    ("Caroline", "Back again. Note: the lake was cold.", SESSION_2, 2, 5),
    ("Melanie", "Brr.", SESSION_2, 2, 6),
]


def turns_of(text: str, zone: dt.tzinfo = UTC) -> list[tuple[str, str, dt.datetime | None]]:
    return [(t.speaker, t.text, t.said) for t in parse_transcript(text, zone=zone).turns]


# --- parse_transcript -------------------------------------------------------------------


def test_the_title_and_the_dated_session_headings_are_read() -> None:
    transcript = parse_transcript(TRANSCRIPT)
    assert transcript.title == "Caroline and Melanie"
    assert transcript.sessions == (
        Session(1, "Session 1 \u2014 1:56 pm on 8 May, 2023", SESSION_1),
        Session(2, "Session 2 \u2014 7:00 pm on 25 May, 2023", SESSION_2),
    )


def test_each_turn_has_its_speaker_words_time_session_and_position() -> None:
    turns = parse_transcript(TRANSCRIPT).turns
    assert [(t.speaker, t.text, t.said, t.session, t.position) for t in turns] == TURNS


def test_a_turn_span_slices_the_transcript_to_exactly_its_words() -> None:
    turns = parse_transcript(TRANSCRIPT).turns
    quoted = [TRANSCRIPT[t.span[0] : t.span[1]] for t in turns]
    assert quoted == [
        "Hey Mel! Good to see you!\nIt has been a while.",
        "Hi Caroline, the reason is: I went to the lake yesterday.\nthe plan is: swim again soon.",
        "That sounds lovely.",
        "Sending photos now.",
        "Back again.\nNote: the lake was cold.",
        "Brr.",
    ]
    assert all(" ".join(q.split()) == t.text for q, t in zip(quoted, turns, strict=True))


def test_spans_hold_with_windows_line_endings() -> None:
    text = TRANSCRIPT.replace("\n", "\r\n")
    turns = parse_transcript(text).turns
    assert [(t.speaker, t.text) for t in turns] == [(s, w) for s, w, *_ in TURNS]
    assert (
        text[turns[0].span[0] : turns[0].span[1]]
        == "Hey Mel! Good to see you!\r\nIt has been a while."
    )
    assert text[turns[5].span[0] : turns[5].span[1]] == "Brr."


def test_a_turn_line_is_speaker_colon_text() -> None:
    turn = Turn("Caroline", "Hi there", None, 1, 1, (0, 8))
    assert turn.line == "Caroline: Hi there"


@pytest.mark.parametrize(
    ("line", "speaker", "text"),
    [
        ("Caroline: Hey Mel!", "Caroline", "Hey Mel!"),
        ("**Caroline**: Hey Mel!", "Caroline", "Hey Mel!"),
        ("   Caroline:    Hey Mel!   ", "Caroline", "Hey Mel!"),
        ("Dr. Smith: Take two.", "Dr. Smith", "Take two."),
        ("Jean-Luc Picard: Engage.", "Jean-Luc Picard", "Engage."),
        ("O'Brien: Aye.", "O'Brien", "Aye."),
        ("Mary Anne Lee Smith Jones: Five words.", "Mary Anne Lee Smith Jones", "Five words."),
        ("user: a user name is one word", "user", "a user name is one word"),
        (
            "Caroline: see https://example.com: it works",
            "Caroline",
            "see https://example.com: it works",
        ),
        ("[14:02] Caroline: Timed.", "Caroline", "Timed."),
        ("[14:02]Caroline: Tight.", "Caroline", "Tight."),
    ],
)
def test_speaker_forms(line: str, speaker: str, text: str) -> None:
    [turn] = parse_transcript(line + "\n").turns
    assert (turn.speaker, turn.text) == (speaker, text)
    assert line[turn.span[0] : turn.span[1]] == text


@pytest.mark.parametrize(
    "line",
    [
        "the reason is: it rained",
        "and then: nothing happened",
        "note: bring towels",
        "PS: call me",
        "Re: the lake",
        "https://example.com/lake: photos",
        "Mary Anne Lee Smith Jones Brown: six words is not a name",
        "Caroline:",
        "12: a number is not a speaker",
        "- Melanie: a list item is not a turn",
    ],
)
def test_a_line_that_names_no_speaker_continues_the_turn(line: str) -> None:
    text = f"Caroline: It was good.\n{line}\n"
    [turn] = parse_transcript(text).turns
    assert turn.speaker == "Caroline"
    assert turn.text == f"It was good. {line.strip()}"
    assert text[turn.span[0] : turn.span[1]] == f"It was good.\n{line}"


def test_lines_before_any_turn_and_blank_lines_give_no_turn() -> None:
    assert parse_transcript("").turns == ()
    assert parse_transcript("just some words\n\nand more: here\n") == Transcript("", (), ())


def test_turns_before_any_session_are_in_session_zero_without_a_time() -> None:
    text = "Alice: first\n\n## Session 1 \u2014 8 May 2023\n\nBob: second\n"
    turns = parse_transcript(text).turns
    assert [(t.speaker, t.session, t.position, t.said) for t in turns] == [
        ("Alice", 0, 1, None),
        ("Bob", 1, 2, at(2023, 5, 8)),
    ]


def test_undated_session_headings_and_the_title_heading() -> None:
    text = (
        "# The chat\n\n## Session one\n\nAlice: hi\n\n"
        "## Aside\nnot a turn\n\n# Another title\n\n## Session two\n\nBob: bye\n"
    )
    transcript = parse_transcript(text)
    assert transcript.title == "The chat"
    assert transcript.sessions == (
        Session(1, "Session one", None),
        Session(2, "Session two", None),
    )
    # A heading closes the open turn: what follows it without a speaker is not a turn's.
    assert [(t.speaker, t.text, t.session) for t in transcript.turns] == [
        ("Alice", "hi", 1),
        ("Bob", "bye", 2),
    ]


def test_a_heading_that_holds_a_date_is_a_session_even_without_the_word() -> None:
    transcript = parse_transcript("## May 8, 2023 13:56\n\nAlice: hi\n")
    assert transcript.title == ""
    assert transcript.sessions == (Session(1, "May 8, 2023 13:56", SESSION_1),)
    assert transcript.turns[0].said == SESSION_1


SESSION_HEADING = "## Session 1 \u2014 1:56 pm on 8 May, 2023\n\n"


@pytest.mark.parametrize(
    ("lead", "said"),
    [
        ("", SESSION_1),
        ("[14:02] ", at(2023, 5, 8, 14, 2)),
        ("[2:01 pm] ", at(2023, 5, 8, 14, 1)),
        ("[9am] ", at(2023, 5, 8, 9, 0)),
        ("[2023-05-09 10:00] ", at(2023, 5, 9, 10, 0)),
        ("[2023-05-09T10:00:00+02:00] ", at(2023, 5, 9, 10, 0, tz=PLUS_2)),
        ("[10 May 2023, 8:15 am] ", at(2023, 5, 10, 8, 15)),
        ("[soon] ", SESSION_1),
    ],
)
def test_a_turn_time_in_brackets_refines_or_replaces_the_session_time(
    lead: str, said: dt.datetime
) -> None:
    [turn] = parse_transcript(f"{SESSION_HEADING}{lead}Melanie: Hi!\n").turns
    assert turn.said == said
    assert turn.said.tzinfo is not None


@pytest.mark.parametrize(
    ("lead", "said"),
    [("[14:02] ", None), ("[2023-05-09 10:00] ", at(2023, 5, 9, 10, 0))],
)
def test_without_a_session_time_only_a_full_date_gives_a_turn_time(
    lead: str, said: dt.datetime | None
) -> None:
    [turn] = parse_transcript(f"## Session 1\n\n{lead}Melanie: Hi!\n").turns
    assert turn.said == said


def test_naive_times_are_read_in_the_given_zone() -> None:
    text = f"{SESSION_HEADING}Caroline: Hi\n[2:01 pm] Melanie: Hello\n"
    transcript = parse_transcript(text, zone=MINUS_7)
    assert transcript.sessions[0].said == at(2023, 5, 8, 13, 56, tz=MINUS_7)
    assert [t.said for t in transcript.turns] == [
        at(2023, 5, 8, 13, 56, tz=MINUS_7),
        at(2023, 5, 8, 14, 1, tz=MINUS_7),
    ]
    assert transcript.turns[1].said == at(2023, 5, 8, 21, 1)  # the same instant in UTC


def test_a_bold_speaker_with_the_colon_inside_the_bold_starts_a_turn() -> None:
    text = "Melanie: I went to the lake.\n**Caroline:** That sounds lovely.\n"
    assert turns_of(text) == [
        ("Melanie", "I went to the lake.", None),
        ("Caroline", "That sounds lovely.", None),
    ]


# --- parse_when, refine, day_label ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("1:56 pm on 8 May, 2023", at(2023, 5, 8, 13, 56)),
        ("Session 1 \u2014 1:56 pm on 8 May, 2023", at(2023, 5, 8, 13, 56)),
        ("1:56 p.m. on 8 May, 2023", at(2023, 5, 8, 13, 56)),
        ("8 MAY 2023 1:56 PM", at(2023, 5, 8, 13, 56)),
        ("9 a.m. on 8 May 2023", at(2023, 5, 8, 9, 0)),
        ("8 May 2023", at(2023, 5, 8)),
        ("8th of May 2023", at(2023, 5, 8)),
        ("Monday, 8 May 2023", at(2023, 5, 8)),
        ("May 8, 2023 13:56", at(2023, 5, 8, 13, 56)),
        ("May 8th, 2023 at 1:56pm", at(2023, 5, 8, 13, 56)),
        ("Sept. 3rd, 2023 9am", at(2023, 9, 3, 9, 0)),
        ("Dec 1 2023 12am", at(2023, 12, 1, 0, 0)),
        ("12 pm 1 Jan 2024", at(2024, 1, 1, 12, 0)),
        ("29 February 2024", at(2024, 2, 29)),
        ("2023-05-08", at(2023, 5, 8)),
        ("2023-5-8", at(2023, 5, 8)),
        ("2023-05-08 13:56", at(2023, 5, 8, 13, 56)),
        ("2023-05-08T13:56:07.123", dt.datetime(2023, 5, 8, 13, 56, 7, tzinfo=UTC)),
        ("2023-05-08T13:56:00Z", at(2023, 5, 8, 13, 56)),
        ("2023-05-08T13:56:00+02:00", at(2023, 5, 8, 13, 56, tz=PLUS_2)),
        (
            "2023-05-08T13:56:00-0530",
            at(2023, 5, 8, 13, 56, tz=dt.timezone(-dt.timedelta(hours=5, minutes=30))),
        ),
        ("Session 1 (2023-05-08T13:56:00Z)", at(2023, 5, 8, 13, 56)),
    ],
)
def test_parse_when_reads_common_date_forms(text: str, when: dt.datetime) -> None:
    got = parse_when(text)
    assert got == when
    assert got is not None
    assert got.utcoffset() == when.utcoffset()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "13:56",
        "1:56 pm",
        "May 2023",
        "8 May",
        "Session 1",
        "2023-02-30",
        "2023-13-01",
        "31 Feb 2023",
        "Sep 31 2023",
        "29 February 2023",
        "the 8th",
    ],
)
def test_parse_when_without_a_whole_valid_date_is_none(text: str) -> None:
    assert parse_when(text) is None


def test_parse_when_reads_naive_times_in_the_zone_and_keeps_explicit_offsets() -> None:
    assert parse_when("1:56 pm on 8 May, 2023", MINUS_7) == at(2023, 5, 8, 13, 56, tz=MINUS_7)
    assert parse_when("2023-05-08 13:56", MINUS_7) == at(2023, 5, 8, 13, 56, tz=MINUS_7)
    explicit = parse_when("2023-05-08T13:56:00Z", MINUS_7)
    assert explicit == at(2023, 5, 8, 13, 56)
    assert explicit is not None
    assert explicit.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize(
    "text",
    ["2023-05-08 1:56 pm", "2023-05-08 at 1:56 pm"],
)
def test_parse_when_reads_an_iso_date_with_a_twelve_hour_clock(text: str) -> None:
    assert parse_when(text) == at(2023, 5, 8, 13, 56)


@pytest.mark.parametrize(
    ("session", "text", "when"),
    [
        (SESSION_1, "14:02", at(2023, 5, 8, 14, 2)),
        (SESSION_1, "2:01 pm", at(2023, 5, 8, 14, 1)),
        (SESSION_1, "14:02:30", dt.datetime(2023, 5, 8, 14, 2, 30, tzinfo=UTC)),
        (SESSION_1, "2023-05-09 10:00", at(2023, 5, 9, 10, 0)),
        (SESSION_1, "9 May 2023", at(2023, 5, 9)),
        (SESSION_1, "garbage", SESSION_1),
        (SESSION_1, "", SESSION_1),
        (SESSION_1, "25:00", SESSION_1),
        (None, "14:02", None),
        (None, "2023-05-09 10:00", at(2023, 5, 9, 10, 0)),
        (
            dt.datetime(2023, 5, 8, 13, 56, 30, 999, tzinfo=MINUS_7),
            "2:01 pm",
            at(2023, 5, 8, 14, 1, tz=MINUS_7),
        ),
    ],
)
def test_refine(session: dt.datetime | None, text: str, when: dt.datetime | None) -> None:
    got = refine(session, text, UTC)
    assert got == when
    if got is not None and when is not None:
        assert got.utcoffset() == when.utcoffset()
        assert got.microsecond == when.microsecond


@pytest.mark.parametrize(
    ("day", "label"),
    [
        (dt.date(2023, 5, 8), "8 May 2023"),
        (dt.date(2024, 12, 31), "31 December 2024"),
        (dt.date(2024, 1, 1), "1 January 2024"),
        (dt.date(2023, 9, 30), "30 September 2023"),
    ],
)
def test_day_label(day: dt.date, label: str) -> None:
    assert day_label(day) == label


# --- render_transcript ---------------------------------------------------------------------


def test_render_transcript_writes_headings_stamps_and_turns() -> None:
    sessions = [
        WrittenSession(
            "First chat",
            SESSION_1,
            [
                WrittenTurn("Caroline", "Hey Mel!\n  Good to see you"),
                WrittenTurn("Melanie", "Hi", at(2023, 5, 8, 14, 1)),
                WrittenTurn("Nobody", "   "),
                WrittenTurn("Caroline", "Same time", SESSION_1),
            ],
        ),
        WrittenSession("", None, [WrittenTurn("Bob", "no time")]),
        WrittenSession("retro #3", None, [WrittenTurn("Bob", "undated")]),
        WrittenSession("Session #4", at(2023, 5, 9, 9, 0, tz=PLUS_2), [WrittenTurn("Bob", "tz")]),
    ]
    assert render_transcript("Caroline and\nMelanie", sessions) == (
        "# Caroline and Melanie\n"
        "\n## First chat (2023-05-08T13:56:00Z)\n"
        "\nCaroline: Hey Mel! Good to see you\n"
        "\n[2023-05-08T14:01:00Z] Melanie: Hi\n"
        "\nCaroline: Same time\n"
        "\n## Session 2\n"
        "\nBob: no time\n"
        "\n## Session 3: retro 3\n"
        "\nBob: undated\n"
        "\n## Session 4 (2023-05-09T09:00:00+02:00)\n"
        "\nBob: tz\n"
    )


@pytest.mark.parametrize(
    ("speaker", "written"),
    [
        ("Mel: the [best]", "**Mel the best**"),  # bold: it would not read back plain
        ("**Mel**", "Mel"),
        ("Mel\nSmith", "Mel Smith"),
        ("", "Unknown"),
        (" :: ", "Unknown"),
    ],
)
def test_render_transcript_cleans_a_speaker_name(speaker: str, written: str) -> None:
    text = render_transcript("", [WrittenSession("Session 1", None, [WrittenTurn(speaker, "hi")])])
    assert text == f"## Session 1\n\n{written}: hi\n"


def test_render_transcript_of_nothing_is_an_empty_line() -> None:
    assert render_transcript("  ", []) == "\n"


ROUND_TRIP = [
    WrittenSession(
        "Session 1",
        SESSION_1,
        [
            WrittenTurn("Caroline", "Hey Mel! Good to see you!"),
            WrittenTurn("Melanie", "Hi Caroline, the reason is: I went to the lake yesterday."),
            WrittenTurn("Caroline", "Nice.", at(2023, 5, 8, 14, 5)),
            WrittenTurn("Dr. Smith", "Multi\nline\n\ntext", at(2023, 5, 9, 10, 0, tz=MINUS_7)),
        ],
    ),
    WrittenSession("Planning", None, [WrittenTurn("user", "what next?")]),
    WrittenSession("Follow-up", SESSION_2, [WrittenTurn("Jean-Luc Picard", "Engage.", SESSION_2)]),
]


def test_render_transcript_round_trips_through_parse_transcript() -> None:
    text = render_transcript("Caroline and Melanie", ROUND_TRIP)
    transcript = parse_transcript(text)
    assert transcript.title == "Caroline and Melanie"
    assert [(s.number, s.said) for s in transcript.sessions] == [
        (1, SESSION_1),
        (2, None),
        (3, SESSION_2),
    ]
    expected = [
        (turn.speaker, " ".join(turn.text.split()), turn.said or session.said, number)
        for number, session in enumerate(ROUND_TRIP, start=1)
        for turn in session.turns
    ]
    assert [(t.speaker, t.text, t.said, t.session) for t in transcript.turns] == expected
    assert all(text[t.span[0] : t.span[1]] == t.text for t in transcript.turns)


@pytest.mark.parametrize(
    "speaker",
    ["Ludwig van Beethoven", "alice smith", "42", "Alice (PM)", "@alice"],
)
def test_render_transcript_round_trips_any_speaker_name(speaker: str) -> None:
    session = WrittenSession(
        "Session 1", SESSION_1, [WrittenTurn("Zed", "first"), WrittenTurn(speaker, "hello")]
    )
    assert turns_of(render_transcript("t", [session])) == [
        ("Zed", "first", SESSION_1),
        (speaker, "hello", SESSION_1),
    ]


def test_render_transcript_round_trips_a_session_time_whose_title_holds_a_date() -> None:
    session = WrittenSession("Standup 2023-05-01", SESSION_1, [WrittenTurn("Alice", "hi")])
    assert turns_of(render_transcript("t", [session])) == [("Alice", "hi", SESSION_1)]


# --- from_json -----------------------------------------------------------------------------


def read_back(result: tuple[str, str]) -> tuple[str, list[tuple[str, str, dt.datetime | None]]]:
    title, text = result
    return title, turns_of(text)


def test_from_json_with_sessions_writes_the_markdown_transcript() -> None:
    data = {
        "title": "Caroline and Melanie",
        "sessions": [
            {
                "title": "First",
                "date": "1:56 pm on 8 May, 2023",
                "turns": [
                    {"speaker": "Caroline", "text": "Hey Mel!"},
                    {"speaker": "Melanie", "text": "Hi!", "time": "2023-05-08T14:01:00Z"},
                ],
            },
            {
                "date_time": "25 May 2023 7:00 pm",
                "turns": [{"speaker": "Caroline", "text": "Back"}],
            },
        ],
    }
    assert from_json(json.dumps(data), name="file") == (
        "Caroline and Melanie",
        "# Caroline and Melanie\n"
        "\n## First (2023-05-08T13:56:00Z)\n"
        "\nCaroline: Hey Mel!\n"
        "\n[2023-05-08T14:01:00Z] Melanie: Hi!\n"
        "\n## Session 2 (2023-05-25T19:00:00Z)\n"
        "\nCaroline: Back\n",
    )


@pytest.mark.parametrize(
    ("value", "title", "turns"),
    [
        # One session: an object with its turns (or messages) and date.
        (
            {"title": "Chat", "date": "8 May 2023", "turns": [{"speaker": "A", "text": "x"}]},
            "Chat",
            [("A", "x", at(2023, 5, 8))],
        ),
        (
            {"started_at": "2023-05-08T13:56:00Z", "messages": [{"author": "A", "body": "x"}]},
            "name",
            [("A", "x", SESSION_1)],
        ),
        # A bare list of turns: the session's time is its earliest turn's.
        (
            [
                {"role": "user", "content": "hi", "ts": 1683554160},
                {"role": "assistant", "content": "yo", "created_at": "1683554220.5"},
            ],
            "name",
            [
                ("user", "hi", at(2023, 5, 8, 13, 56)),
                ("assistant", "yo", dt.datetime(2023, 5, 8, 13, 57, tzinfo=UTC)),
            ],
        ),
        # Sessions as lists of turns.
        (
            {"sessions": [[{"name": "A", "message": "x", "timestamp": "2023-05-08 10:00"}]]},
            "name",
            [("A", "x", at(2023, 5, 8, 10, 0))],
        ),
        # A blank or non-string title falls back to the name.
        ({"title": "  ", "turns": [{"from": "A", "text": "x"}]}, "name", [("A", "x", None)]),
        ({"title": 7, "turns": [{"user": "A", "text": "x"}]}, "name", [("A", "x", None)]),
        # A speaker given as a profile object.
        (
            {"turns": [{"user": {"real_name": "Ann Lee", "name": "ann"}, "text": "x"}]},
            "name",
            [("Ann Lee", "x", None)],
        ),
        ({"turns": [{"author": {"name": "Bo"}, "text": "x"}]}, "name", [("Bo", "x", None)]),
        # Content as a list of parts.
        (
            {"turns": [{"speaker": "A", "content": [{"type": "text", "text": "one"}, "two"]}]},
            "name",
            [("A", "one two", None)],
        ),
        # Turns without text are left out; the first non-empty key wins.
        (
            {
                "turns": [
                    {"speaker": "A", "text": "  "},
                    {"speaker": "", "author": "B", "text": "", "content": "kept"},
                ]
            },
            "name",
            [("B", "kept", None)],
        ),
        # A time that is none of epoch, ISO or a written date is no time.
        ({"turns": [{"speaker": "A", "text": "x", "time": True}]}, "name", [("A", "x", None)]),
    ],
)
def test_from_json_reads_the_shapes_it_documents(
    value: Any, title: str, turns: list[tuple[str, str, dt.datetime | None]]
) -> None:
    assert read_back(from_json(json.dumps(value), name="name")) == (title, turns)


def test_from_json_reads_naive_times_in_the_zone() -> None:
    value = {"date": "2023-05-08 13:56", "turns": [{"speaker": "A", "text": "x"}]}
    _, text = from_json(json.dumps(value), name="n", zone=MINUS_7)
    assert "## Session 1 (2023-05-08T13:56:00-07:00)" in text
    [turn] = parse_transcript(text).turns
    assert turn.said == at(2023, 5, 8, 20, 56)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{", "not JSON: Expecting property name enclosed in double quotes at line 1"),
        ('{"a": 1}\n}', "not JSON: Extra data at line 2"),
        ("3", "a conversation is a JSON object or a list of turns"),
        ('"text"', "a conversation is a JSON object or a list of turns"),
        ("null", "a conversation is a JSON object or a list of turns"),
        ('{"title": "x"}', "a conversation object needs `sessions` or `turns` (or `messages`)"),
        ('{"Turns": []}', "a conversation object needs `sessions` or `turns` (or `messages`)"),
        ("[]", "the conversation has no turns with text"),
        ('{"sessions": []}', "the conversation has no turns with text"),
        ('{"turns": [{"speaker": "A", "text": " "}]}', "the conversation has no turns with text"),
        ("[1]", "turns[0] is not an object"),
        ('[{"speaker": "A", "text": "x"}, "y"]', "turns[1] is not an object"),
        (
            '[{"text": "hi"}]',
            "turns[0] has no speaker (one of: speaker, author, user, name, from, role)",
        ),
        ('{"turns": "x"}', "sessions[0].turns is not a list of turns"),
        ('{"messages": {}}', "sessions[0].turns is not a list of turns"),
        ('{"sessions": [3]}', "sessions[0] is not an object"),
        ('{"sessions": [{"turns": [1]}]}', "sessions[0].turns[0] is not an object"),
        ('{"sessions": [[], [{"text": "x"}]]}', "sessions[1][0] has no speaker"),
    ],
)
def test_from_json_says_why_a_file_is_not_a_conversation(data: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        from_json(data, name="n")


def test_from_json_caps_the_turns_of_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_TURNS", 2)
    rows = [{"speaker": "A", "text": str(n)} for n in range(3)]
    with pytest.raises(ValueError, match=r"^turns holds 3 turns, over the cap of 2$"):
        from_json(json.dumps(rows), name="n")
    assert read_back(from_json(json.dumps(rows[:2]), name="n"))[1] == [
        ("A", "0", None),
        ("A", "1", None),
    ]


@pytest.mark.parametrize(
    ("row", "shown"),
    [
        # An image with a caption (LoCoMo, chat exports), alt text, a type or MIME type.
        ({"images": [{"caption": "a photo of a lake"}]}, ["[image: a photo of a lake]"]),
        ({"attachments": [{"type": "image", "alt_text": "a red door"}]}, ["[image: a red door]"]),
        ({"files": [{"mimetype": "image/png", "title": "Diagram"}]}, ["[image: Diagram]"]),
        ({"files": [{"filetype": "JPG", "name": "IMG_1.jpg"}]}, ["[image: IMG_1.jpg]"]),
        # A file or an unfurled link: its title, else its fallback text.
        ({"files": [{"mimetype": "application/pdf", "title": "Q3 plan"}]}, ["[file: Q3 plan]"]),
        ({"attachments": [{"fallback": "Build #12 passed"}]}, ["[file: Build #12 passed]"]),
        # A single object, strings, several lists, in the order of the keys.
        ({"attachments": {"caption": "one"}}, ["[file: one]"]),
        ({"images": ["a cat", "a dog"]}, ["[image: a cat]", "[image: a dog]"]),
        (
            {"media": [{"type": "video", "description": "clip"}], "attachments": ["notes"]},
            ["[file: notes]", "[video: clip]"],
        ),
        # Brackets inside a description cannot end it early; whitespace is one space.
        ({"images": [{"caption": "a [big]\n sign"}]}, ["[image: a (big) sign]"]),
        # Nothing to say: no description, only an address, not a list, not text.
        ({"images": [{"url": "https://x/1.png"}]}, []),
        ({"images": ["https://x/1.png"]}, []),
        ({"images": "a cat"}, []),
        ({"images": [{"caption": 3}, 7, None]}, []),
        ({}, []),
    ],
)
def test_attachments_are_written_as_what_the_turn_shared(
    row: dict[str, Any], shown: list[str]
) -> None:
    assert attachments(row) == shown


def test_an_attachment_description_is_cut_at_a_word(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_ATTACHMENT_CHARS", 12)
    assert attachments({"images": ["a photo of a lake at dusk"]}) == ["[image: a photo of \u2026]"]


def test_from_json_writes_what_a_turn_shared_after_its_words() -> None:
    data = {
        "date": "8 May 2023",
        "turns": [
            {
                "speaker": "Melanie",
                "text": "Take a look at this.",
                "images": [{"url": "https://x/1.jpg", "caption": "a painting of a sunset"}],
            },
            {"speaker": "Caroline", "text": "", "attachments": [{"type": "image", "alt": "a cat"}]},
            {"speaker": "Caroline", "text": "", "attachments": [{"url": "https://x/2.jpg"}]},
        ],
    }
    assert read_back(from_json(json.dumps(data), name="n"))[1] == [
        ("Melanie", "Take a look at this. [image: a painting of a sunset]", at(2023, 5, 8)),
        # A turn that only shared something is a turn; one that shared nothing said is not.
        ("Caroline", "[image: a cat]", at(2023, 5, 8)),
    ]


def test_from_slack_day_writes_the_files_a_message_shared() -> None:
    day = json.dumps([
        {
            "type": "message", "subtype": "file_share", "user": "U1", "text": "",
            "ts": "1683554400.0",
            "files": [{"name": "plan.pdf", "title": "Q3 plan", "mimetype": "application/pdf"}],
        },
    ])  # fmt: skip
    _, text = from_slack_day(day, name="general", users={"U1": "Caroline"})
    assert turns_of(text) == [("Caroline", "[file: Q3 plan]", at(2023, 5, 8, 14, 0))]


# --- from_json_lines -----------------------------------------------------------------------


def test_from_json_lines_starts_a_session_when_the_session_key_changes() -> None:
    rows = [
        {
            "session": 1,
            "session_date": "1:56 pm on 8 May, 2023",
            "speaker": "Caroline",
            "text": "Hi",
        },
        {"session": 1, "speaker": "Melanie", "text": "Hello", "time": "2023-05-08T14:01:00Z"},
        {"session": 2, "speaker": "Caroline", "text": "Back", "time": "2023-05-25T19:00:00Z"},
        {"session": 2, "speaker": "Melanie", "text": "Yes"},
    ]
    data = "\n".join(json.dumps(row) for row in rows) + "\n\n"
    title, text = from_json_lines(data, name="chat")
    assert (title, text) == (
        "chat",
        "# chat\n"
        "\n## Session 1 (2023-05-08T13:56:00Z)\n"
        "\nCaroline: Hi\n"
        "\n[2023-05-08T14:01:00Z] Melanie: Hello\n"
        "\n## Session 2 (2023-05-25T19:00:00Z)\n"
        "\nCaroline: Back\n"
        "\nMelanie: Yes\n",
    )
    turns = parse_transcript(text).turns
    assert [(t.speaker, t.said, t.session) for t in turns] == [
        ("Caroline", SESSION_1, 1),
        ("Melanie", at(2023, 5, 8, 14, 1), 1),
        ("Caroline", SESSION_2, 2),
        ("Melanie", SESSION_2, 2),
    ]


def test_from_json_lines_without_session_keys_is_one_session() -> None:
    data = '{"speaker": "A", "text": "x"}\n\n{"author": "B", "content": "y"}\n'
    title, text = from_json_lines(data, name="chat")
    assert title == "chat"
    assert text == "# chat\n\n## Session 1\n\nA: x\n\nB: y\n"


def test_from_json_lines_leaves_out_a_session_without_text() -> None:
    data = (
        '{"session": "a", "speaker": "A", "text": " "}\n'
        '{"session": "b", "speaker": "B", "text": "y"}\n'
    )
    assert from_json_lines(data, name="n") == ("n", "# n\n\n## Session b\n\nB: y\n")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"speaker": "A", "text": "x"}\nnope', "line 2 is not JSON: Expecting value"),
        ("", "the conversation has no turns with text"),
        ("\n\n", "the conversation has no turns with text"),
        ('{"speaker": "A", "text": " "}', "the conversation has no turns with text"),
        ("[1]", "line 1 is not an object"),
        ("3", "line 1 is not an object"),
        ('\n{"text": "x"}', "line 2 has no speaker"),
    ],
)
def test_from_json_lines_says_why_a_file_is_not_a_conversation(data: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        from_json_lines(data, name="n")


# --- Slack exports --------------------------------------------------------------------------

USERS_JSON = json.dumps(
    [
        {"id": "U1", "name": "caro", "profile": {"real_name": "Caroline", "display_name": "C"}},
        {"id": "U2", "name": "mel", "profile": {"real_name": "", "display_name": "Mel"}},
        {"id": "U3", "name": "bo", "real_name": "Bo Diddley"},
        {"id": "U4", "name": "four", "profile": "not an object"},
        {"id": "U5", "profile": {"real_name": "  "}},
        {"id": 6, "name": "numeric id"},
        "not an object",
    ]
)


def test_slack_users_maps_ids_to_shown_names() -> None:
    assert slack_users(USERS_JSON) == {
        "U1": "Caroline",
        "U2": "Mel",
        "U3": "Bo Diddley",
        "U4": "four",
    }


@pytest.mark.parametrize("data", ["not json", '{"U1": "x"}', "[]", "null"])
def test_slack_users_of_anything_else_is_empty(data: str) -> None:
    assert slack_users(data) == {}


@pytest.mark.parametrize(
    ("value", "is_day"),
    [
        ([{"ts": "1683554400.000100", "text": "x"}], True),
        ([{"ts": "1"}, {"ts": "2", "subtype": "channel_join"}], True),
        ([], False),
        ([{"ts": "1"}, {"text": "no ts"}], False),
        ([{"ts": "1"}, "x"], False),
        ({"ts": "1"}, False),
        (None, False),
        ("[{}]", False),
    ],
)
def test_is_slack_day(value: Any, is_day: bool) -> None:
    assert is_slack_day(value) is is_day


SLACK_DAY = json.dumps(
    [
        {"type": "message", "user": "U2", "text": "Second", "ts": "1683554460.000200"},
        {"type": "message", "user": "U1", "text": "First", "ts": "1683554400.000100"},
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U9",
            "text": "<@U9> has joined the channel",
            "ts": "1683554300.000000",
        },
        {
            "type": "message",
            "user": "U1",
            "text": "From the profile",
            "ts": "1683554520.000000",
            "user_profile": {"real_name": "Caroline Q", "display_name": "cq"},
        },
        {"type": "message", "user": "U7", "text": "Not in users.json", "ts": "1683554580.0"},
        {
            "type": "message",
            "subtype": "bot_message",
            "username": "deploybot",
            "bot_id": "B1",
            "text": "Deployed",
            "ts": "1683554640.0",
        },
        {
            "type": "message",
            "subtype": "channel_topic",
            "user": "U1",
            "text": "topic",
            "ts": "1683554700.0",
        },
        {"type": "message", "user": "U1", "text": "   ", "ts": "1683554760.0"},
    ]
)


def test_from_slack_day_reads_messages_in_order_with_their_names_and_times() -> None:
    users = slack_users(USERS_JSON)
    title, text = from_slack_day(SLACK_DAY, name="general", users=users)
    assert title == "general"
    assert text == (
        "# general\n"
        "\n## general (2023-05-08T14:00:00Z)\n"
        "\nCaroline: First\n"
        "\n[2023-05-08T14:01:00Z] Mel: Second\n"
        "\n[2023-05-08T14:02:00Z] Caroline Q: From the profile\n"
        "\n[2023-05-08T14:03:00Z] U7: Not in users.json\n"
        "\n[2023-05-08T14:04:00Z] deploybot: Deployed\n"
    )
    assert turns_of(text) == [
        ("Caroline", "First", at(2023, 5, 8, 14, 0)),
        ("Mel", "Second", at(2023, 5, 8, 14, 1)),
        ("Caroline Q", "From the profile", at(2023, 5, 8, 14, 2)),
        ("U7", "Not in users.json", at(2023, 5, 8, 14, 3)),
        ("deploybot", "Deployed", at(2023, 5, 8, 14, 4)),
    ]


def test_from_slack_day_keeps_times_and_title_for_a_dated_day_name() -> None:
    title, text = from_slack_day(
        SLACK_DAY, name="#general 2023-05-08", users=slack_users(USERS_JSON)
    )
    transcript = parse_transcript(text)
    assert transcript.turns[0].said == at(2023, 5, 8, 14, 0)
    assert (title, transcript.title) == ("#general 2023-05-08", "#general 2023-05-08")
    assert [t.session for t in transcript.turns] == [1] * 5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{", "not JSON: Expecting property name enclosed in double quotes at line 1"),
        ("[]", "not a Slack export day: a list of messages with `ts`"),
        ('[{"text": "x"}]', "not a Slack export day: a list of messages with `ts`"),
        ('{"ts": "1"}', "not a Slack export day: a list of messages with `ts`"),
        (
            '[{"subtype": "channel_join", "user": "U1", "text": "joined", "ts": "1683554400.0"}]',
            "the conversation has no turns with text",
        ),
    ],
)
def test_from_slack_day_says_why_a_file_is_not_a_slack_day(data: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        from_slack_day(data, name="n", users={})


# --- instant --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "when"),
    [
        (1683554400, at(2023, 5, 8, 14, 0)),
        (1683554400.5, dt.datetime(2023, 5, 8, 14, 0, 0, 500000, tzinfo=UTC)),
        ("1683554400.000100", dt.datetime(2023, 5, 8, 14, 0, 0, 100, tzinfo=UTC)),
        ("1683554400", at(2023, 5, 8, 14, 0)),
        ("2023-05-08T14:00:00Z", at(2023, 5, 8, 14, 0)),
        ("2023-05-08 14:00", at(2023, 5, 8, 14, 0, tz=MINUS_7)),
        ("8 May 2023", at(2023, 5, 8, tz=MINUS_7)),
        ("12345", None),
        ("nonsense", None),
        (True, None),
        (None, None),
        ([1683554400], None),
        ({"ts": 1683554400}, None),
        (10**20, None),
        (float("nan"), None),
        (float("inf"), None),
    ],
)
def test_instant(value: Any, when: dt.datetime | None) -> None:
    got = instant(value, MINUS_7)
    assert got == when
    if got is not None and when is not None:
        assert got.utcoffset() == when.utcoffset()
