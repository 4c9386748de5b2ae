"""The conversation extractor: one dated, attributed STATES claim per turn of a transcript.

Pure unit tests: no database, no network.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from curation.domain.extraction.base import ExtractionError
from curation.domain.extraction.conversation import ConversationExtractor
from curation.domain.records import ExtractedClaim, SourceRecord

UTC = dt.UTC
MINUS_7 = dt.timezone(dt.timedelta(hours=-7))


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, tz: dt.tzinfo = UTC
) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, tzinfo=tz)


SAID = at(2023, 5, 8, 13, 56)
HEADING = "## Session 1 \u2014 1:56 pm on 8 May, 2023\n\n"

CHAT = SourceRecord(
    external_id="chats/caroline-melanie.md",
    content=b"",
    mime="text/markdown",
    title="Caroline and Melanie",
)

TRANSCRIPT = f"""\
# Caroline and Melanie

{HEADING}Caroline: Hey Mel! Good to see you!
I went to the lake yesterday.

[2:01 pm] Melanie: Hi Caroline, the reason is: I was busy.

**Caroline**: See you tomorrow!

[2023-05-09 10:00] Melanie: I painted two days ago.
"""


def extract(
    text: str,
    record: SourceRecord = CHAT,
    *,
    zone: dt.tzinfo = UTC,
    max_turn_chars: int = 1500,
) -> list[ExtractedClaim]:
    extractor = ConversationExtractor(zone=zone, max_turn_chars=max_turn_chars)
    return list(extractor.extract(record, text))


def cited(text: str, claim: ExtractedClaim) -> str:
    assert claim.span is not None
    return text[claim.span[0] : claim.span[1]]


def test_each_turn_gives_one_dated_attributed_states_claim() -> None:
    claims = extract(TRANSCRIPT)
    assert [(c.fact_text, c.valid_from) for c in claims] == [
        (
            "On 8 May 2023, Caroline said: Hey Mel! Good to see you! "
            "I went to the lake yesterday. (yesterday = 7 May 2023)",
            at(2023, 5, 7),
        ),
        (
            "On 8 May 2023, Melanie said: Hi Caroline, the reason is: I was busy.",
            at(2023, 5, 8, 14, 1),
        ),
        (
            "On 8 May 2023, Caroline said: See you tomorrow! (tomorrow = 9 May 2023)",
            SAID,
        ),
        (
            "On 9 May 2023, Melanie said: I painted two days ago. (two days ago = 7 May 2023)",
            at(2023, 5, 7),
        ),
    ]
    for claim in claims:
        assert claim.subject == "Caroline and Melanie"
        assert claim.subject_type == "document"
        assert claim.predicate == "STATES"
        assert claim.object_literal == claim.fact_text
        assert claim.object_name is None
        assert claim.confidence == 1.0
        assert claim.valid_to is None


def test_a_claim_cites_the_turn_words_in_the_transcript() -> None:
    claims = extract(TRANSCRIPT)
    assert [cited(TRANSCRIPT, c) for c in claims] == [
        "Hey Mel! Good to see you!\nI went to the lake yesterday.",
        "Hi Caroline, the reason is: I was busy.",
        "See you tomorrow!",
        "I painted two days ago.",
    ]
    for claim in claims:
        words = " ".join(cited(TRANSCRIPT, claim).split())
        assert re.match(r"On \d{1,2} \w+ \d{4}, \w+ said: ", claim.fact_text)
        assert claim.fact_text.split(" said: ", 1)[1].startswith(words)


@pytest.mark.parametrize(
    ("words", "statement", "valid_from"),
    [
        ("Nothing relative here.", "Nothing relative here.", SAID),
        (
            "I went to the lake yesterday.",
            "I went to the lake yesterday. (yesterday = 7 May 2023)",
            at(2023, 5, 7),
        ),
        (
            "I ran two days ago.",
            "I ran two days ago. (two days ago = 6 May 2023)",
            at(2023, 5, 6),
        ),
        (
            "I painted it last week.",
            "I painted it last week. (last week = the week of 1 May 2023)",
            at(2023, 5, 1),
        ),
        (
            "We moved last month.",
            "We moved last month. (last month = April 2023)",
            at(2023, 4, 1),
        ),
        (
            "I saw her last Friday.",
            "I saw her last Friday. (last Friday = 5 May 2023)",
            at(2023, 5, 5),
        ),
        # Today and the future are not a past day: the turn holds from when it was said.
        ("Today was nice.", "Today was nice. (Today = 8 May 2023)", SAID),
        ("See you tomorrow!", "See you tomorrow! (tomorrow = 9 May 2023)", SAID),
        (
            "It ships next week.",
            "It ships next week. (next week = the week of 15 May 2023)",
            SAID,
        ),
        # Two different past days: which one the statement holds from is unclear.
        (
            "Yesterday I swam and last week I ran.",
            "Yesterday I swam and last week I ran. "
            "(Yesterday = 7 May 2023; last week = the week of 1 May 2023)",
            SAID,
        ),
        # A past day and a future one: the past day.
        (
            "I bought it yesterday and return it tomorrow.",
            "I bought it yesterday and return it tomorrow. "
            "(yesterday = 7 May 2023; tomorrow = 9 May 2023)",
            at(2023, 5, 7),
        ),
    ],
)
def test_relative_times_are_resolved_after_the_words_and_set_the_valid_time(
    words: str, statement: str, valid_from: dt.datetime
) -> None:
    [claim] = extract(f"{HEADING}Caroline: {words}\n")
    assert claim.fact_text == f"On 8 May 2023, Caroline said: {statement}"
    assert claim.valid_from == valid_from


@pytest.mark.parametrize(
    ("words", "statement", "valid_from"),
    [
        pytest.param(
            "Today I rested, because I ran two days ago.",
            "Today I rested, because I ran two days ago. "
            "(Today = 8 May 2023; two days ago = 6 May 2023)",
            at(2023, 5, 6),
            id="today-and-one-past-day",
        ),
        pytest.param(
            "I swam yesterday, and yesterday it was sunny.",
            "I swam yesterday, and yesterday it was sunny. (yesterday = 7 May 2023)",
            at(2023, 5, 7),
            id="one-past-day-named-twice",
        ),
    ],
)
def test_a_turn_that_names_one_past_day_holds_from_it(
    words: str, statement: str, valid_from: dt.datetime
) -> None:
    [claim] = extract(f"{HEADING}Caroline: {words}\n")
    assert claim.fact_text == f"On 8 May 2023, Caroline said: {statement}"
    assert claim.valid_from == valid_from


def test_a_turn_time_of_its_own_dates_its_claim() -> None:
    text = f"{HEADING}[2023-05-10 09:00] Melanie: I left yesterday.\n"
    [claim] = extract(text)
    assert claim.fact_text == (
        "On 10 May 2023, Melanie said: I left yesterday. (yesterday = 9 May 2023)"
    )
    assert claim.valid_from == at(2023, 5, 9)


def test_the_valid_day_is_in_the_zone_of_the_turn_time() -> None:
    text = "## Session 1 \u2014 11:30 pm on 8 May, 2023\n\nCaroline: I left yesterday.\n"
    [claim] = extract(text, zone=MINUS_7)
    assert claim.fact_text == (
        "On 8 May 2023, Caroline said: I left yesterday. (yesterday = 7 May 2023)"
    )
    assert claim.valid_from == at(2023, 5, 7, tz=MINUS_7)
    assert claim.valid_from is not None
    assert claim.valid_from.utcoffset() == dt.timedelta(hours=-7)


def test_a_long_turn_is_split_at_sentences_and_every_part_keeps_speaker_and_date() -> None:
    sentences = [f"Sentence number {n} is here." for n in range(12)]
    text = f"{HEADING}Caroline: {' '.join(sentences)}\nYesterday I swam.\n\nMelanie: Short.\n"
    claims = extract(text, max_turn_chars=60)
    *parts, last, short = claims
    assert [cited(text, c) for c in parts] == [
        f"{sentences[n]} {sentences[n + 1]}" for n in range(0, 12, 2)
    ]
    assert cited(text, last) == "Yesterday I swam."
    for claim in [*parts, last]:
        assert claim.fact_text.startswith("On 8 May 2023, Caroline said: ")
        assert claim.span is not None
        assert claim.span[1] - claim.span[0] <= 60
    assert [c.valid_from for c in parts] == [SAID] * 6
    assert last.fact_text == (
        "On 8 May 2023, Caroline said: Yesterday I swam. (Yesterday = 7 May 2023)"
    )
    assert last.valid_from == at(2023, 5, 7)
    assert short.fact_text == "On 8 May 2023, Melanie said: Short."
    # The parts together are the whole turn, in order, and nothing else.
    words = " ".join(cited(text, c) for c in [*parts, last])
    assert words == " ".join([*sentences, "Yesterday I swam."])


def test_a_turn_within_the_limit_is_one_claim() -> None:
    words = "One. Two. Three."
    [claim] = extract(f"{HEADING}Caroline: {words}\n", max_turn_chars=len(words))
    assert claim.fact_text == f"On 8 May 2023, Caroline said: {words}"


def test_a_transcript_without_dates_is_dated_by_the_record() -> None:
    record = SourceRecord(
        external_id="x.md", content=b"", mime="text/markdown", updated_at=at(2024, 1, 2, 3, 4)
    )
    [claim] = extract("# Title here\n\nAlice: I left yesterday.\n", record)
    assert claim.subject == "Title here"
    assert claim.fact_text == (
        "On 2 January 2024, Alice said: I left yesterday. (yesterday = 1 January 2024)"
    )
    assert claim.valid_from == at(2024, 1, 1)


def test_a_turn_with_no_time_at_all_is_undated() -> None:
    record = SourceRecord(external_id="chats/x.md", content=b"", mime="text/markdown")
    [claim] = extract("Alice: I left yesterday.\n", record)
    assert claim.subject == "chats/x.md"
    assert claim.fact_text == "Alice said: I left yesterday."
    assert claim.valid_from is None


@pytest.mark.parametrize(
    ("title", "external_id", "subject"),
    [
        ("Record title", "id", "Record title"),
        ("  ", "id", "Transcript title"),
        ("", "id", "Transcript title"),
    ],
)
def test_the_claims_subject_is_the_record_title_else_the_transcript_title(
    title: str, external_id: str, subject: str
) -> None:
    record = SourceRecord(external_id=external_id, content=b"", mime="text/markdown", title=title)
    [claim] = extract(f"# Transcript title\n\n{HEADING}Alice: hi\n", record)
    assert claim.subject == subject


def test_a_conversation_with_nothing_to_name_it_by_is_an_error() -> None:
    record = SourceRecord(external_id="  ", content=b"", mime="text/markdown")
    with pytest.raises(ExtractionError, match="no title or id"):
        extract("Alice: hi\n", record)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# Just a title\n",
        f"{HEADING}no speaker here, just words\n",
        "the reason is: nothing\n",
    ],
)
def test_a_transcript_without_turns_is_an_extraction_error(text: str) -> None:
    with pytest.raises(ExtractionError, match=r"^no turns in the transcript: a turn is a line"):
        extract(text)


def test_an_extraction_error_is_a_value_error() -> None:
    assert issubclass(ExtractionError, ValueError)


def test_the_turn_limit_must_be_positive_and_is_in_the_version() -> None:
    with pytest.raises(ValueError, match="max_turn_chars must be at least 1"):
        ConversationExtractor(max_turn_chars=0)
    assert ConversationExtractor().version == "conversation/1/turns-1500"
    assert ConversationExtractor(max_turn_chars=60).version == "conversation/1/turns-60"


def test_identical_turns_at_different_places_are_both_kept() -> None:
    text = f"{HEADING}Alice: hi\n\nAlice: hi\n"
    claims = extract(text)
    assert [c.fact_text for c in claims] == ["On 8 May 2023, Alice said: hi"] * 2
    assert [cited(text, c) for c in claims] == ["hi", "hi"]
    assert [c.span for c in claims] == [
        (len(HEADING) + 7, len(HEADING) + 9),
        (len(HEADING) + 18, len(HEADING) + 20),
    ]
