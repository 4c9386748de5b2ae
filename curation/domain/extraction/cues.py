"""English cue patterns: "X runs on Y", "X is owned by the Payments team" (pure).

Relations come from cue phrases between names that are capitalised or code-like, read
sentence by sentence from Markdown made plain; negated statements give none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from curation.domain.extraction.markdown import Plain, markdown_blocks
from curation.domain.extraction.segments import sentence_spans
from curation.domain.records import ExtractedClaim
from curation.domain.validtime import stated_validity


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
    r"(?:runs|run|ran|running)\s+on": _Cue("RUNS_ON", 0.7, passive=False),
    r"(?:depends|depend|depended|depending)\s+on": _Cue("DEPENDS_ON", 0.7, passive=False),
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


def _block_claims(block: Plain) -> Iterator[ExtractedClaim]:
    plain = "".join(block.chars)
    for start, end in sentence_spans(plain):
        sentence = plain[start:end]
        tokens = [_Token(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(sentence)]
        for subject, obj, cue, confidence in _SentenceReader(sentence, tokens).relations():
            stated = stated_validity(sentence)
            yield ExtractedClaim(
                subject=subject,
                predicate=cue.predicate,
                object_name=obj,
                fact_text=" ".join(sentence.split()),
                confidence=confidence,
                subject_type=_entity_type(subject, cue.predicate, is_object=False),
                object_type=_entity_type(obj, cue.predicate, is_object=True),
                span=block.span(start, end),
                valid_from=stated.valid_from,
                valid_to=stated.valid_to,
                validity_note=stated.note,
            )


def relation_claims(text: str) -> list[ExtractedClaim]:
    """Every cue-pattern relation in Markdown or plain text, its span in `text`."""
    return [claim for block in markdown_blocks(text) for claim in _block_claims(block)]
