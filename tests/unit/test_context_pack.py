"""The context-pack assembler (pure): budget, each fact once, current before history,
determinism; and the request's parameters."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.params import InvalidQuery
from retrieval.adapters.tokenizer import WordPieceTokenizer
from retrieval.domain.context import (
    DEFAULT_BUDGET,
    MAX_BUDGET,
    MAX_PACK_DEPTH,
    MIN_BUDGET,
    PACK_DEPTH,
    PackCitation,
    PackClaim,
    PackFact,
    TokenCounter,
    fused,
    named_speakers,
    pack,
    pack_depth,
    pack_part,
    parse_context,
    question_terms,
    render,
    speakers_named_first,
    with_neighbours,
    with_unnamed_turns,
    without_names,
)

AT = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
DAYS = [AT + dt.timedelta(days=n) for n in (-300, -100, -10, 0, 5, 50)]
WORDPIECE = WordPieceTokenizer()


def words(text: str) -> int:
    """Additive over lines: what the line-by-line estimate assumes."""
    return len(text.split())


def quarters(text: str) -> int:
    """A characters/4 count: the whole text counts more than its lines (the line breaks)."""
    return math.ceil(len(text) / 4)


COUNTERS: list[TokenCounter] = [words, quarters, WORDPIECE.count]

citations = st.builds(
    PackCitation,
    source=st.sampled_from(["docs", "cmdb"]),
    episode=st.sampled_from(["billing.md", "team.md", "ledger.md"]),
    url=st.sampled_from(["", "https://example.org/x"]),
    snippet=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300),
    group_id=st.sampled_from(["w:a", "w:b"]),
)


@st.composite
def facts(draw: st.DrawFn) -> PackFact:
    start = draw(st.sampled_from(DAYS))
    end = draw(st.one_of(st.none(), st.sampled_from([d for d in DAYS if d > start] or [None])))
    group = draw(st.sampled_from(["w:a", "w:b"]))
    return PackFact(
        fact=draw(st.text(min_size=1, max_size=120)),
        # Few values, so that the same fact (subject, predicate, object, validity) recurs.
        subject=draw(st.sampled_from(["billing-api", "Billing-API", "ledger-db"])),
        predicate=draw(st.sampled_from(["RUNS_ON", "OWNED_BY"])),
        object_text=draw(st.sampled_from(["k8s-prod-1", "k8s-prod-2"])),
        valid_from=start,
        valid_to=end,
        tier=draw(st.integers(1, 4)),
        status=draw(st.sampled_from(["published", "superseded", "retracted"])),
        citations=tuple(draw(st.lists(citations, max_size=5))),
        claims=(PackClaim(draw(st.integers(1, 50)), group, (draw(st.integers(1, 9)),)),),
    )


hits = st.lists(facts(), max_size=PACK_DEPTH)
budgets = st.integers(min_value=0, max_value=MAX_BUDGET)
counters = st.sampled_from(COUNTERS)


@settings(max_examples=150, deadline=None)
@given(hits, budgets, counters)
def test_the_budget_holds_counting_the_whole_rendered_text_when_packing(
    ranked: list[PackFact], budget: int, count: TokenCounter
) -> None:
    packed = pack(ranked, token_budget=budget, at=AT, count_tokens=count)
    assert packed.tokens == count(packed.text)
    assert packed.tokens <= budget


@settings(max_examples=150, deadline=None)
@given(hits, budgets, counters)
def test_no_fact_is_packed_twice_when_hits_repeat_it(
    ranked: list[PackFact], budget: int, count: TokenCounter
) -> None:
    packed = pack(ranked, token_budget=budget, at=AT, count_tokens=count)
    keys = [fact.key for fact in packed.facts]
    assert len(keys) == len(set(keys))


@settings(max_examples=150, deadline=None)
@given(hits, budgets, counters)
def test_current_facts_come_before_history_and_history_is_never_current(
    ranked: list[PackFact], budget: int, count: TokenCounter
) -> None:
    packed = pack(ranked, token_budget=budget, at=AT, count_tokens=count)
    assert all(fact.current_at(AT) for fact in packed.current)
    assert not any(fact.current_at(AT) for fact in packed.history)
    if packed.current and packed.history:
        assert packed.text.index("\nCurrent (") < packed.text.index("\nHistory (not current; ")


@settings(max_examples=100, deadline=None)
@given(hits, budgets, counters)
def test_the_same_inputs_give_the_same_pack(
    ranked: list[PackFact], budget: int, count: TokenCounter
) -> None:
    first = pack(ranked, token_budget=budget, at=AT, count_tokens=count)
    again = pack(list(ranked), token_budget=budget, at=AT, count_tokens=count)
    assert first == again


@settings(max_examples=100, deadline=None)
@given(hits, budgets)
def test_a_workspace_part_holds_only_its_own_claims_and_citations(
    ranked: list[PackFact], budget: int
) -> None:
    packed = pack(ranked, token_budget=budget, at=AT, count_tokens=words)
    part = pack_part(packed, "w:a")
    assert all(c.group_id == "w:a" for fact in part.facts for c in fact.claims)
    assert all(c.group_id == "w:a" for fact in part.facts for c in fact.citations)
    assert {c.claim_id for f in packed.facts for c in f.claims if c.group_id == "w:a"} == set(
        part.claim_ids
    )


def _fact(obj: str, *, status: str = "published", start: int = -10, end: int | None = None,
          snippet: str = "The billing-api runs on it.") -> PackFact:  # fmt: skip
    return PackFact(
        fact=f"The billing-api runs on {obj}.", subject="billing-api", predicate="RUNS_ON",
        object_text=obj, valid_from=AT + dt.timedelta(days=start),
        valid_to=AT + dt.timedelta(days=end) if end is not None else None, tier=1,
        status=status, citations=(PackCitation("docs", "billing.md", "", snippet, "w:a"),),
        claims=(PackClaim(len(obj), "w:a", (1,)),),
    )  # fmt: skip


def test_a_superseded_value_is_history_marked_with_its_validity_when_a_newer_one_is_current() -> (
    None
):
    old = _fact("k8s-prod-1", status="superseded", start=-100, end=-10)
    new = _fact("k8s-prod-2", start=-10)
    packed = pack([old, new], token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words)
    assert [f.object_text for f in packed.current] == ["k8s-prod-2"]
    assert [f.object_text for f in packed.history] == ["k8s-prod-1"]
    history = packed.text.split("History (not current; ")[1]
    assert "k8s-prod-1" in history
    assert "valid 2026-02-21T00:00:00Z to 2026-05-22T00:00:00Z" in history


def test_a_published_fact_that_ended_before_the_instant_is_not_current_when_packed() -> None:
    ended = _fact("k8s-prod-1", start=-100, end=-1)
    packed = pack([ended], token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words)
    assert packed.current == ()
    assert len(packed.history) == 1


def test_snippets_are_cut_rather_than_the_fact_dropped_when_the_budget_is_tight() -> None:
    long = _fact("k8s-prod-2", snippet="word " * 99)  # 495 characters, as a hit's may be
    roomy = pack([long], token_budget=MAX_BUDGET, at=AT, count_tokens=words)
    tight = pack([long], token_budget=80, at=AT, count_tokens=words)
    assert len(roomy.facts[0].citations[0].snippet) == len(long.citations[0].snippet.rstrip())
    assert len(tight.facts) == 1
    assert len(tight.facts[0].citations[0].snippet) < len(long.citations[0].snippet.rstrip())
    assert tight.tokens <= 80


def test_the_best_ranked_fact_is_the_one_kept_when_only_one_fits() -> None:
    ranked = [_fact(f"k8s-prod-{n}", snippet="") for n in range(1, 6)]
    one = len(render(ranked[:1], [], at=AT).split())
    packed = pack(ranked, token_budget=one, at=AT, count_tokens=words)
    assert [f.object_text for f in packed.facts] == ["k8s-prod-1"]


def test_a_budget_below_the_header_gives_an_empty_pack() -> None:
    packed = pack([_fact("k8s-prod-1")], token_budget=3, at=AT, count_tokens=words)
    assert (packed.facts, packed.text, packed.tokens) == ((), "", 0)


def test_the_wordpiece_tokenizer_counts_without_special_tokens() -> None:
    assert WORDPIECE.count("") == 0
    assert WORDPIECE.count("billing") == 1
    assert WORDPIECE.count("billing api") == WORDPIECE.count("billing") + WORDPIECE.count("api")


def test_a_context_request_defaults_its_budget_and_searches_deeper_for_a_larger_one() -> None:
    request = parse_context({"q": "where does billing-api run"})
    assert request.token_budget == DEFAULT_BUDGET
    assert request.query.k == pack_depth(DEFAULT_BUDGET) == 40
    assert parse_context({"q": "a", "budget": str(MIN_BUDGET)}).query.k == PACK_DEPTH
    assert parse_context({"q": "a", "budget": str(MAX_BUDGET)}).query.k == MAX_PACK_DEPTH


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"q": "a", "budget": str(MIN_BUDGET - 1)}, "budget"),
        ({"q": "a", "budget": str(MAX_BUDGET + 1)}, "budget"),
        ({"q": "a", "budget": "lots"}, "budget"),
        ({"q": "", "budget": "100"}, "q"),
        ({"q": "a", "k": "5"}, "detail"),
        ({"q": "a", "as_of": "yesterday"}, "as_of"),
        ({"q": "a", "scope": "nope"}, "scope"),
    ],
)
def test_a_bad_context_request_names_its_parameter(params: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidQuery) as raised:
        parse_context(params)
    assert field in raised.value.errors


def test_a_workspace_part_never_carries_another_workspaces_wording_when_a_fact_is_shared() -> None:
    worded_by_a = _fact("k8s-prod-2", snippet="A's own snippet")
    shared = PackFact(
        **{
            **worded_by_a.__dict__,
            "fact": "A's wording of it",
            "claims": (PackClaim(1, "w:a", (1,)), PackClaim(2, "w:b", (2,))),
        }
    )
    packed = pack([shared], token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words)
    part = pack_part(packed, "w:b")
    assert part.claim_ids == [2]
    assert part.episode_ids == [2]
    assert "A's" not in part.text
    assert "billing-api RUNS_ON k8s-prod-2" in part.text


PROSE = (
    "On 8 May 2023 Caroline said she went to the LGBTQ support group yesterday and it was "
    "so powerful, she felt accepted and wants to keep going every week after work."
)


def _prose(text: str = PROSE, snippet: str = PROSE) -> PackFact:
    return PackFact(
        fact=text, subject="Caroline", predicate="STATES", object_text=text,
        valid_from=DAYS[2], valid_to=None, tier=4, status="published",
        citations=(PackCitation("chat", "session-1.md", "", snippet, "w:a"),),
        claims=(PackClaim(7, "w:a", (3,)),),
    )  # fmt: skip


def test_a_statement_of_prose_is_written_once_in_a_pack() -> None:
    packed = pack([_prose()], token_budget=DEFAULT_BUDGET, at=AT, count_tokens=WORDPIECE.count)
    assert packed.text.count("LGBTQ support group") == 1, packed.text
    assert "STATES" not in packed.text
    # The citation still names its source, once, for every fact of the pack.
    assert packed.text.endswith("Sources of every fact:\n[S1] chat/session-1.md"), packed.text


def test_a_snippet_is_quoted_only_when_it_says_more_than_the_fact() -> None:
    wider = "Melanie asked how it went. " + PROSE
    packed = pack([_prose(snippet=wider)], token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words)
    assert "Melanie asked how it went." in packed.text


def test_a_structured_fact_naming_its_subject_and_object_keeps_only_its_predicate() -> None:
    fact = _fact("k8s-prod-1")
    line = next(line for line in render([fact], [], at=AT).splitlines() if line.startswith("[1]"))
    assert line.startswith("[1] The billing-api runs on k8s-prod-1. (RUNS_ON; since 2026-05-22")
    assert "billing-api RUNS_ON k8s-prod-1" not in line
    assert "published" not in line  # under "Current:", every fact is


def test_a_local_files_address_is_not_spent_on_tokens_and_a_web_address_is() -> None:
    local = PackCitation("docs", "billing.md", "file:///srv/docs/billing.md", "", "w:a")
    web = PackCitation("wiki", "123", "https://wiki.example.org/123", "", "w:a")
    fact = PackFact(**{**_fact("k8s-prod-1").__dict__, "citations": (local, web)})
    text = render([fact], [], at=AT)
    assert "file://" not in text
    assert "[S1] docs/billing.md\n" in text + "\n"
    assert "<https://wiki.example.org/123>" in text


@pytest.mark.parametrize("budget", [100, 150, 300])
def test_a_pack_holds_a_cited_fact_however_tight_when_the_search_found_one(budget: int) -> None:
    long = _prose(text=" ".join([PROSE] * 6), snippet="")
    packed = pack([long], token_budget=budget, at=AT, count_tokens=WORDPIECE.count)
    assert len(packed.facts) == 1
    assert packed.facts[0].citations
    assert packed.tokens <= budget
    assert packed.tokens == WORDPIECE.count(packed.text)


def _said(
    n: int,
    words: str,
    *,
    source: str = "chat",
    claim: int | None = None,
    speaker: str = "Caroline",
    day: int = 8,
) -> PackFact:
    """A turn of a conversation as its extractor states it (text names its day)."""
    text = f"On {day} May 2023, {speaker} said: {words}"
    return PackFact(
        fact=text, subject="Caroline and Melanie", predicate="STATES", object_text=text,
        valid_from=dt.datetime(2023, 5, day, tzinfo=dt.UTC), valid_to=None, tier=4,
        status="published",
        citations=(PackCitation(source, "conv-1.json", "", text, "w:a"),),
        claims=(PackClaim(claim or n, "w:a", (1,)),),
    )  # fmt: skip


def test_sources_are_listed_once_and_facts_citing_different_ones_carry_markers() -> None:
    one, two = _said(1, "I paint."), _said(2, "I swim.", source="slack")
    text = pack([one, two], token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words).text
    assert "\nOn 8 May 2023:\n[1] Caroline said: I paint. [S1]\n" in text
    assert "\n[2] Caroline said: I swim. [S2]\n" in text
    assert text.endswith("Sources:\n[S1] chat/conv-1.json\n[S2] slack/conv-1.json")


def test_a_day_the_text_names_is_not_repeated_as_validity_and_a_usual_tier_is_said_once() -> None:
    fact = _said(1, "I paint.")
    other = replace(_said(2, "I swim."), tier=2)
    text = render([fact, other], [], at=AT)
    assert "since" not in text
    assert "Current (tier 2 unless noted):" in text or "Current (tier 4 unless noted):" in text
    tiers = [line for line in text.splitlines() if "(tier " in line and line.startswith("[")]
    assert len(tiers) == 1, text  # only the fact whose tier differs says it


def test_a_neighbouring_turn_is_packed_after_its_hit_and_says_whose_neighbour_it_is() -> None:
    hit, later = _said(1, "I went to the support group."), _said(2, "It was powerful.")
    ranked = with_neighbours([hit, _said(3, "I paint.")], {1: [later]}, hits=1)
    assert [f.fact.rsplit(": ", 1)[1] for f in ranked] == [
        "I went to the support group.", "It was powerful.", "I paint.",
    ]  # fmt: skip
    text = pack(ranked, token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words).text
    assert "[2] Caroline said: It was powerful. (beside [1])" in text


def test_a_neighbour_that_is_also_a_hit_is_packed_once_as_a_hit() -> None:
    hit, other = _said(1, "I went to the support group."), _said(2, "It was powerful.")
    ranked = with_neighbours([hit, other], {1: [other]}, hits=1)
    packed = pack(ranked, token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words)
    assert len(packed.facts) == 2
    assert all(fact.beside is None for fact in packed.facts)
    assert "beside" not in packed.text


LONG_TURN = (
    "I had a busy week at work and the weather was awful. "
    "My sister visited on Tuesday and we cooked together. "
    "On Saturday I ran my first marathon in Boston and finished in four hours. "
    "Then we watched a film about whales. "
    "Next week I start painting lessons at the community centre."
)


def test_a_tight_pack_cuts_prose_to_the_sentences_that_match_the_question() -> None:
    fact = _said(1, LONG_TURN)
    whole = len(render([fact], [], at=AT).split())
    packed = pack(
        [fact], token_budget=whole - 15, at=AT, count_tokens=words,
        question="When did Caroline run a marathon?",
    )  # fmt: skip
    (kept,) = packed.facts
    assert kept.fact == (
        "On 8 May 2023, Caroline said: I had a busy week at work and the weather was awful. "
        "\u2026 On Saturday I ran my first marathon in Boston and finished in four hours. \u2026"
    )
    assert packed.tokens <= whole - 15


def test_question_terms_leave_out_function_words() -> None:
    assert question_terms("When did Caroline go to the LGBTQ support group?") >= {
        "caroline", "lgbtq", "support", "group",
    }  # fmt: skip
    assert not question_terms("When did she go to the?") & {"when", "did", "the"}


def test_a_pack_of_turns_repeats_no_text() -> None:
    turns = [_said(n, f"Sentence number {n} is about topic {n * 7}.") for n in range(1, 30)]
    ranked = with_neighbours(turns, {1: [turns[1]], 2: [turns[0], turns[2]]}, hits=3)
    text = pack(ranked, token_budget=MAX_BUDGET, at=AT, count_tokens=words).text
    said = [line.split("said: ", 1)[1] for line in text.splitlines() if "said: " in line]
    assert len(said) == len(set(said)) == 29
    assert "STATES" not in text


def test_turns_said_on_one_day_are_shown_under_it_each_day_where_it_first_ranks() -> None:
    ranked = [
        _said(1, "I paint.", day=9),
        _said(2, "I swim.", day=8, speaker="Melanie"),
        _said(3, "I run.", day=9, speaker="Melanie"),
        _fact("k8s-prod-1"),
    ]
    text = pack(ranked, token_budget=DEFAULT_BUDGET, at=AT, count_tokens=words).text
    shown = text.splitlines()[2:8]  # after the header and the section's title
    expected = [
        "On 9 May 2023:",
        "[1] Caroline said: I paint. [S1]",
        "[2] Melanie said: I run. [S1]",
        "On 8 May 2023:",
        "[3] Melanie said: I swim. [S1]",
        "[4] The billing-api runs on k8s-prod-1.",  # no day: alone where it ranks
    ]
    assert [line[: len(want)] for line, want in zip(shown, expected, strict=True)] == expected
    assert text.count("May 2023") == 2  # each day once: the turns no longer repeat it
    for day in ("9 May 2023", "8 May 2023"):
        assert f"On {day}, " not in text


def test_a_turn_said_by_the_person_the_question_names_ranks_higher() -> None:
    ranked = [
        _said(1, "Caroline, you paint so well!", speaker="Melanie"),
        _said(2, "Nice weather.", speaker="Melanie"),
        _said(3, "I started pottery classes.", speaker="Caroline"),
        _fact("k8s-prod-1"),  # claim 10
    ]
    order = [f.claims[0].claim_id for f in speakers_named_first(ranked, "What does Caroline do?")]
    assert order == [1, 3, 2, 10]  # 3 (1/3 doubled) passes 2 (1/2), not 1 (1/1)
    assert speakers_named_first(ranked, "what runs on k8s-prod-1") == ranked  # no one named
    turns = [_said(1, "Hi."), _said(2, "Hey."), _said(3, "Hello.", speaker="Zoë O'Neill")]
    named_in_full = speakers_named_first(turns, "what did zoë o'neill say")
    assert [f.claims[0].claim_id for f in named_in_full] == [1, 3, 2]
    # A speaker whose first word is a function word is not named by that word.
    the_bot = [_said(1, "Hi."), _said(2, "Beep.", speaker="The Bot")]
    assert speakers_named_first(the_bot, "what is the plan") == the_bot


def test_the_speakers_a_question_names_are_those_who_speak_in_the_facts() -> None:
    ranked = [
        _said(1, "Hi, Caroline!", speaker="Melanie"),
        _said(2, "Hello.", speaker="Zoë O'Neill"),
        _said(3, "I paint."),
        _fact("k8s-prod-1"),
    ]
    assert named_speakers(ranked, "What does Caroline paint?") == ["Caroline"]
    # In the order their first turn ranks; a name in full or by its first word.
    assert named_speakers(ranked, "Did zoë o'neill and Melanie meet Caroline?") == [
        "Melanie", "Zoë O'Neill", "Caroline",
    ]  # fmt: skip
    assert named_speakers(ranked, "what runs on k8s-prod-1") == []
    # A name of one word with a hyphen or an apostrophe is named whole, as a word.
    hyphen = [_said(1, "Hi.", speaker="Ann-Marie"), _said(2, "Yo.", speaker="O'Hara")]
    assert named_speakers(hyphen, "What did Ann-Marie and O'Hara run?") == ["Ann-Marie", "O'Hara"]
    assert named_speakers(hyphen, "What did Ann run?") == []  # a part is not the name
    assert named_speakers([_said(1, "Hi.", speaker="The")], "Who is the boss?") == []
    assert named_speakers([_fact("k8s-prod-1")], "what does k8s-prod-1 run") == []


@pytest.mark.parametrize(
    ("question", "names", "asked"),
    [
        ("What activities does Melanie do?", ["Melanie"], "What activities does do?"),
        ("What do Melanie's kids like?", ["Melanie"], "What do kids like?"),
        ("What do MELANIE\u2019s kids like?", ["Melanie"], "What do kids like?"),
        ("When did Zoë O'Neill and Zoë meet Bo?", ["Zoë O'Neill"], "When did and meet Bo?"),
        ("What did Caroline and Melanie both paint?", ["Caroline", "Melanie"],
         "What did and both paint?"),
        ("Who is Melanie?", ["Melanie"], ""),  # nothing left to search by
        ("Melanie", ["Melanie"], ""),
        ("What did Melanies say?", ["Melanie"], "What did Melanies say?"),  # not the name
        ("What did Ann Lee cook?", ["Ann Lee"], "What did cook?"),
        # A name's first word that is a function word is left where the name is not.
        ("What did The Bot say about the plan?", ["The Bot"], "What did say about the plan?"),
        ("Did (Admin) C++ ask?", ["(Admin) C++"], "Did ask?"),  # no word edge at the brackets
    ],
)  # fmt: skip
def test_a_question_without_the_names_keeps_every_other_word(
    question: str, names: list[str], asked: str
) -> None:
    assert without_names(question, names) == asked


def test_rankings_fuse_by_reciprocal_rank_each_fact_once() -> None:
    a, b, c, d = (_said(n, f"words {n}", claim=n) for n in (1, 2, 3, 4))
    # 2 is second in both (2/62) and passes 1 and 3, first in one each (1/61 + 0).
    assert [f.claims[0].claim_id for f in fused([[a, b, d], [c, b]])] == [2, 1, 3, 4]
    assert fused([[a, b], []]) == [a, b]
    assert fused([[], []]) == []
    # A tie keeps the order the facts were first seen in; a weight breaks it.
    assert [f.claims[0].claim_id for f in fused([[a], [c]])] == [1, 3]
    assert [f.claims[0].claim_id for f in fused([[a, c], [c, a]], weights=[1, 2])] == [3, 1]
    with pytest.raises(ValueError, match="zip"):
        fused([[a], [c]], weights=[1])


def test_turns_found_without_the_names_take_the_turns_places_and_other_facts_keep_theirs() -> None:
    said_to = _said(1, "Thanks, Melanie!", claim=1)
    answer = _said(2, "I ran a charity race.", speaker="Melanie", claim=2)
    other = _said(3, "Nice race.", claim=3)
    team = _fact("k8s-prod-1")  # claim 10: not a turn
    asked = [said_to, team, answer]
    unnamed = [answer, other, _fact("k8s-prod-2")]  # a fact that is not a turn: ignored
    order = [f.claims[0].claim_id for f in with_unnamed_turns(asked, unnamed)]
    # The turns' places (first and third) go to the fused turns, 2 (1/62 + 2/61) then 3
    # (2/62); 1 (1/61) comes after them all; claim 10 stays second.
    assert order == [2, 10, 3, 1]
    assert with_unnamed_turns([team], []) == [team]
    assert [f.claims[0].claim_id for f in with_unnamed_turns([team], [answer])] == [10, 2]
