"""A document's text cut into plain and marked pieces, for showing evidence spans (pure).

Spans are what extractors record: code-point offsets `(start, end)` into the decoded
text. Overlapping or touching spans become one marked piece; spans outside the text are
clipped, empty ones ignored, so a stale offset never breaks the page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The predicate of the claim every passage of a document becomes (`extraction.rules`):
# a review card lists the document's relations first, then these.
PASSAGE_PREDICATE = "STATES"


def card_order(predicate: str, start: int | None, pk: int) -> tuple[bool, int, int]:
    """Sort key of a claim in its document's card: relations, then passages; in the
    order the document says them (claims without a span last), then oldest first."""
    return (predicate == PASSAGE_PREDICATE, start if start is not None else 1 << 62, pk)


@dataclass(frozen=True)
class Piece:
    """A run of the text, marked when some evidence span covers it."""

    text: str
    marked: bool


def _merged(spans: Iterable[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    clipped = sorted(
        (max(0, start), min(length, end)) for start, end in spans if min(length, end) > start
    )
    merged: list[tuple[int, int]] = []
    for start, end in clipped:
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def highlight(text: str, spans: Iterable[tuple[int, int]]) -> list[Piece]:
    """The text as pieces in order; their texts joined are the text again."""
    pieces: list[Piece] = []
    cursor = 0
    for start, end in _merged(spans, len(text)):
        if start > cursor:
            pieces.append(Piece(text[cursor:start], marked=False))
        pieces.append(Piece(text[start:end], marked=True))
        cursor = end
    if cursor < len(text) or not pieces:
        pieces.append(Piece(text[cursor:], marked=False))
    return pieces
