"""Context packs: a search's best cited facts packed into a token budget for a prompt (pure).

The assembler (`pack`) takes the cited hits of a search, best first, and returns what an
agent puts in its prompt: each fact once, current facts before history, every fact with
its subject, predicate, object, validity, tier, status and citations, rendered as plain
text (`render`) whose token count never exceeds the budget. The same inputs give the
same pack. `ASSEMBLER_VERSION` names this contract: a knowledge snapshot pins it, and a
pack of a snapshot is refused rather than assembled by another version.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from curation.domain.conversation import statement_said
from curation.domain.highlight import PASSAGE_PREDICATE
from kernel.params import InvalidQuery, ParamReader
from retrieval.domain.query import Query, parse_query
from retrieval.domain.understanding import FUNCTION_WORDS

# Moves whenever what `pack` selects or how `render` writes it changes.
ASSEMBLER_VERSION = 6
# Earlier versions this one still packs exactly, for the snapshots that pinned them: 5
# is 6 without the second reading (`with_like`), its header saying v5.
REPRODUCIBLE_VERSIONS = frozenset({5})
LIKE_VERSION = 6  # the first assembler with the second reading
MIN_BUDGET, DEFAULT_BUDGET, MAX_BUDGET = 50, 1000, 8000
PACK_DEPTH = 30  # hits a pack's search reads at least (the REST search defaults to 10)
NEIGHBOUR_HITS = 3  # the hits whose neighbouring passages a pack adds
TOKENS_PER_HIT = 25  # a larger budget reads deeper: one hit per this many tokens...
MAX_PACK_DEPTH = 100  # ...up to a search's largest k
MAX_CITATIONS = 3  # per fact: a fourth source adds tokens, not trust
# A turn said by someone the question names ranks as if this many times higher.
SPEAKER_WEIGHT = 2.0
# A question that names a speaker is searched twice, as asked and without the names, the
# two rankings fused by reciprocal rank with this k (Cormack et al.'s 60: the rankings
# are whole searches, each already fused, so a flat k weighs the tail of both evenly),
# the search without the names weighing this much more (it is what the question asks
# about; the one as asked keeps a name that is itself the topic in play).
FUSION_K = 60
UNNAMED_WEIGHT = 2.0
# A pack reads its question once more, its vector moved towards the facts ranked best
# (this many; `retrieval.domain.expansion`), and fuses that ranking with its own by
# reciprocal rank, weighing this much: too little for a fact only the second reading
# found to displace one of the first's (0.3 / (60 + 1) is below 1 / (60 + 100)), enough
# to lift a fact both found. A list question's answers are alike ("Dune", "The
# Alchemist"), more than each is like the question's words ("books").
LIKE_HITS = 5
LIKE_WEIGHT = 0.3
# Each fact's snippets are cut to the first of these (characters) that lets it fit; at
# 0 a citation still names its source and episode.
SNIPPET_STEPS = (500, 240, 120, 60, 0)
CONTEXT_PARAMETERS = ("q", "budget", "as_of", "scope", "snapshot")
CURRENT_STATUS = "published"

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class PackCitation:
    """Where a packed fact was read; `group_id` is the workspace of the evidence."""

    source: str
    episode: str  # the episode's external id
    url: str
    snippet: str
    group_id: str = ""


@dataclass(frozen=True)
class PackClaim:
    """One claim behind a fact: its workspace and the episodes its evidence quotes."""

    claim_id: int
    group_id: str
    episode_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class PackFact:
    """A cited fact as the assembler reads and writes it."""

    fact: str
    subject: str
    predicate: str
    object_text: str
    valid_from: dt.datetime
    valid_to: dt.datetime | None
    tier: int
    status: str
    citations: tuple[PackCitation, ...]
    claims: tuple[PackClaim, ...]
    # Not a hit itself: the passage next to the hit whose claim this is (small-to-big),
    # for the context around it ("beside [1]").
    beside: int | None = None

    @property
    def key(self) -> tuple[object, ...]:
        """What makes two facts the same fact: subject, predicate, object and validity."""
        return (
            self.subject.casefold(), self.predicate, self.object_text.casefold(),
            self.valid_from, self.valid_to,
        )  # fmt: skip

    def current_at(self, at: dt.datetime) -> bool:
        """Published and valid at `at` (a superseded, retracted or ended fact never is)."""
        return (
            self.status == CURRENT_STATUS
            and self.valid_from <= at
            and (self.valid_to is None or at < self.valid_to)
        )


@dataclass(frozen=True)
class Pack:
    """The assembled pack: its instant, budget, facts by section, text and token count."""

    at: dt.datetime
    token_budget: int
    current: tuple[PackFact, ...]
    history: tuple[PackFact, ...]
    text: str
    tokens: int
    version: int = ASSEMBLER_VERSION

    @property
    def facts(self) -> tuple[PackFact, ...]:
        return self.current + self.history

    @property
    def claim_ids(self) -> list[int]:
        return sorted({claim.claim_id for fact in self.facts for claim in fact.claims})

    @property
    def episode_ids(self) -> list[int]:
        return sorted(
            {e for fact in self.facts for claim in fact.claims for e in claim.episode_ids}
        )


# --- Rendering -------------------------------------------------------------------------


def _instant(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip


def _says_day(text: str, day: dt.date) -> bool:
    """Whether a fact's text names the day itself ("7 May 2023", "May 7, 2023",
    "2023-05-07")."""
    month = _MONTHS[day.month - 1]
    return any(
        form in text
        for form in (f"{day.day} {month} {day.year}", f"{month} {day.day}, {day.year}",
                     day.isoformat())
    )  # fmt: skip


def _validity(fact: PackFact) -> str:
    """When the fact holds; nothing for an open fact whose text already says the day it
    began ("On 8 May 2023, Caroline said: ...")."""
    if fact.valid_to is None:
        begun = fact.valid_from.astimezone(dt.UTC)
        exact_day = begun.time() == dt.time() or fact.predicate == PASSAGE_PREDICATE
        if exact_day and _says_day(fact.fact, begun.date()):
            return ""
        return f"since {_instant(fact.valid_from)}"
    return f"valid {_instant(fact.valid_from)} to {_instant(fact.valid_to)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _triple(fact: PackFact) -> str:
    return _one_line(f"{fact.subject} {fact.predicate} {fact.object_text}")


def _about(fact: PackFact) -> str:
    """What the fact line says beside the fact's text, written once: nothing for a
    statement of prose (its object is its text); the predicate alone when the text names
    its subject and its object ("billing-api runs on k8s-prod-1." RUNS_ON); else the
    whole triple."""
    if fact.predicate == PASSAGE_PREDICATE:
        return ""
    text = _one_line(fact.fact).casefold()
    named = (
        _one_line(fact.subject).casefold() in text
        and _one_line(fact.object_text).casefold() in text
    )
    return fact.predicate if named else _triple(fact)


def adds_to(snippet: str, fact: str) -> bool:
    """Whether a citation's snippet says more than the fact it cites: not when it is the
    fact's own text, or a part of it."""
    quoted, said = _one_line(snippet).casefold(), _one_line(fact).casefold()
    return bool(quoted) and quoted.rstrip(".") not in said


def render(
    current: Sequence[PackFact],
    history: Sequence[PackFact],
    *,
    at: dt.datetime,
    version: int = ASSEMBLER_VERSION,
) -> str:
    """The pack as plain text: a header (naming the assembler `version`), one line per
    fact with its sources' markers (current facts, then history marked as such), then
    one line per source."""
    return "\n".join(_lines(current, history, at=at, version=version))


def _usual_tier(facts: Sequence[PackFact]) -> int:
    """The tier most of the facts have (the more trusted on a tie): said once."""
    counts: dict[int, int] = {}
    for fact in facts:
        counts[fact.tier] = counts.get(fact.tier, 0) + 1
    return min(counts, key=lambda tier: (-counts[tier], tier))


def _where(citation: PackCitation) -> str:
    """A source line's text: source and document, and the address unless it is a local
    file's (which says no more than its source and document do)."""
    where = _one_line(f"{citation.source}/{citation.episode}")
    if citation.url and not citation.url.startswith("file:"):
        where += f" <{_one_line(citation.url)}>"
    return where


def _by_day(facts: Sequence[PackFact]) -> list[tuple[str, list[PackFact]]]:
    """The facts as they are shown: the statements of conversation turns said on one day
    together under that day ("On 8 May 2023:"), in the order the day first ranks, each
    day's in rank order; every other fact alone where it ranks (no heading: "")."""
    shown: list[tuple[str, list[PackFact]]] = []
    days: dict[str, list[PackFact]] = {}
    for fact in facts:
        said = statement_said(_one_line(fact.fact)) if fact.predicate == PASSAGE_PREDICATE else None
        if said is None:
            shown.append(("", [fact]))
        elif said.day in days:
            days[said.day].append(fact)
        else:
            days[said.day] = [fact]
            shown.append((said.day, days[said.day]))
    return shown


def _text(fact: PackFact, day: str) -> str:
    """A fact's text as shown: under its day's heading, without the day it repeats."""
    text = _one_line(fact.fact)
    if day and (said := statement_said(text)) is not None:
        return said.words
    return text


def _lines(
    current: Sequence[PackFact],
    history: Sequence[PackFact],
    *,
    at: dt.datetime,
    version: int = ASSEMBLER_VERSION,
) -> list[str]:
    lines = [f"Facts as of {_instant(at)} (VERA context pack v{version})"]
    sections = [
        (title, facts, _by_day(facts))
        for title, facts in (("Current (", current), ("History (not current; ", history))
    ]
    shown = [fact for _, _, groups in sections for _, facts in groups for fact in facts]
    sources: dict[str, str] = {}  # a source line's text -> its marker, S1, S2 ...
    cited: list[str] = []  # each fact's markers, in the order shown
    for fact in shown:
        own: list[str] = []
        for citation in fact.citations:
            marker = sources.setdefault(_where(citation), f"S{len(sources) + 1}")
            quoted = adds_to(citation.snippet, fact.fact)
            own.append(f'[{marker}: "{_one_line(citation.snippet)}"]' if quoted else f"[{marker}]")
        cited.append("".join(own))
    # Facts that all cite the same sources, quoting none, need no markers: the sources
    # section says it once.
    shared = len(set(cited)) == 1 and cited[0] != "" and '"' not in cited[0]
    numbers = {claim.claim_id: n for n, fact in enumerate(shown, start=1) for claim in fact.claims}
    number = 0
    for title, facts, groups in sections:
        if not facts:
            continue
        usual = _usual_tier(facts)
        lines.append(f"{title}tier {usual} unless noted):")
        for day, grouped in groups:
            if day:
                lines.append(f"On {day}:")
            for fact in grouped:
                markers = "" if shared else cited[number]
                number += 1
                lines.append(
                    _fact_line(fact, number, day, usual=usual, history=facts is history,
                               numbers=numbers) + (f" {markers}" if markers else "")
                )  # fmt: skip
    if sources:
        lines.append("Sources of every fact:" if shared else "Sources:")
        lines.extend(f"[{marker}] {where}" for where, marker in sources.items())
    return lines


def _fact_line(
    fact: PackFact, number: int, day: str, *, usual: int, history: bool, numbers: dict[int, int]
) -> str:
    """One fact's line: its number, its text, and what it says beside the text (beside
    which hit, its predicate or triple, its validity, an unusual tier, a past status)."""
    # Under "Current" every fact is published: only history says its status.
    status = fact.status if history else ""
    tier = f"tier {fact.tier}" if fact.tier != usual else ""
    beside = ""
    if fact.beside is not None:
        hit = numbers.get(fact.beside)
        beside = f"beside [{hit}]" if hit is not None else "beside a hit"
    parts = (beside, _about(fact), _validity(fact), tier, status)
    about = "; ".join(part for part in parts if part)
    return f"[{number}] {_text(fact, day)}" + (f" ({about})" if about else "")


def _speaker(fact: PackFact) -> str | None:
    """Who said the fact, when it is a conversation's turn (its statement says so)."""
    if fact.predicate != PASSAGE_PREDICATE:
        return None
    said = statement_said(_one_line(fact.fact))
    return said.speaker if said is not None else None


def _names(speaker: str, question: str) -> bool:
    """Whether the question names the speaker: by their whole name ("Ann-Marie", "Zoë
    O'Neill"), or its first word, as words of the question; a name that is one function
    word names no one."""
    name = speaker.casefold()
    first = name.split()[0]
    asked = question.casefold()
    if " " not in name and name in FUNCTION_WORDS:
        return False
    if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", asked):
        return True
    return first not in FUNCTION_WORDS and first in set(_WORD.findall(asked))


def named_speakers(facts: Sequence[PackFact], question: str) -> list[str]:
    """The speakers of the facts' turns that the question names, in the order their
    first turn ranks."""
    speakers = dict.fromkeys(speaker for fact in facts if (speaker := _speaker(fact)))
    return [speaker for speaker in speakers if _names(speaker, question)]


def without_names(question: str, names: Sequence[str]) -> str:
    """The question with each name in it left out (the whole name, then its first word
    unless that is a function word, each with a possessive "'s"); "" when no word
    outside the function words is left, which a search could not tell anything by."""
    text = question
    for name in sorted(names, key=len, reverse=True):
        first = name.split()[0]
        forms = (name, first) if first.casefold() not in FUNCTION_WORDS else (name,)
        for form in dict.fromkeys(forms):
            text = re.sub(rf"(?<!\w){re.escape(form)}(?:['\u2019]s)?(?!\w)", " ", text,
                          flags=re.IGNORECASE)  # fmt: skip
    text = " ".join(text.split())
    words = _WORD.findall(text.casefold())
    return text if any(word not in FUNCTION_WORDS for word in words) else ""


def fused(
    rankings: Sequence[Sequence[PackFact]],
    *,
    weights: Sequence[float] | None = None,
    k: int = FUSION_K,
) -> list[PackFact]:
    """The facts of several rankings by weighted reciprocal rank fusion (the sum of
    weight / (k + rank) over the rankings a fact is in, a fact known by its first
    claim), best first; a tie keeps the order the facts were first seen in."""
    score: dict[int, float] = {}
    first: dict[int, PackFact] = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for rank, fact in enumerate(ranking, start=1):
            claim = fact.claims[0].claim_id if fact.claims else -len(first) - 1
            score[claim] = score.get(claim, 0.0) + weight / (k + rank)
            first.setdefault(claim, fact)
    order = sorted(score, key=lambda claim: -score[claim])  # stable: first seen first
    return [first[claim] for claim in order]


def with_unnamed_turns(
    asked: Sequence[PackFact], unnamed: Sequence[PackFact], *, weight: float = UNNAMED_WEIGHT
) -> list[PackFact]:
    """A search's facts (`asked`) with the places its turns hold refilled by the turns
    of both searches fused (`unnamed`: the question searched without the speakers it
    names, weighing `weight`), best first; turns that do not fit in those places come
    after. Every fact that is not a turn keeps its place: leaving a name out is about
    turns ("Melanie said:" is in each of hers), and a structured fact about the person
    named (their manager, their team) must not lose the rank the name gave it."""
    turns = iter(
        fused(
            [[f for f in asked if _speaker(f)], [f for f in unnamed if _speaker(f)]],
            weights=[1.0, weight],
        )
    )
    out = [fact if _speaker(fact) is None else next(turns) for fact in asked]
    return out + list(turns)


def best_claims(facts: Sequence[PackFact], n: int = LIKE_HITS) -> tuple[int, ...]:
    """The claims of the first `n` facts (each fact's first), which a pack's second
    reading moves towards; none when no fact is a statement of prose, the only facts a
    second reading reorders (`with_like`): a pack of structured facts reads no more."""
    if not _prose(facts):
        return ()
    return tuple(fact.claims[0].claim_id for fact in facts[:n] if fact.claims)


def with_like(facts: Sequence[PackFact], like: Sequence[PackFact]) -> list[PackFact]:
    """The facts with the places its statements of prose (passages, turns) hold refilled
    by those of a second reading of the question, more like its best facts (`like`),
    fused by weighted reciprocal rank, the second weighing LIKE_WEIGHT. A structured
    fact keeps its place: the current value a question asks for ("runs on k8s-prod-2")
    is not reordered by what resembles it."""
    statements = iter(fused([_prose(facts), _prose(like)], weights=[1.0, LIKE_WEIGHT]))
    out = [fact if fact.predicate != PASSAGE_PREDICATE else next(statements) for fact in facts]
    return out + list(statements)


def _prose(facts: Sequence[PackFact]) -> list[PackFact]:
    return [fact for fact in facts if fact.predicate == PASSAGE_PREDICATE]


def speakers_named_first(facts: Sequence[PackFact], question: str) -> list[PackFact]:
    """The facts reranked for a question that names someone who speaks in them: a turn
    that person said ranks as if SPEAKER_WEIGHT times higher (by 1 / rank), since what
    a person said answers a question about them more often than what was said to them;
    every other order is kept. A speaker is named by their whole name or its first word
    (not a function word), as a word of the question."""
    named = set(named_speakers(facts, question))
    weights = [SPEAKER_WEIGHT if _speaker(fact) in named else 1.0 for fact in facts]
    if all(weight == 1.0 for weight in weights):
        return list(facts)
    order = sorted(range(len(facts)), key=lambda rank: (-weights[rank] / (rank + 1), rank))
    return [facts[rank] for rank in order]


def with_neighbours(
    facts: Sequence[PackFact], neighbours: Mapping[int, Sequence[PackFact]], *, hits: int
) -> list[PackFact]:
    """The facts in rank order, each of the first `hits` followed by its neighbours (the
    passages before and after it in its document, `beside` it): a hit's context is worth
    more than a hit far down the list (small-to-big)."""
    out: list[PackFact] = []
    for rank, fact in enumerate(facts):
        out.append(fact)
        if rank < hits:
            for claim in fact.claims[:1]:
                out.extend(
                    replace(n, beside=claim.claim_id) for n in neighbours.get(claim.claim_id, ())
                )
    return out


# --- Packing ---------------------------------------------------------------------------


def deduplicated(facts: Iterable[PackFact]) -> list[PackFact]:
    """Each fact once, where it ranks best; a later copy adds its claims and citations."""
    kept: dict[tuple[object, ...], PackFact] = {}
    for fact in facts:
        first = kept.get(fact.key)
        if first is None:
            kept[fact.key] = fact
            continue
        kept[fact.key] = replace(
            first,
            # A passage that is a hit in its own right is no longer only context.
            beside=first.beside if fact.beside is not None else None,
            citations=first.citations
            + tuple(c for c in fact.citations if c not in first.citations),
            claims=first.claims + tuple(c for c in fact.claims if c not in first.claims),
        )
    return list(kept.values())


def _cut(fact: PackFact, chars: int) -> PackFact:
    """The fact with at most MAX_CITATIONS citations, each snippet cut to `chars`."""
    return replace(
        fact,
        citations=tuple(
            replace(c, snippet=c.snippet[:chars].rstrip()) for c in fact.citations[:MAX_CITATIONS]
        ),
    )


class _Measure:
    """Token counts of rendered texts, estimated line by line (each distinct line counted
    once): exact for a tokenizer that never joins tokens across a line break, as
    WordPiece and BPE do not; `pack` checks the whole text with the real count anyway."""

    def __init__(self, count_tokens: TokenCounter) -> None:
        self.count_tokens = count_tokens
        self.lines: dict[str, int] = {}

    def estimate(self, lines: list[str]) -> int:
        for line in lines:
            if line not in self.lines:
                self.lines[line] = self.count_tokens(line)
        return sum(self.lines[line] for line in lines)


def pack(
    facts: Sequence[PackFact],
    *,
    token_budget: int,
    at: dt.datetime,
    count_tokens: TokenCounter,
    question: str = "",
    version: int = ASSEMBLER_VERSION,
) -> Pack:
    """The best of `facts` (best first) that fit `token_budget` tokens of rendered text.

    Greedy in rank order, current facts first: each fact goes in with its snippets as
    long as it still fits (cut shorter, then to nothing, if need be); a statement of
    prose that still does not fit goes in cut to its first sentence and those that share
    a word with the `question` ("..." where sentences were left out), if that fits; else
    it is left out and the next one tried. The budget counts the whole rendered pack
    with `count_tokens`:
    should the whole count more than its lines did, the last facts taken go again until
    it fits. `version` is the assembler's its header names (a snapshot's pinned one).
    """
    unique = deduplicated(facts)
    sections: tuple[list[PackFact], list[PackFact]] = ([], [])
    header = render([], [], at=at, version=version)
    if count_tokens(header) > token_budget:  # not even the header fits: an empty pack
        return Pack(at, token_budget, (), (), "", 0, version)
    _fill(
        sections, unique, at=at, token_budget=token_budget, count_tokens=count_tokens,
        terms=question_terms(question), version=version,
    )  # fmt: skip
    while True:
        text = render(*sections, at=at, version=version)
        tokens = count_tokens(text)
        if tokens <= token_budget:
            return Pack(
                at, token_budget, tuple(sections[0]), tuple(sections[1]), text, tokens, version
            )
        if not sections[0] and not sections[1]:  # a counter that disagrees with itself
            return Pack(at, token_budget, (), (), "", 0, version)
        (sections[1] or sections[0]).pop()


def _fill(
    sections: tuple[list[PackFact], list[PackFact]],
    unique: Sequence[PackFact],
    *,
    at: dt.datetime,
    token_budget: int,
    count_tokens: TokenCounter,
    terms: frozenset[str] = frozenset(),
    version: int = ASSEMBLER_VERSION,
) -> None:
    """Greedy in rank order, current facts first, each with its snippets as long as it
    still fits, else (prose) its sentences that match the question; when not even the
    best fact fits whole, its text is cut (never an empty pack when the search found
    something)."""
    measure = _Measure(count_tokens)

    def fits(into: list[PackFact], fact: PackFact) -> bool:
        into.append(fact)
        if measure.estimate(_lines(*sections, at=at, version=version)) <= token_budget:
            return True
        into.pop()
        return False

    for into, candidates in (
        (sections[0], [f for f in unique if f.current_at(at)]),
        (sections[1], [f for f in unique if not f.current_at(at)]),
    ):
        for fact in candidates:
            if any(fits(into, _cut(fact, chars)) for chars in SNIPPET_STEPS):
                continue
            if (matching := _matching(fact, terms)) is not None:
                fits(into, _cut(matching, 0))
    if not sections[0] and not sections[1] and unique:
        best = _cut(unique[0], 0)
        into = sections[0] if best.current_at(at) else sections[1]
        into.extend(
            _shortened(best, sections, into, at, token_budget, count_tokens, version=version)
        )


_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])\s+")
_WORD = re.compile(r"\w+")


def question_terms(question: str) -> frozenset[str]:
    """The words of a question that can tell a matching sentence (not its function words)."""
    return frozenset(
        word
        for word in _WORD.findall(question.casefold())
        if len(word) > 2 and word not in FUNCTION_WORDS
    )


def _matching(fact: PackFact, terms: frozenset[str]) -> PackFact | None:
    """A statement of prose cut to its first sentence (who said it, when) and those
    that share a word with the question, the gaps marked with an ellipsis; None when
    nothing would be left out or no sentence after the first matches."""
    if fact.predicate != PASSAGE_PREDICATE or not terms:
        return None
    sentences = _SENTENCE_END.split(_one_line(fact.fact))
    kept = [0] + [
        n for n, s in enumerate(sentences[1:], 1) if terms & set(_WORD.findall(s.casefold()))
    ]
    first_matches = bool(terms & set(_WORD.findall(sentences[0].casefold())))
    if len(kept) == len(sentences) or (len(kept) == 1 and not first_matches):
        return None
    parts: list[str] = []
    for position, n in enumerate(kept):
        if position and n != kept[position - 1] + 1:
            parts.append("\u2026")
        parts.append(sentences[n])
    if kept[-1] != len(sentences) - 1:
        parts.append("\u2026")
    return replace(fact, fact=" ".join(parts))


def _shortened(
    fact: PackFact,
    sections: tuple[list[PackFact], list[PackFact]],
    into: list[PackFact],
    at: dt.datetime,
    token_budget: int,
    count_tokens: TokenCounter,
    *,
    version: int = ASSEMBLER_VERSION,
) -> list[PackFact]:
    """The fact with its text cut at a word, marked by an ellipsis, as long as it fits
    (a binary search over its words); none when not one word does."""
    words = _one_line(fact.fact).split()

    def fits(n: int) -> bool:
        into.append(replace(fact, fact=" ".join(words[:n]) + " \u2026"))
        ok = count_tokens(render(*sections, at=at, version=version)) <= token_budget
        into.pop()
        return ok

    low, high = 0, len(words)  # the most words that fit lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return [replace(fact, fact=" ".join(words[:low]) + " \u2026")] if low else []


def pack_part(whole: Pack, group_id: str) -> Pack:
    """What of the pack one workspace holds: its claims and its citations, rendered alone
    (a pack kept under a workspace never carries another's text). `tokens` stays the
    served pack's count."""

    def own(fact: PackFact) -> PackFact | None:
        claims = tuple(c for c in fact.claims if c.group_id == group_id)
        if not claims:
            return None
        citations = tuple(c for c in fact.citations if c.group_id == group_id)
        # Worded by another workspace's claim (the same fact there, ranked first): the
        # part says it as the triple, not in the other's words.
        wording = fact.fact if fact.claims[0].group_id == group_id else _triple(fact)
        return replace(fact, fact=wording, claims=claims, citations=citations)

    current = tuple(f for f in map(own, whole.current) if f is not None)
    history = tuple(f for f in map(own, whole.history) if f is not None)
    text = (
        render(current, history, at=whole.at, version=whole.version) if current or history else ""
    )
    return replace(whole, current=current, history=history, text=text)


def pack_groups(whole: Pack) -> list[str]:
    """The workspaces whose claims the pack holds, sorted."""
    return sorted({claim.group_id for fact in whole.facts for claim in fact.claims})


# --- The request -----------------------------------------------------------------------


@dataclass(frozen=True)
class ContextRequest:
    """A validated context-pack request: the search it runs and the budget it packs to."""

    query: Query
    token_budget: int = DEFAULT_BUDGET


def parse_context(params: Mapping[str, str]) -> ContextRequest:
    """The validated request; InvalidQuery names every bad parameter with a message."""
    reader = ParamReader(params, allowed=CONTEXT_PARAMETERS)
    budget = reader.integer("budget", low=MIN_BUDGET, high=MAX_BUDGET)
    searched = {name: value for name, value in params.items() if name in CONTEXT_PARAMETERS}
    searched.pop("budget", None)
    try:
        query = parse_query(searched)
    except InvalidQuery as error:
        for name, message in error.errors.items():
            reader.fail(name, message)
        raise InvalidQuery(reader.errors) from None
    reader.check()
    budget = budget or DEFAULT_BUDGET
    return ContextRequest(query=replace(query, k=pack_depth(budget)), token_budget=budget)


def pack_depth(token_budget: int) -> int:
    """How many hits a pack of `token_budget` tokens reads: enough to fill it with short
    facts (a turn of a conversation), never fewer than PACK_DEPTH nor more than a
    search returns."""
    return min(MAX_PACK_DEPTH, max(PACK_DEPTH, token_budget // TOKENS_PER_HIT))
