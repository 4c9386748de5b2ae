"""Markdown read as plain text, every kept character still pointing at the original.

One reading of the block structure (`markdown_lines`) serves two uses: the cue
extractor reads blocks of clean sentences (`markdown_blocks`, fenced code left out),
and a passage states its text without Markdown syntax (`plain_text`, fenced code kept
as text, only its fences dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from curation.domain.extraction.base import Span
from curation.domain.extraction.segments import trimmed

# blank: a paragraph break; break: a line of syntax only (a rule, a table's delimiter row)
LineKind = Literal["code", "fence", "blank", "break", "heading", "item", "row", "text"]

_FENCE = re.compile(r"\s{0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"\s{0,3}([-*_])(?:\s*\1){2,}\s*\Z")
_SETEXT = re.compile(r"\s{0,3}=+\s*\Z")  # the underline of a "Title\n=====" heading
_TABLE_DELIMITER = re.compile(r"\s*\|?(?:\s*:?-+:?\s*\|)+(?:\s*:?-+:?\s*)?\Z")
_REFERENCE = re.compile(r"\s{0,3}\[[^\[\]\n]+\]:\s*\S")  # [id]: https://...
_HEADING = re.compile(r"\s{0,3}#{1,6}(?:\s+|\Z)")
_HEADING_TAIL = re.compile(r"\s+#+\s*\Z")
_QUOTE = re.compile(r"\s*(?:>\s?)+")
_BLOCK_START = re.compile(r"\s*(?:(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?|(?=\|))")
# Emphasis only as a pair around non-space text, so "5 * 3", "p < 0.05*" or a lone "_"
# keep their characters; code spans first, so what is inside them stays as written.
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|!?\[(?P<label>[^\[\]\n]*)\](?:\([^()\n]*\)|\[[^\[\]\n]*\])"
    r"|<(?P<url>(?:https?|mailto):[^<>\s]+)>"
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>"
    r"|(?<!\*)(?P<stars>\*{1,3})(?=[^\s*])(?P<starred>.+?)(?<=[^\s*])(?P=stars)(?!\*)"
    r"|(?<![\w_])(?P<lines>_{1,3})(?=[^\s_])(?P<lined>.+?)(?<=[^\s_])(?P=lines)(?![\w_])"
    r"|~~.+?~~"  # struck out: no longer said, so not shown
    r"|`+"
)
_INNER = ("label", "starred", "lined")  # groups whose text is Markdown again


@dataclass(frozen=True)
class Line:
    """One line of Markdown: what kind of block it is and where its content lies.

    `start`/`end` is the content (quote, heading and list markers removed);
    `line_start`/`line_end` the whole line without its line break, `stop` with it.
    """

    kind: LineKind
    start: int
    end: int
    line_start: int
    line_end: int
    stop: int


def markdown_lines(text: str) -> Iterator[Line]:
    """The lines of Markdown text, classified; fenced code is told apart from prose."""
    fence: str | None = None
    offset = 0
    kind: LineKind
    for raw in text.splitlines(keepends=True):
        end = offset + (len(raw.splitlines()[0]) if raw.strip("\r\n") else 0)
        opened = _FENCE.match(text, offset, end)
        if fence is not None:
            marker = opened.group(1) if opened else ""
            closes = marker[:1] == fence[0] and len(marker) >= len(fence)
            fence = None if closes else fence
            kind, start, stop = ("fence" if closes else "code"), offset, end
        elif opened:
            fence = opened.group(1)
            kind, start, stop = "fence", offset, end
        else:
            kind, start, stop = _prose_line(text, offset, end)
        yield Line(kind, start, stop, offset, end, offset + len(raw))
        offset += len(raw)


def _prose_line(text: str, line_start: int, end: int) -> tuple[LineKind, int, int]:
    """(kind, content start, content end) of a line outside fenced code."""
    quote = _QUOTE.match(text, line_start, end)
    start = quote.end() if quote else line_start
    line = text[start:end]
    if not line.strip():
        return "blank", start, end
    if any(p.match(line) for p in (_RULE, _SETEXT, _TABLE_DELIMITER, _REFERENCE)):
        return "break", start, end
    if heading := _HEADING.match(line):
        tail = _HEADING_TAIL.search(line)
        first = start + heading.end()
        stop = start + tail.start() if tail else end
        return "heading", first, max(stop, first)
    if block := _BLOCK_START.match(line):
        kind: LineKind = "row" if line[block.end() :].startswith("|") else "item"
        return kind, start + block.end(), end
    return "text", start, end


def inline_kept(text: str, start: int, end: int) -> Iterator[Span]:
    """The parts of text[start:end] that inline Markdown (code, links, emphasis) displays."""
    cursor = start
    for match in _INLINE.finditer(text, start, end):
        yield (cursor, match.start())
        if match.group("code") is not None:
            yield match.span("code")
        elif match.group("url") is not None:
            yield match.span("url")
        elif inner := next((name for name in _INNER if match.group(name) is not None), None):
            yield from inline_kept(text, *match.span(inner))
        cursor = match.end()
    yield (cursor, end)


# --- blocks of sentences, for the cue extractor ---------------------------------------


@dataclass
class Plain:
    """Cleaned text whose every character remembers its index in the original text."""

    chars: list[str] = field(default_factory=list)
    origin: list[int] = field(default_factory=list)

    def add(self, text: str, start: int, end: int) -> None:
        self.chars.extend(text[start:end])
        self.origin.extend(range(start, end))

    def span(self, start: int, end: int) -> Span:
        return (self.origin[start], self.origin[end - 1] + 1)


def markdown_blocks(text: str) -> list[Plain]:
    """Paragraphs, list items and headings as plain text; fenced code is left out."""
    reader = _BlockReader(text)
    for line in markdown_lines(text):
        reader.read(line)
    reader.flush()
    return reader.blocks


@dataclass
class _BlockReader:
    """Gathers prose lines into blocks: a heading, a list item or a paragraph each."""

    text: str
    blocks: list[Plain] = field(default_factory=list)
    current: Plain | None = None

    def read(self, line: Line) -> None:
        if line.kind == "code":
            return
        if line.kind != "text":
            self.flush()
        if line.kind in {"heading", "item", "row", "text"}:
            self._append(line.start, line.end)
        if line.kind == "heading":
            self.flush()

    def _append(self, start: int, end: int) -> None:
        if (piece := trimmed(self.text, start, end)) is None:
            return
        if self.current is None:
            self.current = Plain()
        elif self.current.chars:
            self.current.chars.append(" ")  # the line break, cited as the preceding character
            self.current.origin.append(piece[0] - 1)
        for kept in inline_kept(self.text, *piece):
            self.current.add(self.text, *kept)

    def flush(self) -> None:
        if self.current is not None and "".join(self.current.chars).strip():
            self.blocks.append(self.current)
        self.current = None


# --- plain text of a passage ----------------------------------------------------------


def plain_chars(text: str) -> list[str]:
    """What each character of Markdown text shows as plain text: itself, "" or " ".

    Markers (headings, quotes, bullets, fences, rules, emphasis, link targets, HTML tags)
    show nothing, a table's cell borders a space; fenced code shows as written. One
    entry per character, so any span of the text has its plain form.
    """
    shown = list(text)
    for line in markdown_lines(text):
        if line.kind == "code":
            continue
        if line.kind in {"fence", "break"}:  # gone with its line break: no gap is left
            shown[line.line_start : line.stop] = [""] * (line.stop - line.line_start)
            continue
        hidden = set(range(line.line_start, line.line_end))
        for start, end in inline_kept(text, line.start, line.end):
            hidden.difference_update(range(start, end))
        for index in hidden:
            shown[index] = ""
        if line.kind == "row":
            for index in range(line.start, line.end):
                shown[index] = " " if shown[index] == "|" else shown[index]
    return shown


def plain_text(shown: list[str], start: int, end: int) -> str:
    """The plain text of a span (of `plain_chars`): words single-spaced, paragraphs kept."""
    lines = [" ".join(line.split()) for line in "".join(shown[start:end]).split("\n")]
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join("\n".join(paragraph) for paragraph in paragraphs if paragraph)
