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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from curation.domain.highlight import PASSAGE_PREDICATE
from kernel.params import InvalidQuery, ParamReader
from retrieval.domain.query import Query, parse_query

# Moves whenever what `pack` selects or how `render` writes it changes.
ASSEMBLER_VERSION = 2
MIN_BUDGET, DEFAULT_BUDGET, MAX_BUDGET = 50, 1000, 8000
PACK_DEPTH = 30  # hits a pack's search reads (a search's k; the REST search defaults to 10)
MAX_CITATIONS = 3  # per fact: a fourth source adds tokens, not trust
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


def _validity(fact: PackFact) -> str:
    if fact.valid_to is None:
        return f"since {_instant(fact.valid_from)}"
    return f"valid {_instant(fact.valid_from)} to {_instant(fact.valid_to)}"


def _letter(index: int) -> str:
    """A citation's letter after its fact's number: a, b, ... z, then -27, -28 ..."""
    return chr(ord("a") + index) if index < 26 else f"-{index + 1}"


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


def render(current: Sequence[PackFact], history: Sequence[PackFact], *, at: dt.datetime) -> str:
    """The pack as plain text: a header, one line per fact with its citation markers
    (current facts, then history marked as such), then one line per citation."""
    return "\n".join(_lines(current, history, at=at))


def _lines(
    current: Sequence[PackFact], history: Sequence[PackFact], *, at: dt.datetime
) -> list[str]:
    lines = [f"Facts as of {_instant(at)} (VERA context pack v{ASSEMBLER_VERSION})"]
    citations: list[str] = []
    number = 0
    for title, facts in (("Current:", current), ("History (not current):", history)):
        if not facts:
            continue
        lines.append(title)
        for fact in facts:
            number += 1
            markers = []
            for index, citation in enumerate(fact.citations):
                marker = f"[{number}{_letter(index)}]"
                markers.append(marker)
                where = _one_line(f"{citation.source}/{citation.episode}")
                # A local file's address says no more than its source and document do.
                shown = citation.url and not citation.url.startswith("file:")
                url = f" <{_one_line(citation.url)}>" if shown else ""
                quote = (
                    f' "{_one_line(citation.snippet)}"'
                    if adds_to(citation.snippet, fact.fact)
                    else ""
                )
                citations.append(f"{marker} {where}{url}{quote}")
            # Under "Current:" every fact is published: only history says its status.
            status = "" if facts is current else fact.status
            about = "; ".join(
                part
                for part in (_about(fact), _validity(fact), f"tier {fact.tier}", status)
                if part
            )
            lines.append(
                f"[{number}] {_one_line(fact.fact)} ({about})"
                + (f" {''.join(markers)}" if markers else "")
            )
    if citations:
        lines.append("Sources:")
        lines.extend(citations)
    return lines


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
    facts: Sequence[PackFact], *, token_budget: int, at: dt.datetime, count_tokens: TokenCounter
) -> Pack:
    """The best of `facts` (best first) that fit `token_budget` tokens of rendered text.

    Greedy in rank order, current facts first: each fact goes in with its snippets as
    long as it still fits (cut shorter, then to nothing, if need be), or is left out and
    the next one tried. The budget counts the whole rendered pack with `count_tokens`:
    should the whole count more than its lines did, the last facts taken go again until
    it fits.
    """
    unique = deduplicated(facts)
    sections: tuple[list[PackFact], list[PackFact]] = ([], [])
    header = render([], [], at=at)
    if count_tokens(header) > token_budget:  # not even the header fits: an empty pack
        return Pack(at, token_budget, (), (), "", 0)
    _fill(sections, unique, at=at, token_budget=token_budget, count_tokens=count_tokens)
    while True:
        text = render(*sections, at=at)
        tokens = count_tokens(text)
        if tokens <= token_budget:
            return Pack(at, token_budget, tuple(sections[0]), tuple(sections[1]), text, tokens)
        if not sections[0] and not sections[1]:  # a counter that disagrees with itself
            return Pack(at, token_budget, (), (), "", 0)
        (sections[1] or sections[0]).pop()


def _fill(
    sections: tuple[list[PackFact], list[PackFact]],
    unique: Sequence[PackFact],
    *,
    at: dt.datetime,
    token_budget: int,
    count_tokens: TokenCounter,
) -> None:
    """Greedy in rank order, current facts first, each with its snippets as long as it
    still fits; when not even the best fact fits whole, its text is cut (never an empty
    pack when the search found something)."""
    measure = _Measure(count_tokens)
    for into, candidates in (
        (sections[0], [f for f in unique if f.current_at(at)]),
        (sections[1], [f for f in unique if not f.current_at(at)]),
    ):
        for fact in candidates:
            for chars in SNIPPET_STEPS:
                into.append(_cut(fact, chars))
                if measure.estimate(_lines(*sections, at=at)) <= token_budget:
                    break
                into.pop()
    if not sections[0] and not sections[1] and unique:
        best = _cut(unique[0], 0)
        into = sections[0] if best.current_at(at) else sections[1]
        into.extend(_shortened(best, sections, into, at, token_budget, count_tokens))


def _shortened(
    fact: PackFact,
    sections: tuple[list[PackFact], list[PackFact]],
    into: list[PackFact],
    at: dt.datetime,
    token_budget: int,
    count_tokens: TokenCounter,
) -> list[PackFact]:
    """The fact with its text cut at a word, marked by an ellipsis, as long as it fits
    (a binary search over its words); none when not one word does."""
    words = _one_line(fact.fact).split()

    def fits(n: int) -> bool:
        into.append(replace(fact, fact=" ".join(words[:n]) + " \u2026"))
        ok = count_tokens(render(*sections, at=at)) <= token_budget
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
    text = render(current, history, at=whole.at) if current or history else ""
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
    return ContextRequest(query=replace(query, k=PACK_DEPTH), token_budget=budget or DEFAULT_BUDGET)
