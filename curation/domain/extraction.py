"""Deterministic extraction without a model (pure, standard library only).

Free text: English cue patterns and passages. Structured records: field mappings for CMDB
configuration items and Jira issues.

Offsets (`span`) are Python string indices (code points) into the text the extractor
was given, so `text[start:end]` is the cited evidence in any language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from curation.domain.records import PREDICATE_PATTERN, ExtractedClaim, SourceRecord

Span = tuple[int, int]


class ExtractionError(ValueError):
    """A record (or a model's answer about it) cannot be turned into claims at all.

    A ValueError, because ingestion records a ValueError from an extractor as the failure
    of that one episode, with this message as its reason, and carries on with the rest.
    """


class ClaimBatch(list[ExtractedClaim]):
    """Extracted claims, plus how many candidates were dropped as malformed and why."""

    def __init__(
        self, claims: Iterable[ExtractedClaim] = (), *, dropped: int = 0, notes: Sequence[str] = ()
    ) -> None:
        super().__init__(claims)
        self.dropped = dropped
        self.notes = tuple(notes)


def to_predicate(phrase: str) -> str | None:
    """The UPPER_SNAKE predicate of a relation phrase ("runs on", "runsOn" -> RUNS_ON), or None."""
    if not phrase.isascii():
        return None
    split_camel = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", phrase.strip())
    candidate = re.sub(r"[^A-Za-z0-9]+", "_", split_camel).strip("_").upper()
    return candidate if PREDICATE_PATTERN.match(candidate) else None


# --- spans, sentences, passages ---------------------------------------------------------

_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*|\u2029\s*")
_CLOSING_MARKS = "\"')\\]\u00bb\u201d\u2019\u300d\u300f"
_SENTENCE_END = re.compile(
    rf"[.!?\u2026]+[{_CLOSING_MARKS}]*(?=\s)|[\u3002\uff01\uff1f]+[{_CLOSING_MARKS}]*"
    r"|\n(?=[^\S\n]*(?:[-*+]|\d{1,9}[.)]|#{1,6})\s)"  # a list item or heading starts
)
_LAST_WORD = re.compile(r"(\w+(?:\.\w+)*)\Z")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "inc", "ltd", "dr", "mr", "mrs", "ms", "cf"})
_JOINERS = frozenset("\u200c\u200d\u034f\ufe0e\ufe0f")


def _trim(text: str, start: int, end: int) -> Span | None:
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
        if (piece := _trim(text, cursor, match.end())) is not None:
            spans.append(piece)
        cursor = match.end()
    if (piece := _trim(text, cursor, end)) is not None:
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
        if (paragraph := _trim(text, cursor, stop)) is not None:
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
        chunk = _trim(text, start, cut)
        if chunk is not None:
            yield chunk
        start = cut
        while text[start].isspace():
            start += 1
    yield (start, end)


def _is_attached(char: str) -> bool:
    """True for a character that must not begin a chunk (it belongs to the one before)."""
    return char in _JOINERS or unicodedata.category(char).startswith("M")


# --- Markdown to plain sentences, keeping offsets -------------------------------------


@dataclass
class _Plain:
    """Cleaned text whose every character remembers its index in the original text."""

    chars: list[str] = field(default_factory=list)
    origin: list[int] = field(default_factory=list)

    def add(self, text: str, start: int, end: int) -> None:
        self.chars.extend(text[start:end])
        self.origin.extend(range(start, end))

    def span(self, start: int, end: int) -> Span:
        return (self.origin[start], self.origin[end - 1] + 1)


_FENCE = re.compile(r"\s{0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"\s{0,3}([-*_])(?:\s*\1){2,}\s*\Z")
_HEADING = re.compile(r"\s{0,3}#{1,6}(?:\s+|\Z)")
_HEADING_TAIL = re.compile(r"\s+#+\s*\Z")
_QUOTE = re.compile(r"\s*(?:>\s?)+")
_BLOCK_START = re.compile(r"\s*(?:(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?|(?=\|))")
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|!?\[(?P<label>[^\[\]\n]*)\](?:\([^()\n]*\)|\[[^\[\]\n]*\])"
    r"|<(?P<url>(?:https?|mailto):[^<>\s]+)>"
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>"
    r"|~~|`+|\*{1,3}(?=\S)|(?<=\S)\*{1,3}|(?<!\w)_{1,3}(?=\S)|(?<=\S)_{1,3}(?!\w)"
)


def _clean_inline(text: str, start: int, end: int, out: _Plain) -> None:
    cursor = start
    for match in _INLINE.finditer(text, start, end):
        out.add(text, cursor, match.start())
        if match.group("code") is not None:
            out.add(text, match.start("code"), match.end("code"))
        elif match.group("label") is not None:
            _clean_inline(text, match.start("label"), match.end("label"), out)
        elif match.group("url") is not None:
            out.add(text, match.start("url"), match.end("url"))
        cursor = match.end()
    out.add(text, cursor, end)


class _MarkdownReader:
    """Splits Markdown into blocks of plain text (paragraphs, list items, headings)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.blocks: list[_Plain] = []
        self.current: _Plain | None = None
        self.fence: str | None = None

    def read(self) -> list[_Plain]:
        offset = 0
        for line in self.text.splitlines(keepends=True):
            content = line.splitlines()[0] if line.strip("\r\n") else ""
            self._line(offset, offset + len(content))
            offset += len(line)
        self._flush()
        return self.blocks

    def _line(self, start: int, end: int) -> None:
        line = self.text[start:end]
        if self._in_code(line):
            return
        quote = _QUOTE.match(line)
        start += quote.end() if quote else 0
        line = self.text[start:end]
        if not line.strip() or _RULE.match(line):
            self._flush()
        elif heading := _HEADING.match(line):
            tail = _HEADING_TAIL.search(line)
            self._flush()
            self._append(start + heading.end(), (start + tail.start()) if tail else end)
            self._flush()
        elif block := _BLOCK_START.match(line):
            self._flush()
            self._append(start + block.end(), end)
        else:
            self._append(start, end)

    def _in_code(self, line: str) -> bool:
        fence = _FENCE.match(line)
        if self.fence is not None:
            if (
                fence
                and fence.group(1)[0] == self.fence[0]
                and len(fence.group(1)) >= len(self.fence)
            ):
                self.fence = None
            return True
        if fence:
            self._flush()
            self.fence = fence.group(1)
            return True
        return False

    def _append(self, start: int, end: int) -> None:
        if (piece := _trim(self.text, start, end)) is None:
            return
        if self.current is None:
            self.current = _Plain()
        elif self.current.chars:
            self.current.chars.append(" ")  # the line break, cited as the preceding character
            self.current.origin.append(piece[0] - 1)
        _clean_inline(self.text, *piece, self.current)

    def _flush(self) -> None:
        if self.current is not None and "".join(self.current.chars).strip():
            self.blocks.append(self.current)
        self.current = None


# --- cue patterns -----------------------------------------------------------------------


class _Token(NamedTuple):
    start: int
    end: int
    text: str

    @property
    def lower(self) -> str:
        return self.text.lower().replace("\u2019", "'")


@dataclass(frozen=True)
class _Cue:
    predicate: str
    confidence: float
    passive: bool  # needs a form of "to be" before it ("is owned by")


_CUES: dict[str, _Cue] = {
    r"(?:runs|run|running)\s+on": _Cue("RUNS_ON", 0.7, passive=False),
    r"(?:depends|depend|depending)\s+on": _Cue("DEPENDS_ON", 0.7, passive=False),
    r"owned\s+by": _Cue("OWNED_BY", 0.75, passive=True),
    r"hosted\s+(?:on|in|at)": _Cue("HOSTED_IN", 0.7, passive=True),
    r"deployed\s+(?:to|on|in|into)": _Cue("DEPLOYED_TO", 0.7, passive=True),
    r"maintained\s+by": _Cue("MAINTAINED_BY", 0.7, passive=True),
    r"written\s+in": _Cue("WRITTEN_IN", 0.75, passive=True),
    r"(?:an?\s+)?part\s+of": _Cue("PART_OF", 0.7, passive=True),
    r"(?:stores|store|storing)\s+(?:its\s+|their\s+|all\s+)?data\s+in": _Cue(
        "STORES_IN", 0.65, passive=False
    ),
    r"(?:writes|write|writing)\s+to": _Cue("STORES_IN", 0.65, passive=False),
    r"(?:talks|talk|talking)\s+to|calls|call|calling": _Cue("CALLS", 0.6, passive=False),
    r"implements|implement|implementing": _Cue("IMPLEMENTS", 0.65, passive=False),
    r"uses|use|using": _Cue("USES", 0.6, passive=False),
}
_CUE_PATTERN = re.compile(
    "|".join(f"(?P<c{i}>{pattern})" for i, pattern in enumerate(_CUES)), re.IGNORECASE
)
_CUE_BY_GROUP = {f"c{i}": cue for i, cue in enumerate(_CUES.values())}
_TOKEN = re.compile(r"\w+(?:['\u2019]\w+)+|\w(?:[\w\-./+#@:]*[\w+#])?|[^\w\s]")
_CODE_LIKE = re.compile(r"\w[-_./+#]\w|\w[+#]|[a-z][A-Z]|[^\W\d]\d|\d[^\W\d]")

_COPULAS = frozenset(
    {"is", "are", "was", "were", "be", "been", "being", "isn't", "aren't", "wasn't", "weren't"}
)
_NEGATIONS = frozenset(
    {"not", "never", "no", "longer", "neither", "nor", "cannot", "formerly", "previously"}
    | {"used", "stopped", "isn't", "aren't", "wasn't", "weren't", "doesn't", "don't"}
    | {"didn't", "won't", "wouldn't", "can't", "couldn't", "shouldn't", "hasn't", "haven't"}
)
_PAST = frozenset({"was", "were", "did", "had"})
_GAP_WORDS = (
    _COPULAS
    | _NEGATIONS
    | {"am", "does", "do", "did", "has", "have", "had", "will", "would", "shall", "should"}
    | {"can", "could", "may", "might", "must", "to", "also", "currently", "still", "now"}
    | {"mainly", "mostly", "primarily", "only", "already", "always", "directly", "heavily"}
    | {"partly", "actually", "today", "internally", "exclusively", "fully", "entirely"}
    | {"usually", "typically", "again"}
)
_DETERMINERS = frozenset({"the", "a", "an", "our", "their", "its", "this", "that", "both"})
_OBJECT_NEGATIONS = frozenset({"no", "not", "neither", "none", "nothing"})
_HEAD_NOUNS = frozenset(
    {"team", "squad", "group", "service", "services", "api", "cluster", "database", "db"}
    | {"server", "servers", "platform", "app", "application", "queue", "bucket", "project"}
    | {"system", "department", "org", "organization", "organisation", "region", "account"}
)
_TEAM_NOUNS = frozenset({"team", "squad", "group", "department"})
_NOT_NAMES = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "it", "its", "we", "our", "they"}
    | {"their", "he", "she", "his", "her", "you", "your", "i", "my", "also", "currently"}
    | {"today", "now", "however", "then", "since", "after", "before", "when", "if", "each"}
    | {"every", "all", "some", "both", "there", "here", "which", "who", "what", "where"}
    | {"note", "yes", "no", "and", "or", "but", "so", "finally", "first", "next", "in", "on"}
    | {"e.g", "i.e", "etc", "please", "ensure", "make", "see", "check", "let", "how", "why"}
)
_MAX_NAME_TOKENS = 5


def _is_name_token(token: _Token) -> bool:
    text = token.text
    if token.lower in _NOT_NAMES or not text[0].isalnum() or not any(c.isalpha() for c in text):
        return False
    if _CODE_LIKE.search(text):
        return True
    return text[0].isupper() and not (text.endswith("ly") and text[1:].islower())


def _continues_name(token: _Token) -> bool:
    if _is_name_token(token) or token.lower in _HEAD_NOUNS:
        return True
    return token.text[0].isdigit()  # a version: "PostgreSQL 16", "Python 3.12"


def _name_ending_at(tokens: Sequence[_Token], last: int, floor: int) -> tuple[int, int] | None:
    first = last
    while first >= floor and last - first < _MAX_NAME_TOKENS and _continues_name(tokens[first]):
        first -= 1
    first += 1
    while first <= last and not _is_name_token(tokens[first]):
        first += 1
    return (first, last) if first <= last else None


def _name_starting_at(tokens: Sequence[_Token], first: int) -> tuple[int, int] | None:
    if first >= len(tokens) or not _is_name_token(tokens[first]):
        return None
    last = first
    while (
        last + 1 < len(tokens)
        and last + 1 - first < _MAX_NAME_TOKENS
        and _continues_name(tokens[last + 1])
    ):
        last += 1
    return (first, last)


def _skip(tokens: Sequence[_Token], index: int, words: frozenset[str]) -> int:
    while index < len(tokens) and tokens[index].lower in words:
        index += 1
    return index


def _objects_after(tokens: Sequence[_Token], index: int) -> list[tuple[int, int]]:
    """The names after a cue: "Redis", or a list "Redis, Kafka and PostgreSQL 16"."""
    names: list[tuple[int, int]] = []
    while True:
        index = _skip(tokens, index, _DETERMINERS)
        if index < len(tokens) and tokens[index].lower in _OBJECT_NEGATIONS:
            return []
        name = _name_starting_at(tokens, index)
        if name is None:
            return names
        names.append(name)
        index = _skip(tokens, name[1] + 1, frozenset({",", "and", "&"}))
        if index == name[1] + 1:
            return names


@dataclass
class _SentenceReader:
    """Finds cue-pattern relations in one cleaned sentence."""

    text: str
    tokens: list[_Token]
    subject: tuple[int, int] | None = None  # of the previous relation, for "... and uses Y"
    taken: int = -1  # the last token index already used as an object

    def relations(self) -> Iterator[tuple[str, str, _Cue, float]]:
        starts = {token.start: index for index, token in enumerate(self.tokens)}
        ends = {token.end: index for index, token in enumerate(self.tokens)}
        for match in _CUE_PATTERN.finditer(self.text):
            first, last = starts.get(match.start()), ends.get(match.end())
            if first is None or last is None or first <= self.taken:
                continue
            cue = _CUE_BY_GROUP[match.lastgroup or ""]
            yield from self._relation(first, last, cue)

    def _relation(self, first: int, last: int, cue: _Cue) -> Iterator[tuple[str, str, _Cue, float]]:
        gap_start = first
        while gap_start > self.taken + 1 and self.tokens[gap_start - 1].lower in _GAP_WORDS:
            gap_start -= 1
        gap = {token.lower for token in self.tokens[gap_start:first]}
        subject = self._subject(gap_start)
        objects = _objects_after(self.tokens, last + 1)
        if subject is None or not objects or gap & _NEGATIONS:
            return
        if cue.passive and not gap & _COPULAS:
            return
        self.subject, self.taken = subject, objects[-1][1]
        confidence = cue.confidence - (0.1 if gap & _PAST else 0.0)
        for name in objects:
            yield self._words(subject), self._words(name), cue, round(confidence, 2)

    def _subject(self, gap_start: int) -> tuple[int, int] | None:
        before = gap_start - 1
        if before >= 0 and self.tokens[before].lower == "and" and self.subject is not None:
            return self.subject  # "billing-api runs on k8s and uses Redis"
        if before <= self.taken:
            return None
        return _name_ending_at(self.tokens, before, self.taken + 1)

    def _words(self, name: tuple[int, int]) -> str:
        return " ".join(self.text[self.tokens[name[0]].start : self.tokens[name[1]].end].split())


def _entity_type(name: str, predicate: str, *, is_object: bool) -> str:
    if is_object and predicate == "WRITTEN_IN":
        return "language"
    return "team" if name.split()[-1].lower() in _TEAM_NOUNS else "thing"


def _relation_claims(block: _Plain) -> Iterator[ExtractedClaim]:
    plain = "".join(block.chars)
    for start, end in sentence_spans(plain):
        sentence = plain[start:end]
        tokens = [_Token(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(sentence)]
        for subject, obj, cue, confidence in _SentenceReader(sentence, tokens).relations():
            yield ExtractedClaim(
                subject=subject,
                predicate=cue.predicate,
                object_name=obj,
                fact_text=" ".join(sentence.split()),
                confidence=confidence,
                subject_type=_entity_type(subject, cue.predicate, is_object=False),
                object_type=_entity_type(obj, cue.predicate, is_object=True),
                span=block.span(start, end),
            )


def _unique(claims: Iterable[ExtractedClaim]) -> list[ExtractedClaim]:
    return list(dict.fromkeys(claims))


class RuleBasedExtractor:
    """Extractor for Markdown and plain text: cue-pattern relations and passages.

    Relations come from English cue phrases ("runs on", "is owned by"...) between names
    that are capitalised or code-like; negated statements give none. Every passage also
    becomes a STATES claim about the document, so every ingested word stays searchable.
    """

    def __init__(self, *, max_passage_chars: int = 800) -> None:
        if max_passage_chars < 1:
            raise ValueError("max_passage_chars must be at least 1")
        self.max_passage_chars = max_passage_chars

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        relations = [
            claim for block in _MarkdownReader(text).read() for claim in _relation_claims(block)
        ]
        return _unique(relations) + self._passages(record, text)

    def _passages(self, record: SourceRecord, text: str) -> list[ExtractedClaim]:
        spans = passage_spans(text, max_chars=self.max_passage_chars)
        if not spans:
            return []
        document = record.title.strip() or record.external_id.strip() or record.url.strip()
        if not document:
            raise ExtractionError("the record has no title, id or url to name its passages by")
        return [
            ExtractedClaim(
                subject=document,
                subject_type="document",
                predicate="STATES",
                object_literal=text[start:end],
                fact_text=text[start:end],
                confidence=1.0,
                span=(start, end),
            )
            for start, end in spans
        ]


# --- structured fields: CMDB configuration items and Jira issues ------------------------

DEFAULT_CMDB_MAPPING: Mapping[str, str] = {
    "host": "RUNS_ON",
    "runs_on": "RUNS_ON",
    "owner": "OWNED_BY",
    "owned_by": "OWNED_BY",
    "team": "OWNED_BY",
    "environment": "DEPLOYED_TO",
    "depends_on": "DEPENDS_ON",
    "location": "HOSTED_IN",
    "status": "HAS_STATUS",
    "version": "HAS_VERSION",
    "language": "WRITTEN_IN",
}
# Fields whose values are values, not names of things (a HAS_* predicate is one too).
LITERAL_FIELDS = frozenset(
    {"status", "state", "version", "lifecycle", "operational_status", "ip_address"}
)
_STRUCTURED_CONFIDENCE = 0.95
_MULTI_VALUE_SPLIT = re.compile(r"\s*[,;]\s*")
_NAME_KEYS = ("displayname", "display_name", "name", "value", "key", "id")
_CI_NAME_KEYS = ("name", "id", "sys_id", "ci_id")
_CI_TYPE_KEYS = ("type", "ci_type", "class", "sys_class_name", "category")
_PHRASES = {
    "RUNS_ON": "runs on",
    "OWNED_BY": "is owned by",
    "DEPLOYED_TO": "is deployed to",
    "DEPENDS_ON": "depends on",
    "HOSTED_IN": "is hosted in",
    "HAS_STATUS": "has status",
    "HAS_VERSION": "has version",
    "HAS_TYPE": "is of type",
    "WRITTEN_IN": "is written in",
    "MAINTAINED_BY": "is maintained by",
    "ASSIGNED_TO": "is assigned to",
    "REPORTED_BY": "was reported by",
    "PART_OF": "is part of",
    "AFFECTS": "affects",
    "BLOCKS": "blocks",
    "RELATES_TO": "relates to",
    "DUPLICATES": "duplicates",
    "CLONES": "clones",
    "CAUSES": "causes",
}
_OBJECT_TYPES = {
    "RUNS_ON": "host",
    "OWNED_BY": "team",
    "MAINTAINED_BY": "team",
    "DEPLOYED_TO": "environment",
    "HOSTED_IN": "location",
    "WRITTEN_IN": "language",
}
# Jira: field -> (predicate, object type, is a literal value)
_JIRA_FIELDS = {
    "assignee": ("ASSIGNED_TO", "person", False),
    "reporter": ("REPORTED_BY", "person", False),
    "status": ("HAS_STATUS", "status", True),
    "issuetype": ("HAS_TYPE", "issue_type", True),
    "project": ("PART_OF", "project", False),
    "components": ("AFFECTS", "component", False),
}
# Jira link phrase -> (predicate, reversed: the other issue is the subject)
_LINK_PHRASES = {
    "blocks": ("BLOCKS", False),
    "is blocked by": ("BLOCKS", True),
    "relates to": ("RELATES_TO", False),
    "relates": ("RELATES_TO", False),
    "depends on": ("DEPENDS_ON", False),
    "is depended on by": ("DEPENDS_ON", True),
    "duplicates": ("DUPLICATES", False),
    "is duplicated by": ("DUPLICATES", True),
    "duplicate": ("DUPLICATES", False),
    "clones": ("CLONES", False),
    "is cloned by": ("CLONES", True),
    "cloners": ("CLONES", False),
    "causes": ("CAUSES", False),
    "is caused by": ("CAUSES", True),
}
_SYMMETRIC = frozenset({"RELATES_TO"})


def _lower_keys(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in fields.items()}


def _values(value: Any, *, split: bool) -> list[str]:
    """The non-empty string values of a field: strings, numbers, lists, {"name": ...}."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, Mapping):
        named = _lower_keys(value)
        key = next((key for key in _NAME_KEYS if named.get(key) not in (None, "")), None)
        return [] if key is None else _values(named[key], split=split)
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [text for item in items for text in _values(item, split=split)]
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, str):
        parts = _MULTI_VALUE_SPLIT.split(value) if split else [value]
        return [" ".join(part.split()) for part in parts if part.strip()]
    return []


def _fact(subject: str, predicate: str, obj: str) -> str:
    phrase = _PHRASES.get(predicate, predicate.lower().replace("_", " "))
    return f"{subject} {phrase} {obj}."


def _structured_claim(
    subject: tuple[str, str], predicate: str, obj: tuple[str, str], *, literal: bool
) -> ExtractedClaim:
    """A structured-field claim; subject and obj are (name, type)."""
    return ExtractedClaim(
        subject=subject[0],
        subject_type=subject[1],
        predicate=predicate,
        object_name=None if literal else obj[0],
        object_literal=obj[0] if literal else None,
        object_type=obj[1],
        fact_text=_fact(subject[0], predicate, obj[0]),
        confidence=_STRUCTURED_CONFIDENCE,
    )


def _jira_fields(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """Flat, lower-cased Jira fields (also from the API's {"key", "fields": {...}}), or None."""
    flat = _lower_keys(fields)
    nested = flat.pop("fields", None)
    if isinstance(nested, Mapping):
        flat = {**_lower_keys(nested), **flat}
    return flat if "key" in flat and "issuetype" in flat else None


def _link(link: Any) -> tuple[str, str, bool] | None:
    """(phrase, other issue key, this issue is the phrase's subject) of one issue link."""
    if not isinstance(link, Mapping):
        return None
    fields = _lower_keys(link)
    kind = fields.get("type", fields.get("relation", fields.get("link")))
    kind_fields = _lower_keys(kind) if isinstance(kind, Mapping) else {"name": kind}
    for side, outward in (("outwardissue", True), ("inwardissue", False)):
        if side not in fields:
            continue
        issues = _values(fields[side], split=False)
        phrase = kind_fields.get("outward" if outward else "inward")
        if issues and isinstance(phrase, str) and phrase.strip():
            return phrase, issues[0], True  # Jira's own wording, from this issue's side
        name = kind_fields.get("name")
        return (name, issues[0], outward) if issues and isinstance(name, str) else None
    other = _values(fields.get("key", fields.get("issue", fields.get("target"))), split=False)
    name = kind_fields.get("name")
    return (name, other[0], True) if isinstance(name, str) and other else None


def _link_claim(key: str, link: Any) -> ExtractedClaim | None:
    parsed = _link(link)
    if parsed is None:
        return None
    phrase, other, outward = parsed
    predicate, reverse = _LINK_PHRASES.get(" ".join(phrase.lower().split()), (None, False))
    predicate = predicate or to_predicate(phrase)
    if predicate is None:
        return None
    reverse = reverse != (not outward) and predicate not in _SYMMETRIC
    subject, obj = (other, key) if reverse else (key, other)
    return _structured_claim((subject, "issue"), predicate, (obj, "issue"), literal=False)


def _jira_claims(fields: Mapping[str, Any]) -> Iterator[ExtractedClaim]:
    keys = _values(fields["key"], split=False)
    if not keys:
        return
    key = keys[0]
    for name, (predicate, object_type, literal) in _JIRA_FIELDS.items():
        for value in _values(fields.get(name), split=False):
            obj = (value, object_type)
            yield _structured_claim((key, "issue"), predicate, obj, literal=literal)
    links = fields.get("issuelinks", fields.get("links"))
    for link in links if isinstance(links, list | tuple) else []:
        if (claim := _link_claim(key, link)) is not None:
            yield claim


class StructuredExtractor:
    """Extractor for structured records: CMDB configuration items and Jira issues.

    `mapping` (field -> predicate, keys case-insensitive) replaces the default CMDB
    mapping; Jira issues (fields with "key" and "issuetype") use fixed Jira rules.
    """

    def __init__(self, *, mapping: Mapping[str, str] | None = None) -> None:
        source = DEFAULT_CMDB_MAPPING if mapping is None else mapping
        for predicate in source.values():
            if not PREDICATE_PATTERN.match(predicate):
                raise ValueError(f"predicate {predicate!r} is not UPPER_SNAKE")
        self.mapping = {key.strip().lower(): predicate for key, predicate in source.items()}

    def extract(self, record: SourceRecord, text: str) -> Sequence[ExtractedClaim]:
        jira = _jira_fields(record.fields)
        if jira is not None:
            return _unique(_jira_claims(jira))
        return _unique(self._ci_claims(record, _lower_keys(record.fields)))

    def _ci_claims(self, record: SourceRecord, fields: dict[str, Any]) -> Iterator[ExtractedClaim]:
        if not fields:
            return
        names = [value for key in _CI_NAME_KEYS for value in _values(fields.get(key), split=False)]
        subject = names[0] if names else record.title.strip() or record.external_id
        types = [value for key in _CI_TYPE_KEYS for value in _values(fields.get(key), split=False)]
        subject_type = "_".join(types[0].lower().split()) if types else "configuration_item"
        for key, value in fields.items():
            predicate = self.mapping.get(key)
            if predicate is None:
                continue
            literal = key in LITERAL_FIELDS or predicate.startswith("HAS_")
            object_type = "value" if literal else _OBJECT_TYPES.get(predicate, "thing")
            for item in _values(value, split=not literal):
                yield _structured_claim(
                    (subject, subject_type), predicate, (item, object_type), literal=literal
                )
