"""Query understanding: mentions, the relation asked for, a stated time (pure), and the
relation of a question in another language found through e5's embedding."""

from __future__ import annotations

import datetime as dt

import pytest

from curation.domain.ontology import DEFAULT_ONTOLOGY, Ontology, PredicateSense
from retrieval.adapters.embedders import E5Embedder
from retrieval.domain import understanding as rules
from retrieval.domain.understanding import Understanding
from retrieval.services.search.understanding import with_meaning

KNOWN = {"billing-api", "ledger-db", "stock-notify-queue", "notify-stock-queue", "billing"}


def _relation(question: str, known: set[str] = KNOWN) -> tuple[str, ...]:
    mentions = rules.choose_mentions(rules.candidate_spans(question), known)
    masked = rules.masked(question, mentions)
    return rules.asked_relation(rules.relation_scores(masked, DEFAULT_ONTOLOGY))


def _mentioned(question: str) -> list[str]:
    return [span.norm for span in rules.choose_mentions(rules.candidate_spans(question), KNOWN)]


@pytest.mark.parametrize(
    ("question", "relation"),
    [
        ("what does billing-api run on", "RUNS_ON"),
        ("where does billing-api run?", "RUNS_ON"),
        ("who owns billing-api", "OWNED_BY"),
        ("what does ledger-db depend on", "DEPENDS_ON"),
        ("which version is billing-api", "HAS_VERSION"),
        ("which region is ledger-db in", "HOSTED_IN"),
        ("what language is billing-api written in", "WRITTEN_IN"),
        ("where is billing-api deployed", "DEPLOYED_TO"),
    ],
)
def test_the_asked_relation_is_understood_when_a_plain_question_names_it(
    question: str, relation: str
) -> None:
    assert _relation(question) == (relation,)


def test_no_relation_is_understood_when_the_question_asks_none() -> None:
    assert _relation("billing-api") == ()


def test_the_longest_known_name_is_the_mention_when_names_overlap() -> None:
    assert _mentioned("who owns billing-api now") == ["billing-api"]
    assert _mentioned("where does stock-notify-queue run") == ["stock-notify-queue"]


def test_function_words_alone_are_never_a_mention() -> None:
    spans = rules.candidate_spans("what does it do")
    assert spans == []


def test_a_workspace_sense_is_understood_when_it_adds_its_own_words() -> None:
    own = PredicateSense(
        name="ON_CALL", label="is on call for", words=("pager", "on-call", "rota"),
        questions=("who is on call for X",),
    )  # fmt: skip
    ontology = DEFAULT_ONTOLOGY.overridden([own], version=1)
    masked = rules.masked("who carries the pager for billing-api", [rules.Span(5, 6, "x")])
    assert rules.asked_relation(rules.relation_scores(masked, ontology)) == ("ON_CALL",)


@pytest.mark.parametrize(
    ("question", "relation"),
    [
        # the word after "which"/"what" names the answer's type, whatever the verb says
        ("which stage does billing-api run in", "DEPLOYED_TO"),
        ("what region hosts ledger-db", "HOSTED_IN"),
        # a word as the ontology writes it beats one met through a stem ("hosted")
        ("billing-api host", "RUNS_ON"),
        # a function word a sense lists alone still counts for it
        ("whose is billing-api", "OWNED_BY"),
    ],
)
def test_the_asked_relation_is_understood_when_the_words_alone_weigh_it(
    question: str, relation: str
) -> None:
    assert _relation(question) == (relation,)


def test_a_phrase_counts_only_whole_when_the_ontology_lists_one() -> None:
    # "working on" (ASSIGNED_TO) is a phrase: "to work" alone does not ask for an assignee
    scores = rules.relation_scores("what must be up for X to work", DEFAULT_ONTOLOGY)
    assert scores["ASSIGNED_TO"] < rules.MIN_SCORE
    assert rules.relation_scores("who is working on X", DEFAULT_ONTOLOGY)["ASSIGNED_TO"] >= 1


def test_a_word_two_senses_list_counts_half_for_each_when_it_is_asked() -> None:
    first = PredicateSense(name="GUARDS", label="guards", words=("gate",))
    second = PredicateSense(name="OPENS", label="opens", words=("gate", "door"))
    ontology = Ontology(senses={"GUARDS": first, "OPENS": second})
    assert rules.relation_scores("X gate", ontology) == {"GUARDS": 0.5, "OPENS": 0.5}
    assert rules.relation_scores("X door", ontology) == {"GUARDS": 0.0, "OPENS": 1.0}


def test_a_named_value_points_at_the_relations_it_is_the_object_of() -> None:
    hints = rules.value_hints([{"DEPLOYED_TO": 3, "HAS_STATUS": 1}, {"DEPLOYED_TO": 2}])
    assert hints == {"DEPLOYED_TO": 1.75, "HAS_STATUS": 0.25}
    scores = rules.relation_scores("is X in prod-eu or prod-us", DEFAULT_ONTOLOGY, values=hints)
    assert rules.asked_relation(scores) == ("DEPLOYED_TO",)


def test_a_masked_question_is_embedded_without_its_slot_in_any_language() -> None:
    assert rules.spoken("what does X run on") == "what does run on"
    assert rules.spoken("X phụ thuộc vào dịch vụ nào?") == "phụ thuộc vào dịch vụ nào?"
    assert rules.spoken("what does XL run on") == "what does XL run on"


@pytest.mark.parametrize(
    ("text", "end", "words"),
    [
        ("who owned billing-api as of March 2022", dt.date(2022, 3, 31), "as of March 2022"),
        ("where did ledger-db run in 2021?", dt.date(2021, 12, 31), "in 2021"),
        ("owner of billing-api on 2023-02-14", dt.date(2023, 2, 14), "on 2023-02-14"),
        ("who did Noah report to on 4 March 2019?", dt.date(2019, 3, 4), "on 4 March 2019"),
        ("host of svc-1 on the 4th of Sept 2019", dt.date(2019, 9, 4), "on the 4th of Sept 2019"),
        ("where did svc-1 run on March 4, 2019", dt.date(2019, 3, 4), "on March 4, 2019"),
        ("team of Mai as of Feb 29th 2024", dt.date(2024, 2, 29), "as of Feb 29th 2024"),
    ],
)
def test_a_stated_time_is_the_end_of_its_period_when_a_question_states_one(
    text: str, end: dt.date, words: str
) -> None:
    as_of, said = rules.stated_time(text)
    assert as_of == dt.datetime.combine(end, dt.time.max, tzinfo=dt.UTC)
    assert said == words


@pytest.mark.parametrize(
    "text",
    ["billing-api version 2021", "where does vm-2021 run", "as of 2022-02-30", "on 31 June 2021"],
)
def test_no_time_is_read_when_a_number_is_not_a_stated_time(text: str) -> None:
    assert rules.stated_time(text) == (None, "")


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    embedder = E5Embedder(role="query", batch_size=8)
    embedder.warm_up()
    return embedder


@pytest.mark.parametrize(
    ("question", "relation"),
    [
        ("ai sở hữu billing-api?", "OWNED_BY"),
        ("billing-api phụ thuộc vào dịch vụ nào?", "DEPENDS_ON"),
        ("billing-api được viết bằng ngôn ngữ gì?", "WRITTEN_IN"),
        ("billing-api chạy trên máy chủ nào?", "RUNS_ON"),
        ("billing-api được triển khai ở môi trường nào?", "DEPLOYED_TO"),
        ("billing-api phiên bản nào?", "HAS_VERSION"),
    ],
)
def test_a_vietnamese_question_finds_its_relation_with_e5_when_its_words_alone_do_not(
    e5: E5Embedder, question: str, relation: str
) -> None:
    mentions = rules.choose_mentions(rules.candidate_spans(question), KNOWN)
    found = Understanding(
        entities=("billing-api",), question=rules.masked(question, mentions),
        ontology=DEFAULT_ONTOLOGY,
    )  # fmt: skip
    assert rules.asked_relation(rules.relation_scores(found.question, DEFAULT_ONTOLOGY)) == ()
    spoken = rules.spoken(found.question)  # as search embeds it: without the name
    assert with_meaning(found, e5.embed([spoken])[0], e5).predicates == (relation,)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("who is Noah Dubois's manager?", "noah dubois"),
        ("billing-api\u2019s owner", "billing-api"),
        ("the Joneses' team", "joneses"),
    ],
)
def test_a_possessive_run_is_also_the_name_without_it(text: str, name: str) -> None:
    assert name in {span.norm for span in rules.candidate_spans(text)}


def test_a_name_ending_in_an_apostrophe_s_is_kept_as_written() -> None:
    norms = [span.norm for span in rules.candidate_spans("where is McDonald's")]
    assert norms.index("mcdonald's") < norms.index("mcdonald")  # the exact name wins a tie


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("when did X join", rules.DATE),
        ("since when has X been here", rules.DATE),
        ("what date was X introduced", rules.DATE),
        ("how much does X cost", rules.AMOUNT),
        ("how many seats does X have", rules.AMOUNT),
        ("who owns X", rules.AGENT),
        ("to whom does X report", rules.AGENT),
        ("where is X based", rules.PLACE),
        ("what version is X", ""),
        ("whose service is X", ""),
    ],
)
def test_the_kind_of_answer_is_read_from_the_question_words(question: str, kind: str) -> None:
    assert rules.answer_kind(question) == kind


@pytest.mark.parametrize(
    ("literal", "named", "kind"),
    [
        (None, True, rules.ENTITY),
        ("2019-03-04", False, rules.DATE),
        ("4 March 2019", False, rules.DATE),
        ("129.99 EUR", False, rules.AMOUNT),
        ("$1,200", False, rules.AMOUNT),
        ("2019", False, rules.AMOUNT),  # a bare number is not read as a year
        ("Product Manager", False, rules.TEXT),
        ("1.4.2-beta", False, rules.TEXT),
    ],
)
def test_a_value_has_the_kind_its_shape_says(literal: str | None, named: bool, kind: str) -> None:
    assert rules.value_kind(literal, named=named) == kind


def test_values_fit_a_question_only_when_their_kind_can_answer_it() -> None:
    person = PredicateSense(name="REPORTS_TO", label="reports to")
    office = PredicateSense(name="BASED_IN", label="is based in")
    host = DEFAULT_ONTOLOGY.senses["RUNS_ON"]
    named, dated = frozenset({rules.ENTITY}), frozenset({rules.DATE})
    assert rules.kind_fits(rules.DATE, dated, person) is True
    assert rules.kind_fits(rules.DATE, named, person) is False
    assert rules.kind_fits(rules.AGENT, named, person) is True
    assert rules.kind_fits(rules.AGENT, named, host) is False  # a host is never "who"
    assert rules.kind_fits(rules.AGENT, frozenset({rules.TEXT}), person) is False
    assert rules.kind_fits(rules.PLACE, named, office) is True  # "based *in*"
    assert rules.kind_fits(rules.PLACE, named, person) is None
    assert rules.kind_fits("", named, person) is None
    assert rules.kind_fits(rules.DATE, frozenset(), person) is None  # no values seen


def test_a_relation_whose_values_cannot_answer_loses_to_one_whose_can() -> None:
    ontology = Ontology(senses={
        "REPORTS_TO": PredicateSense(name="REPORTS_TO", label="reports to"),
        "HAS_START_DATE": PredicateSense(name="HAS_START_DATE", label="has start date"),
    })  # fmt: skip
    kinds = {"REPORTS_TO": frozenset({rules.ENTITY}), "HAS_START_DATE": frozenset({rules.DATE})}
    scores = rules.relation_scores("when did X join", ontology, kinds=kinds)
    assert rules.asked_relation(scores) == ("HAS_START_DATE",)


@pytest.mark.parametrize(
    ("question", "inverse"),
    [
        ("who reports to X", True),
        ("which products come from X", True),
        ("what is supplied by X", True),
        ("what runs on X", True),
        ("who does X report to", False),
        ("who is responsible for X", False),
        ("what are the upstreams of X", False),
        ("which team should I contact about X", False),
        ("what works with X", False),
        ("which region is X in", False),
    ],
)
def test_a_question_names_its_entity_as_the_object_when_a_preposition_leads_to_it(
    question: str, inverse: bool
) -> None:
    assert rules.asks_inversely(question) is inverse


def test_capitalised_words_outside_mentions_may_be_parts_of_names() -> None:
    found = rules.name_parts("who does Dubois report to", set())
    assert [(span.start, span.norm) for span in found] == [(2, "dubois")]
    assert [span.norm for span in rules.name_parts("Where is O'Brien's desk", set())] == ["o'brien"]
    assert rules.name_parts("who does Dubois report to", {2}) == []
    assert rules.name_parts("where is Li based", set()) == []  # too short to name anyone


def test_a_predicate_nobody_described_gets_question_forms_from_its_name_and_columns() -> None:
    sense = rules.automatic_sense("HAS_START_DATE", ["start_date", "joined"])
    assert sense is not None
    assert sense.label == "has start date"
    assert sense.words == ("start date", "joined")
    assert "what is the joined of X" in sense.questions
    assert "X has start date" in sense.questions
    assert sense.questions.count("what is the start date of X") == 1


@pytest.mark.parametrize(
    ("question", "label", "backwards"),
    [
        ("X reports", "reports to", True),
        ("who are X direct reports", "reports to", True),
        ("direct reports of X", "reports to", True),
        ("list X hires", "hired by", True),
        ("who X reports to", "reports to", False),  # the verb itself, with its preposition
        ("who is X manager", "reports to", False),
        ("X versions", "has version", False),  # the label does not begin with its verb
        ("X owners", "is owned by", False),
    ],
)
def test_a_noun_of_the_relations_verb_next_to_the_entity_names_its_subjects(
    question: str, label: str, backwards: bool
) -> None:
    assert rules.names_its_subjects(question, label) is backwards
