"""Sentences and passages of a text as spans (code-point offsets into that text).

Offsets are Python string indices, so `text[start:end]` is the cited evidence in any
language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from curation.domain.extraction.base import Span

_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*|\u2029\s*")
_CLOSING_MARKS = "\"')\\]\u00bb\u201d\u2019\u300d\u300f"
_SENTENCE_END = re.compile(
    rf"[.!?\u2026]+[{_CLOSING_MARKS}]*(?=\s)|[\u3002\uff01\uff1f]+[{_CLOSING_MARKS}]*"
    r"|\n(?=[^\S\n]*(?:[-*+]|\d{1,9}[.)]|#{1,6})\s)"  # a list item or heading starts
)
_LAST_WORD = re.compile(r"(\w+(?:\.\w+)*)\Z")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "inc", "ltd", "dr", "mr", "mrs", "ms", "cf"})
_JOINERS = frozenset("\u200c\u200d\u034f\ufe0e\ufe0f")


def trimmed(text: str, start: int, end: int) -> Span | None:
    """text[start:end] without its leading and trailing whitespace, or None if that is all."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences of text[start:end] as trimmed spans that cover all its non-space text."""
    end = len(text) if end is None else end
    spans: list[Span] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        # A bounded look-back: abbreviations are short, and an unbounded search is quadratic.
        word = _LAST_WORD.search(text, max(cursor, match.start() - 12), match.start())
        if match.group().startswith(".") and word and _is_abbreviation(word.group()):
            continue
        if (piece := trimmed(text, cursor, match.end())) is not None:
            spans.append(piece)
        cursor = match.end()
    if (piece := trimmed(text, cursor, end)) is not None:
        spans.append(piece)
    return spans


def _is_abbreviation(word: str) -> bool:
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def passage_spans(text: str, *, max_chars: int) -> list[Span]:
    """Passages of at most max_chars: whole paragraphs packed together when they fit,
    long paragraphs cut between sentences, long sentences cut between words.

    Only a single "word" longer than max_chars (a run without whitespace, such as CJK or
    Thai text or a long URL) is cut inside, and never before a combining mark or joiner.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    units: list[Span] = []
    cursor = 0
    for match in [*_PARAGRAPH_BREAK.finditer(text), None]:
        stop = len(text) if match is None else match.start()
        if (paragraph := trimmed(text, cursor, stop)) is not None:
            units.extend(_fitting_units(text, paragraph, max_chars))
        cursor = stop if match is None else match.end()
    passages: list[Span] = []
    for start, end in units:
        if passages and end - passages[-1][0] <= max_chars:
            passages[-1] = (passages[-1][0], end)
        else:
            passages.append((start, end))
    return passages


def _fitting_units(text: str, paragraph: Span, limit: int) -> Iterator[Span]:
    if paragraph[1] - paragraph[0] <= limit:
        yield paragraph
        return
    for start, end in sentence_spans(text, *paragraph):
        if end - start <= limit:
            yield (start, end)
        else:
            yield from _word_chunks(text, start, end, limit)


def _word_chunks(text: str, start: int, end: int, limit: int) -> Iterator[Span]:
    while end - start > limit:
        cut = next((i for i in range(start + limit, start, -1) if text[i].isspace()), None)
        if cut is None:
            cut = start + limit
            while cut > start + 1 and (_is_attached(text[cut]) or text[cut - 1] in _JOINERS):
                cut -= 1
        chunk = trimmed(text, start, cut)
        if chunk is not None:
            yield chunk
        start = cut
        while text[start].isspace():
            start += 1
    yield (start, end)


def _is_attached(char: str) -> bool:
    """True for a character that must not begin a chunk (it belongs to the one before)."""
    return char in _JOINERS or unicodedata.category(char).startswith("M")
