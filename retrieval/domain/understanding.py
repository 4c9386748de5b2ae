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
  `as_of` when the caller gave none: the end of the stated day, month or year;
- the kind of answer it wants ("when": a date, "how much": an amount, "who": someone,
  "where": a place), held against the kind of value each relation has in the data, so
  "when did X join" finds the one relation whose values are dates though no word of
  it names one;
- the direction: "who reports to X" names X as the relation's object and asks for its
  subjects; "who does X report to" asks for X's object.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from curation.domain.names import normalize_name
from curation.domain.ontology import ENTITY_SLOT, MAX_WORDS, Ontology, PredicateSense
from curation.domain.validtime import field_instant

MAX_SPAN_TOKENS = 6  # the longest name a mention may be, in words
# A relation is understood when its score reaches this, and beats the next one by MARGIN.
MIN_SCORE = 0.5
MARGIN = 0.1
# How much the embedding's preference counts beside the words': per standard deviation
# of the predicates' cosines above their mean (a scale every embedder shares).
SEMANTIC_WEIGHT = 0.3
# What naming the answer's type counts ("which *region*"), beside the word's own 1.
ANSWER_WEIGHT = 1.0
# What a named value counts for the relations it is the object of ("is X in production").
VALUE_WEIGHT = 1.0
# What the kind of answer counts: for a relation whose values can answer the question
# ("when": dates), and against one whose values cannot.
KIND_WEIGHT = 1.0
KIND_PENALTY = 1.0

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
        "has", "have", "had", "i", "us", "any", "some", "right", "up", "if", "than", "then",
    }
)  # fmt: skip
_DETERMINERS = frozenset({"what", "which"})  # "whose service": the answer is no service
_ARTICLES = frozenset({"a", "an", "the", "s"})
_TOKEN = re.compile(r"[^\s]+")
_SLOT_WORD = re.compile(rf"\b{ENTITY_SLOT}\b")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_TIME = re.compile(
    rf"\b(?:as\s+of|as\s+at|in|on|during|at|by)\s+(?:the\s+)?"
    rf"(?:(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"
    # "4 March 2019", "4th of March, 2019"
    rf"|(?P<dday>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<dmonth>{_MONTH})\.?,?\s+(?P<dyear>\d{{4}})"
    # "March 4, 2019"
    rf"|(?P<mdmonth>{_MONTH})\.?\s+(?P<mdday>\d{{1,2}}){_ORDINAL},?\s+(?P<mdyear>\d{{4}})"
    rf"|(?P<month>{_MONTH})\.?\s+(?P<myear>\d{{4}})"
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
    groups: tuple[str, ...] = ()  # the workspaces they belong to
    mentions: tuple[str, ...] = ()  # the words of the question that named them
    predicates: tuple[str, ...] = ()  # the relation asked for (at most one today)
    # The relation is asked of the mentioned entities as its objects ("who reports to X"):
    # its subjects answer. `objects` are then those entities' ids, merged ones included.
    inverse: bool = False
    objects: tuple[int, ...] = ()
    # Mentions that name more than one entity ("Chen"): each one's facts are considered.
    ambiguous: tuple[str, ...] = ()
    answer: str = ""  # the kind of answer asked for (`answer_kind`), "" when none
    # The kinds of value each candidate relation has in the data (`value_kind`).
    kinds: Mapping[str, frozenset[str]] = field(default_factory=dict, compare=False)
    as_of: dt.datetime | None = None  # a time the question states
    time_text: str = ""  # the words that stated it
    # Why the stated time did not filter the search (nothing was valid then), or "".
    time_fallback: str = ""
    scores: Mapping[str, float] = field(default_factory=dict)  # the best relations' scores
    # What the values the question names are objects of ("is X in *production*": mostly
    # DEPLOYED_TO), each predicate's share: a hint at the relation asked for.
    values: Mapping[str, float] = field(default_factory=dict)
    weight: float | None = None  # the understood list's weight in the fusion (None: no list)
    question: str = ""  # the question with its mentions read as the entity slot
    ontology: Ontology | None = field(default=None, compare=False, repr=False)

    @property
    def empty(self) -> bool:
        return not (self.entities or self.predicates or self.as_of)


def words(text: str) -> list[str]:
    """The question's whitespace-separated words, as written."""
    return _TOKEN.findall(text)


# A possessive ending ("Noah Dubois's", "billing-api\u2019s", "the Joneses'"), with any
# punctuation after it: the name is what comes before.
_POSSESSIVE = re.compile(r"^(?P<name>.*?\w)(?:['\u2019][sS]|(?<=[sS])['\u2019])\W*$")


def candidate_spans(text: str, *, longest: int = MAX_SPAN_TOKENS) -> list[Span]:
    """Every run of up to `longest` words that could be a name (not function words alone);
    a run ending in a possessive also as the name without it ("Noah Dubois's manager")."""
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
            if owner := _POSSESSIVE.match(chunk[-1]):
                bare = normalize_name(" ".join([*chunk[:-1], owner["name"]]))
                if bare and bare != norm:
                    found.append(Span(start, end, bare))
    return found


def _plain(token: str) -> str:
    return "".join(_WORD.findall(token.casefold()))


_OPENING = "\"'(\u201c\u2018"  # what may open a quoted name
MAX_PART_ENTITIES = 3  # a word of several names names these many at most ("Chen": two)
MIN_PART_LENGTH = 3
MAX_PARTS = 2  # words of a question looked up as parts of names


def name_parts(text: str, taken: set[int]) -> list[Span]:
    """The question's words that may be one word of a name ("Dubois"): written with a
    capital, not a function word, at least `MIN_PART_LENGTH` letters, outside the
    mentions already found (`taken`, word positions); a possessive read without its 's."""
    found = []
    for here, token in enumerate(words(text)):
        owner = _POSSESSIVE.match(token)
        bare = owner["name"] if owner else token
        letters = _plain(bare)
        if here in taken or len(letters) < MIN_PART_LENGTH or letters in FUNCTION_WORDS:
            continue
        capital = bare.lstrip(_OPENING)[:1].isupper()
        if capital and (norm := normalize_name(bare)) and " " not in norm:
            found.append(Span(here, here + 1, norm))
    return found


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


def stem(word: str) -> str:
    """A light English stem: enough to meet "runs"/"running" with "run", "relies" /
    "dependencies" with "rely" / "dependency", and "bosses" with "boss" (a double s is
    no plural)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ning", "ing", "es", "s", "ed"):
        if suffix == "s" and word.endswith("ss"):
            continue
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _bag(text: str) -> list[str]:
    return [stem(word) for word in _WORD.findall(text.casefold())]


def masked(text: str, mentions: Sequence[Span]) -> str:
    """The question with each mention read as the entity slot (`X`)."""
    tokens = words(text)
    for span in sorted(mentions, key=lambda span: span.start, reverse=True):
        tokens[span.start : span.end] = [ENTITY_SLOT]
    return " ".join(tokens)


def spoken(question: str) -> str:
    """A masked question as an embedder reads it for its relation: the slot left out
    ("what does run on"), so the name cannot pull the vector towards whatever it
    resembles, and no English word is put into a question in another language. (The
    ontology's forms are whole sentences, embedded with "it" for the slot; measured with
    e5, six Vietnamese questions of six relations all found theirs so, five with "it"
    in the question.)"""
    return " ".join(_SLOT_WORD.sub(" ", question).split())


def _dice(first: list[str], second: list[str]) -> float:
    if not first or not second:
        return 0.0
    common = sum(min(first.count(word), second.count(word)) for word in set(first))
    return 2.0 * common / (len(first) + len(second))


@dataclass(frozen=True)
class _Question:
    """A masked question as the relation rules read it."""

    plain: tuple[str, ...]  # its words, casefolded, the slot and single letters left out
    bag: list[str]  # their stems (the slot left out)
    answer: str  # the word after "what"/"which"/"whose": often the answer's type


def _read(question: str) -> _Question:
    slot = ENTITY_SLOT.casefold()
    plain = tuple(
        word for word in _WORD.findall(question.casefold()) if word != slot and len(word) > 1
    )
    return _Question(plain=plain, bag=[stem(word) for word in plain], answer=_answer(question))


def _answer(question: str) -> str:
    """The first word after a question determiner ("which *team* owns X", "what *region*
    hosts X"), articles skipped: the type of thing asked for, when it is a content word."""
    tokens: list[str] = [w for w in _WORD.findall(question.casefold()) if w not in _ARTICLES]
    for here, word in enumerate(tokens[:-1]):
        if word in _DETERMINERS:
            after = tokens[here + 1]
            if after not in FUNCTION_WORDS and after != ENTITY_SLOT.casefold():
                return after
    return ""


def _vocabulary(sense: PredicateSense) -> tuple[frozenset[str], frozenset[str], list[list[str]]]:
    """A sense's single words as written and as stems, and its phrases as stem runs ("looks
    after" is one phrase: its words alone say nothing)."""
    exact: set[str] = set()
    phrases: list[list[str]] = []
    for entry in (*sense.words, sense.label, sense.object_type):
        written = _WORD.findall(entry.casefold())
        if entry is sense.label:  # its content words count one by one ("is hosted in")
            exact |= {token for token in written if token not in FUNCTION_WORDS}
        elif len(written) == 1:
            exact.add(written[0])  # even a function word, when listed alone ("whose")
        elif written:
            phrases.append([stem(token) for token in written])
    return frozenset(exact), frozenset(stem(word) for word in exact), phrases


def _contains(bag: Sequence[str], phrase: Sequence[str]) -> bool:
    size = len(phrase)
    return any(list(bag[i : i + size]) == list(phrase) for i in range(len(bag) - size + 1))


def value_hints(values: Iterable[Mapping[str, int]]) -> dict[str, float]:
    """Each predicate's share of the claims the named values are objects of, per value,
    summed: "production" is the object of DEPLOYED_TO claims alone, so 1.0 for it."""
    hints: dict[str, float] = {}
    for counts in values:
        total = sum(counts.values())
        for predicate, n in counts.items():
            hints[predicate] = hints.get(predicate, 0.0) + (n / total if total else 0.0)
    return hints


def relation_scores(
    question: str,
    ontology: Ontology,
    *,
    semantic: Mapping[str, float] | None = None,
    values: Mapping[str, float] | None = None,
    kinds: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, float]:
    """Each predicate's score for the (masked) question, the sum of:

    - its shape: how well its best question form overlaps the question (Dice, 0 to 1);
    - its words the question uses: 1 for each word as the ontology writes it, half for a
      word met only through its stem ("hosted" for "host"), each divided among the
      predicates that list it; 1 for each phrase;
    - the answer type: `ANSWER_WEIGHT` when the word after "which"/"what" is one of its
      words ("which *stage* does X run in" asks for a stage, whatever the verb);
    - the embedding's preference (`semantic`: its best form's cosine, in standard
      deviations above the mean of every predicate's), times `SEMANTIC_WEIGHT`;
    - the values the question names (`values`: `value_hints`), times `VALUE_WEIGHT`;
    - the kind of answer (`answer_kind`) against the kinds of value the predicate has in
      the data (`kinds`: `value_kind`s): `KIND_WEIGHT` when they can answer it, minus
      `KIND_PENALTY` when they cannot ("when" and only names), nothing when unknown.
    """
    read = _read(question)
    if not read.plain:  # the name alone ("billing-api"): it asks no relation
        return {}
    asked = answer_kind(question)
    content = [(word, root) for word, root in zip(read.plain, read.bag, strict=True)]
    mean, spread = _spread(semantic or {})
    vocabularies = {name: _vocabulary(sense) for name, sense in ontology.senses.items()}
    # A word several predicates list tells them apart less: each gets its share of it.
    shared: dict[str, int] = {}
    for _, stems, _ in vocabularies.values():
        for root in stems:
            shared[root] = shared.get(root, 0) + 1
    scores: dict[str, float] = {}
    for name, sense in ontology.senses.items():
        forms = [_read(form).bag for form in sense.questions]
        shape = max((_dice(read.bag, form) for form in forms), default=0.0)
        exact, stems, phrases = vocabularies[name]
        hits = sum(
            (1.0 if word in exact else 0.5) / shared.get(root, 1)
            for word, root in content
            if (root in stems and word not in FUNCTION_WORDS) or word in exact
        )
        hits += sum(1.0 for phrase in phrases if _contains(read.bag, phrase))
        answer = stem(read.answer)
        if read.answer and (read.answer in exact or answer in stems):
            hits += ANSWER_WEIGHT / shared.get(answer, 1)
        meaning = 0.0
        if semantic and name in semantic and spread > 0:
            meaning = SEMANTIC_WEIGHT * (semantic[name] - mean) / spread
        hint = VALUE_WEIGHT * (values or {}).get(name, 0.0)
        fits = kind_fits(asked, (kinds or {}).get(name, frozenset()), sense)
        kind = KIND_WEIGHT if fits is True else -KIND_PENALTY if fits is False else 0.0
        scores[name] = shape + hits + meaning + hint + kind
    return scores


# The kinds of answer a question asks for, by its first words.
DATE, AMOUNT, AGENT, PLACE, ENTITY, TEXT = "date", "amount", "agent", "place", "entity", "text"
_KIND_CUES = (
    (re.compile(r"\b(?:when|since\s+when|what\s+(?:year|date|day|month))\b"), DATE),
    (re.compile(r"\bhow\s+(?:much|many)\b"), AMOUNT),
    (re.compile(r"\b(?:who|whom)\b"), AGENT),
    (re.compile(r"\bwhere\b"), PLACE),
)
# Object types that name places (a "where" question), and types that are never someone
# (a "who" question); a workspace's own types not listed here decide nothing.
PLACE_TYPES = frozenset(
    {"host", "location", "region", "site", "office", "city", "country", "place", "warehouse",
     "environment", "cluster", "datacenter", "zone", "building", "address"}
)  # fmt: skip
NOT_AGENT_TYPES = PLACE_TYPES | frozenset(
    {"language", "version", "status", "date", "price", "amount", "category", "title", "value"}
)
# A label ending in one of these names where its object is ("is based *in*", "is stocked
# *at*", "runs *on*").
_LOCATIVE = frozenset({"in", "at", "on", "from", "inside", "within"})
_AMOUNT = re.compile(r"^\W{0,3}\d[\d\s.,']*(?:\s*\w{0,4}\W?)?$|^\w{1,4}\W?\s*\d[\d.,']*$")


def answer_kind(question: str) -> str:
    """The kind of answer the question asks for: DATE ("when did X join"), AMOUNT ("how
    much does X cost"), AGENT ("who owns X"), PLACE ("where is X based"), or ""."""
    text = question.casefold()
    return next((kind for cue, kind in _KIND_CUES if cue.search(text)), "")


def value_kind(literal: str | None, *, named: bool) -> str:
    """The kind of one value: ENTITY for a thing with a name, else DATE, AMOUNT or TEXT
    by its shape ("2019-03-04", "129.99 EUR", "Product Manager")."""
    if named:
        return ENTITY
    text = (literal or "").strip()
    if text and _looks_dated(text):
        return DATE
    if text and _AMOUNT.match(text):
        return AMOUNT
    return TEXT


def _looks_dated(text: str) -> bool:
    """A short value that reads as a date (a bare number is an amount, not a year)."""
    if len(text) > 40 or text.replace(".", "").isdigit():
        return False
    if field_instant(text) is not None:
        return True
    instant, said = stated_time(f"on {text}")  # "4 March 2019", "March 4, 2019"
    return instant is not None and said == f"on {text}"


def kind_fits(asked: str, kinds: frozenset[str], sense: PredicateSense) -> bool | None:
    """Whether values of these kinds can answer a question asking for `asked`: True,
    False, or None when nothing is known (no kind asked, or no values seen)."""
    if not asked or not kinds:
        return None
    declared = sense.object_type.casefold()
    if asked in (DATE, AMOUNT):
        return asked in kinds
    if ENTITY not in kinds:
        return False  # "who"/"where" is never answered by a date, an amount or a title
    if asked == AGENT:
        return declared not in NOT_AGENT_TYPES
    label = _WORD.findall(sense.label.casefold())
    if declared in PLACE_TYPES or (label and label[-1] in _LOCATIVE):
        return True
    return None


# Prepositions that, just before the mention, make it the relation's object: "who
# reports *to* X", "what is supplied *by* X", "what runs *on* X". ("The owner *of* X",
# "responsible *for* X", "ask *about* X" keep X the subject, and "what works *with* X"
# asks a relation most often symmetric, as stored.)
_TOWARD = frozenset({"to", "by", "from", "under", "on", "in", "at", "into", "onto"})


def names_its_subjects(question: str, label: str) -> bool:
    """Whether the (masked) question names the relation's subjects by a noun of its
    verb, next to the entity: "X's (direct) *reports*", "the *reports* of X" for "reports
    to"; "X's *hires*" for "hired by". A label that does not begin with its verb ("has
    version", "is owned by") names nothing so."""
    verb = list(_WORD.findall(label.casefold()))
    if len(verb) < 2 or verb[0] in FUNCTION_WORDS:
        return False
    root, preposition = stem(verb[0]), verb[1]
    tokens = [*(_plain(token) for token in words(question)), ""]
    slot = ENTITY_SLOT.casefold()

    def noun(at: int) -> bool:
        """A plural of the verb's stem that is not the verb itself ("X reports to")."""
        word = tokens[at]
        return word.endswith("s") and stem(word) == root and tokens[at + 1] != preposition

    for here, token in enumerate(tokens):
        if token != slot:
            continue
        if any(noun(at) for at in range(here + 1, min(here + 3, len(tokens) - 1))):
            return True
        if here >= 2 and tokens[here - 1] == "of" and noun(here - 2):
            return True
    return False


def asks_inversely(question: str) -> bool:
    """Whether the (masked) question names its entity as the object of the relation."""
    tokens = [_plain(token) for token in words(question)]
    slot = ENTITY_SLOT.casefold()
    return any(
        token == slot and here > 0 and tokens[here - 1] in _TOWARD
        for here, token in enumerate(tokens)
    )


def automatic_sense(name: str, words: Iterable[str] = ()) -> PredicateSense | None:
    """A usable sense for a workspace's own predicate nobody described: its label read
    from its name (REPORTS_TO: "reports to"), its words those it was mapped from (a CMDB
    column "manager"), and question forms made of both ("what is the manager of X", "X
    reports to"), which the embedding compares a question with; None when even that is
    not a valid sense."""
    label = " ".join(name.lower().split("_"))
    written = dict.fromkeys(
        " ".join(word.replace("_", " ").split()).casefold() for word in words if word.strip()
    )
    nouns = [*written, *([label.removeprefix("has ")] if label.startswith("has ") else [])]
    forms = [f"what is the {noun} of {ENTITY_SLOT}" for noun in dict.fromkeys(nouns)]
    forms.append(f"{ENTITY_SLOT} {label}")
    try:
        return PredicateSense(
            name=name, label=label, words=tuple(written)[:MAX_WORDS],
            questions=tuple(forms)[:MAX_WORDS],
        )  # fmt: skip
    except ValueError:
        return None


def grounded(ontology: Ontology, had: Mapping[str, Iterable[str]]) -> Ontology:
    """The question's candidate relations: the senses of the predicates the mentioned
    entities have facts of (`had`: predicate -> the words it was mapped from), so a sense
    with no facts there cannot win; one without a sense gets `automatic_sense`. Without
    any facts, the ontology as it is."""
    if not had:
        return ontology
    senses: dict[str, PredicateSense] = {}
    for name, words in had.items():
        sense = ontology.get(name) or automatic_sense(name, words)
        if sense is not None:
            senses[name] = sense
    return replace(ontology, senses=senses) if senses else ontology


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


def time_as_topic(
    as_of: dt.datetime | None, said: str, named: Sequence[str], *, changed: bool, then: bool
) -> str:
    """Why a time the question states does not narrow the search ("" when it does). It
    narrows only a question about named entities whose facts have a history (some fact
    of theirs ended) and were valid then: "where did X run in 2019". Otherwise the time
    is what the question is about ("what did Melanie paint in 2022", "interceptions in
    2015"): it stays a search term, and the facts recorded since still answer."""
    if as_of is None:
        return ""
    when = f"{as_of:%Y-%m-%d} ({said!r})" if said else f"{as_of:%Y-%m-%d}"
    if not named:
        return f"no entity named has a history to read at {when}: the time is a search term"
    if not changed:
        return f"the facts of {', '.join(named)} never changed: {when} is a search term"
    if not then:
        return f"nothing about {', '.join(named)} was valid as of {when}: searched without it"
    return ""


def stated_time(text: str) -> tuple[dt.datetime | None, str]:
    """The end of the day, month or year the question states (UTC), and its words."""
    match = _TIME.search(text)
    if match is None:
        return None, ""
    try:
        if match["iso"]:
            day = dt.date.fromisoformat(match["iso"])
        elif match["dday"]:
            month = _MONTHS[match["dmonth"].casefold()]
            day = dt.date(int(match["dyear"]), month, int(match["dday"]))
        elif match["mdday"]:
            month = _MONTHS[match["mdmonth"].casefold()]
            day = dt.date(int(match["mdyear"]), month, int(match["mdday"]))
        elif match["month"]:
            year, month = int(match["myear"]), _MONTHS[match["month"].casefold()]
            day = dt.date(year, month, calendar.monthrange(year, month)[1])
        else:
            day = dt.date(int(match["year"]), 12, 31)
    except ValueError:
        return None, ""  # "2022-02-30": not a day; the words stay part of the question
    end = dt.datetime.combine(day, dt.time.max, tzinfo=dt.UTC)
    return end, match.group(0)
