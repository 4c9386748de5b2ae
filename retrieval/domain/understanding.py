"""Query understanding: which entities a question names, which relation it asks for, and
the time it states (pure).

Every claim about one entity ties on authority, recency and the rest; what separates
"billing-api runs on k8s-prod-1" from "billing-api is deployed to production" for the
question "what does billing-api run on" is the relation asked for, which relevance
alone does not see. So before stage 1 a search reads, from the question:

- entity mentions: spans of the question that are a workspace's entity names or
  aliases (the caller looks the candidate spans up under row-level security; here the
  longest non-overlapping ones win);
- the relation: each predicate of the workspace's ontology scored by its question
  forms (word overlap with the question, the mention read as `X`), by its words, and,
  when the caller has them, by the cosine of the query's embedding with the forms'
  (which is how a question in another language finds its relation with e5);
- a stated time ("as of 2021", "in March 2022", "on 2022-03-01"), which becomes
  `as_of` when the caller gave none: the end of the stated day, month or year.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from curation.domain.names import normalize_name
from curation.domain.ontology import ENTITY_SLOT, Ontology

MAX_SPAN_TOKENS = 6  # the longest name a mention may be, in words
# A relation is understood when its score reaches this, and beats the next one by MARGIN.
MIN_SCORE = 0.5
MARGIN = 0.1
# How much the embedding's preference counts beside the words': per standard deviation
# of the predicates' cosines above their mean (a scale every embedder shares).
SEMANTIC_WEIGHT = 0.3

# Words that carry no relation and no name: they never count against a query's term
# coverage, and never make a relation. English, the language of the built-in forms.
FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "do", "does",
        "did", "done", "of", "on", "in", "at", "to", "for", "from", "by", "with", "and", "or",
        "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "this",
        "that", "these", "those", "it", "its", "there", "here", "as", "into", "onto",
        "about", "can", "could", "should", "would", "will", "shall", "may", "might", "must",
        "me", "my", "we", "our", "you", "your", "they", "their", "he", "she", "his", "her",
        "currently", "now", "today", "please", "tell", "show", "give", "find", "list",
    }
)  # fmt: skip
_TOKEN = re.compile(r"[^\s]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_TIME = re.compile(
    rf"\b(?:as\s+of|as\s+at|in|on|during|at|by)\s+"
    rf"(?:(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})|(?P<month>{_MONTH})\.?\s+(?P<myear>\d{{4}})"
    rf"|(?P<year>(?:19|20|21)\d{{2}}))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    """A run of the question's words that could name an entity: [start, end) in words."""

    start: int
    end: int
    norm: str  # as entity aliases are stored (`normalize_name`)


@dataclass(frozen=True)
class Understanding:
    """What a search understood of its question; empty when it understood nothing."""

    entities: tuple[str, ...] = ()  # canonical names of the mentioned entities
    mentions: tuple[str, ...] = ()  # the words of the question that named them
    predicates: tuple[str, ...] = ()  # the relation asked for (at most one today)
    as_of: dt.datetime | None = None  # a time the question states
    time_text: str = ""  # the words that stated it
    scores: Mapping[str, float] = field(default_factory=dict)  # the best relations' scores
    question: str = ""  # the question with its mentions read as the entity slot
    ontology: Ontology | None = field(default=None, compare=False, repr=False)

    @property
    def empty(self) -> bool:
        return not (self.entities or self.predicates or self.as_of)


def words(text: str) -> list[str]:
    """The question's whitespace-separated words, as written."""
    return _TOKEN.findall(text)


def candidate_spans(text: str, *, longest: int = MAX_SPAN_TOKENS) -> list[Span]:
    """Every run of up to `longest` words that could be a name (not function words alone)."""
    tokens = words(text)
    found: list[Span] = []
    for start in range(len(tokens)):
        for end in range(start + 1, min(len(tokens), start + longest) + 1):
            chunk = tokens[start:end]
            if all(_plain(token) in FUNCTION_WORDS for token in chunk):
                continue
            norm = normalize_name(" ".join(chunk))
            if norm:
                found.append(Span(start, end, norm))
    return found


def _plain(token: str) -> str:
    return "".join(_WORD.findall(token.casefold()))


def choose_mentions(spans: Sequence[Span], known: set[str]) -> list[Span]:
    """The known spans, longest first, that do not overlap a longer (or earlier) one."""
    chosen: list[Span] = []
    taken: set[int] = set()
    ordered = sorted(
        (span for span in spans if span.norm in known),
        key=lambda span: (span.start - span.end, span.start),
    )
    for span in ordered:
        cover = set(range(span.start, span.end))
        if not cover & taken:
            chosen.append(span)
            taken |= cover
    return sorted(chosen, key=lambda span: span.start)


def _stem(word: str) -> str:
    """A light English stem: enough to meet "runs"/"running" with "run"."""
    for suffix in ("ning", "ing", "ies", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _bag(text: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(text.casefold())]


def masked(text: str, mentions: Sequence[Span]) -> str:
    """The question with each mention read as the entity slot (`X`)."""
    tokens = words(text)
    for span in sorted(mentions, key=lambda span: span.start, reverse=True):
        tokens[span.start : span.end] = [ENTITY_SLOT]
    return " ".join(tokens)


def _dice(first: list[str], second: list[str]) -> float:
    if not first or not second:
        return 0.0
    common = sum(min(first.count(word), second.count(word)) for word in set(first))
    return 2.0 * common / (len(first) + len(second))


def relation_scores(
    question: str, ontology: Ontology, *, semantic: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each predicate's score for the (masked) question: how well its best question form
    overlaps it, plus one for each of its words the question uses, plus the embedding's
    preference (`semantic`: its best form's cosine, in standard deviations above the
    mean of every predicate's)."""
    bag = [word for word in _bag(question) if word != ENTITY_SLOT.casefold()]
    content = {word for word in bag if word not in FUNCTION_WORDS}
    mean, spread = _spread(semantic or {})
    scores: dict[str, float] = {}
    for name, sense in ontology.senses.items():
        forms = [[w for w in _bag(form) if w != ENTITY_SLOT.casefold()] for form in sense.questions]
        shape = max((_dice(bag, form) for form in forms), default=0.0)
        vocabulary = {
            _stem(token) for word in sense.words for token in _WORD.findall(word.casefold())
        }
        vocabulary |= {_stem(token) for token in _WORD.findall(sense.label.casefold())}
        hits = len(content & (vocabulary - FUNCTION_WORDS))
        meaning = 0.0
        if semantic and name in semantic and spread > 0:
            meaning = SEMANTIC_WEIGHT * (semantic[name] - mean) / spread
        scores[name] = shape + hits + meaning
    return scores


def _spread(values: Mapping[str, float]) -> tuple[float, float]:
    """The mean and standard deviation of the values (0, 0 for none)."""
    if not values:
        return 0.0, 0.0
    mean = math.fsum(values.values()) / len(values)
    variance = math.fsum((value - mean) ** 2 for value in values.values()) / len(values)
    return mean, math.sqrt(variance)


def asked_relation(scores: Mapping[str, float]) -> tuple[str, ...]:
    """The relation understood from its scores: the best, if it is good and clear enough."""
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    if not ranked or ranked[0][1] < MIN_SCORE:
        return ()
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < MARGIN:
        return ()
    return (ranked[0][0],)


def stated_time(text: str) -> tuple[dt.datetime | None, str]:
    """The end of the day, month or year the question states (UTC), and its words."""
    match = _TIME.search(text)
    if match is None:
        return None, ""
    try:
        if match["iso"]:
            day = dt.date.fromisoformat(match["iso"])
        elif match["month"]:
            year, month = int(match["myear"]), _MONTHS[match["month"].casefold()]
            day = dt.date(year, month, calendar.monthrange(year, month)[1])
        else:
            day = dt.date(int(match["year"]), 12, 31)
    except ValueError:
        return None, ""  # "2022-02-30": not a day; the words stay part of the question
    end = dt.datetime.combine(day, dt.time.max, tzinfo=dt.UTC)
    return end, match.group(0)
