"""The extractor for conversation transcripts: one statement per turn, dated and attributed.

Each turn of a transcript (`curation.domain.conversation`) becomes a STATES claim about
the conversation whose text says who said it and when ("On 8 May 2023, Caroline said:
..."), with the relative times it mentions resolved against the turn's own time after its
words ("... I went there yesterday. (yesterday = 7 May 2023)"). A passage never splits a
turn: a turn longer than the passage limit is cut between its sentences, and every part
keeps its speaker and date. The claim cites the turn's own words in the transcript.

Valid time: a turn's statement holds from when it was said; a turn that says when
something happened in the past ("yesterday", "last week") holds from that day, which is
what a question about when it happened asks for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from curation.domain.conversation import Turn, day_label, parse_transcript
from curation.domain.extraction.base import ExtractionError, unique
from curation.domain.extraction.segments import sentence_spans
from curation.domain.highlight import PASSAGE_PREDICATE
from curation.domain.records import ExtractedClaim, SourceRecord
from curation.domain.reltime import Mention, mentions

# Bump when what a turn's claim says (or which turns give claims) changes for a
# transcript already stored: reprocessing applies it to those conversations.
CONVERSATION_VERSION = 1


class ConversationExtractor:
    """Extractor for conversation transcripts: one dated, attributed statement per turn."""

    def __init__(self, *, zone: dt.tzinfo = dt.UTC, max_turn_chars: int = 1500) -> None:
        if max_turn_chars < 1:
            raise ValueError("max_turn_chars must be at least 1")
        self.zone = zone
        self.max_turn_chars = max_turn_chars

    @property
    def version(self) -> str:
        return f"conversation/{CONVERSATION_VERSION}/turns-{self.max_turn_chars}"

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        transcript = parse_transcript(text, zone=self.zone)
        if not transcript.turns:
            raise ExtractionError(
                "no turns in the transcript: a turn is a line 'Speaker: text', "
                "sessions are headings with their date"
            )
        document = record.title.strip() or transcript.title.strip() or record.external_id.strip()
        if not document:
            raise ExtractionError("the record has no title or id to name its conversation by")
        claims: list[ExtractedClaim] = []
        for turn in transcript.turns:
            said = turn.said or record.updated_at
            for start, end in self._parts(text, turn):
                claims.append(turn_claim(document, turn, " ".join(text[start:end].split()),
                                         said, span=(start, end)))  # fmt: skip
        return unique(claims)

    def _parts(self, text: str, turn: Turn) -> list[tuple[int, int]]:
        """The turn's span, or its sentences packed into parts of at most the limit."""
        start, end = turn.span
        if end - start <= self.max_turn_chars:
            return [turn.span]
        parts: list[tuple[int, int]] = []
        for first, last in sentence_spans(text, start, end):
            if parts and last - parts[-1][0] <= self.max_turn_chars:
                parts[-1] = (parts[-1][0], last)
            else:
                parts.append((first, last))
        return parts


def said_when(turn_time: dt.datetime | None) -> str:
    return f"On {day_label(turn_time.date())}, " if turn_time is not None else ""


def turn_claim(
    document: str,
    turn: Turn,
    words: str,
    said: dt.datetime | None,
    *,
    span: tuple[int, int],
) -> ExtractedClaim:
    """The claim of one turn (or one part of a long turn)."""
    found = mentions(words, said) if said is not None else []
    statement = f"{said_when(said)}{turn.speaker} said: {words}"
    if found:
        # After the words, not inside them: the turn is quoted whole, then its times.
        resolved = "; ".join(dict.fromkeys(f"{m.phrase} = {m.label}" for m in found))
        statement += f" ({resolved})"
    return ExtractedClaim(
        subject=document,
        subject_type="document",
        predicate=PASSAGE_PREDICATE,
        object_literal=statement,
        fact_text=statement,
        confidence=1.0,
        span=span,
        valid_from=_happened(found, said),
    )


def _happened(found: Sequence[Mention], said: dt.datetime | None) -> dt.datetime | None:
    """From when the turn's statement holds: the day it says something happened, when it
    names exactly one day (or span) in the past; else when it was said."""
    if said is None:
        return None
    # Distinct days (or spans) before the day it was said: "today" is not one, and a
    # day said twice is still one day.
    past = {(m.first, m.last) for m in found if m.past and m.first < said.date()}
    if len(past) != 1:
        return said
    ((first, _),) = past
    return dt.datetime.combine(first, dt.time(), tzinfo=said.tzinfo)
