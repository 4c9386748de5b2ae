"""Deterministic extractors: cue patterns and passages for text, fields for CMDB and Jira.

Pure unit tests: no database, no network.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curation.domain.extraction import (
    RuleBasedExtractor,
    StructuredExtractor,
    passage_spans,
    to_predicate,
)
from curation.domain.records import ExtractedClaim, SourceRecord

DOC = SourceRecord(
    external_id="docs/billing.md", content=b"", mime="text/markdown", title="Billing runbook"
)


def _extract(
    text: str, *, max_chars: int = 800, record: SourceRecord = DOC
) -> list[ExtractedClaim]:
    return list(RuleBasedExtractor(max_passage_chars=max_chars).extract(record, text))


def _relations(text: str) -> set[tuple[str, str, str | None]]:
    return {
        (claim.subject, claim.predicate, claim.object_name)
        for claim in _extract(text)
        if claim.predicate != "STATES"
    }


def _passages(text: str, *, max_chars: int = 800) -> list[ExtractedClaim]:
    return [claim for claim in _extract(text, max_chars=max_chars) if claim.predicate == "STATES"]


def _record(fields: dict[str, Any], **extra: Any) -> SourceRecord:
    return SourceRecord(
        external_id="ci-42", content=b"", mime="application/json", fields=fields, **extra
    )


# --- cue patterns ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "relation"),
    [
        ("billing-api runs on k8s-prod-1.", ("billing-api", "RUNS_ON", "k8s-prod-1")),
        ("billing-api depends on ledger-db.", ("billing-api", "DEPENDS_ON", "ledger-db")),
        (
            "billing-api is owned by the Payments team.",
            ("billing-api", "OWNED_BY", "Payments team"),
        ),
        ("billing-api uses Redis.", ("billing-api", "USES", "Redis")),
        ("billing-api implements OAuth2.", ("billing-api", "IMPLEMENTS", "OAuth2")),
        ("billing-api is hosted in Frankfurt.", ("billing-api", "HOSTED_IN", "Frankfurt")),
        ("billing-api is hosted on AWS.", ("billing-api", "HOSTED_IN", "AWS")),
        ("billing-api is deployed to eu-west-1.", ("billing-api", "DEPLOYED_TO", "eu-west-1")),
        ("billing-api is maintained by SRE.", ("billing-api", "MAINTAINED_BY", "SRE")),
        ("billing-api is written in Go.", ("billing-api", "WRITTEN_IN", "Go")),
        (
            "billing-api is part of the Payments platform.",
            ("billing-api", "PART_OF", "Payments platform"),
        ),
        ("billing-api calls ledger-db.", ("billing-api", "CALLS", "ledger-db")),
        ("billing-api talks to Stripe.", ("billing-api", "CALLS", "Stripe")),
        (
            "billing-api stores data in PostgreSQL 16.",
            ("billing-api", "STORES_IN", "PostgreSQL 16"),
        ),
        ("billing-api writes to Kafka.", ("billing-api", "STORES_IN", "Kafka")),
    ],
)
def test_relation_found_when_sentence_has_cue(
    sentence: str, relation: tuple[str, str, str]
) -> None:
    assert _relations(sentence) == {relation}


@pytest.mark.parametrize(
    "sentence",
    [
        "billing-api does not run on Heroku.",
        "billing-api doesn't run on Heroku.",
        "billing-api no longer uses MongoDB.",
        "billing-api never calls Stripe.",
        "billing-api is not owned by the Payments team.",
        "billing-api isn't hosted in AWS.",
        "billing-api used to run on Heroku.",
        "billing-api uses no Redis.",
        "billing-api runs on neither Heroku nor AWS.",
    ],
)
def test_no_positive_relation_when_cue_is_negated(sentence: str) -> None:
    assert _relations(sentence) == set()


def test_link_text_is_the_object_when_object_is_markdown_link() -> None:
    text = "billing-api runs on [Kubernetes](https://kubernetes.io/docs)."
    assert _relations(text) == {("billing-api", "RUNS_ON", "Kubernetes")}


def test_code_ticks_and_emphasis_ignored_when_names_are_formatted() -> None:
    text = "The `payments_service` uses **Redis** and _Kafka_."
    assert _relations(text) == {
        ("payments_service", "USES", "Redis"),
        ("payments_service", "USES", "Kafka"),
    }


def test_span_cites_original_markdown_when_sentence_is_cleaned() -> None:
    text = "# Runtime\n\n- The `billing-api` runs on [k8s-prod-1](https://cmdb/1).\n"
    (claim,) = [c for c in _extract(text) if c.predicate == "RUNS_ON"]
    assert claim.span is not None
    assert text[claim.span[0] : claim.span[1]] == (
        "The `billing-api` runs on [k8s-prod-1](https://cmdb/1)."
    )


def test_fact_text_is_the_clean_sentence_when_markdown_is_stripped() -> None:
    text = "- The `billing-api` runs on [k8s-prod-1](https://cmdb/1).\n"
    (claim,) = [c for c in _extract(text) if c.predicate == "RUNS_ON"]
    assert claim.fact_text == "The billing-api runs on k8s-prod-1."


def test_span_covers_both_lines_when_sentence_wraps() -> None:
    text = "Intro.\n\nbilling-api\nruns on k8s-prod-1.\n"
    (claim,) = [c for c in _extract(text) if c.predicate == "RUNS_ON"]
    assert claim.span is not None
    assert text[claim.span[0] : claim.span[1]] == "billing-api\nruns on k8s-prod-1."


def test_one_claim_per_object_when_objects_are_listed() -> None:
    text = "billing-api depends on ledger-db, Kafka and PostgreSQL 16."
    assert {obj for _, _, obj in _relations(text)} == {"ledger-db", "Kafka", "PostgreSQL 16"}


def test_subject_carried_over_when_second_cue_follows_and() -> None:
    text = "billing-api runs on k8s-prod-1 and uses Redis."
    assert _relations(text) == {
        ("billing-api", "RUNS_ON", "k8s-prod-1"),
        ("billing-api", "USES", "Redis"),
    }


def test_team_type_given_when_name_ends_in_team() -> None:
    (claim,) = [c for c in _extract("The Payments team uses Jira.") if c.predicate == "USES"]
    assert (claim.subject, claim.subject_type) == ("Payments team", "team")


def test_no_relation_when_subject_is_a_pronoun() -> None:
    assert _relations("It runs on k8s-prod-1.") == set()


def test_no_relation_when_sentence_is_an_instruction() -> None:
    assert _relations("Please use Redis for caching.") == set()


def test_no_relation_when_names_are_plain_lowercase_words() -> None:
    assert _relations("the service runs on a server.") == set()


def test_no_relation_when_passive_cue_lacks_a_verb() -> None:
    assert _relations("See billing-api owned by Payments.") == set()


def test_no_relation_when_sentence_is_in_fenced_code() -> None:
    assert _relations("```\nbilling-api runs on k8s-prod-1\n```\n") == set()


def test_lower_confidence_when_statement_is_past_tense() -> None:
    (claim,) = [
        c for c in _extract("billing-api was deployed to eu-west-1.") if c.predicate != "STATES"
    ]
    assert claim.confidence == pytest.approx(0.6)


def test_confidence_in_expected_range_when_pattern_matches() -> None:
    claims = [
        c
        for c in _extract("billing-api runs on k8s. billing-api uses Redis.")
        if c.predicate != "STATES"
    ]
    assert all(0.6 <= claim.confidence <= 0.75 for claim in claims)


def test_same_claims_when_extracting_twice() -> None:
    text = "# Billing\n\nbilling-api runs on k8s-prod-1 and uses Redis.\n\nMore text here."
    assert _extract(text) == _extract(text)


# --- passages -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \n"])
def test_no_claims_when_document_is_blank(text: str) -> None:
    assert _extract(text) == []


def test_passage_claim_states_the_text_when_document_is_short() -> None:
    (claim,) = _passages("Billing closes at midnight.")
    assert claim == ExtractedClaim(
        subject="Billing runbook",
        subject_type="document",
        predicate="STATES",
        object_literal="Billing closes at midnight.",
        fact_text="Billing closes at midnight.",
        confidence=1.0,
        span=(0, 27),
    )


def test_subject_is_external_id_when_title_is_empty() -> None:
    record = SourceRecord(external_id="docs/untitled.md", content=b"", mime="text/plain")
    (claim,) = _extract("Some text.", record=record)
    assert claim.subject == "docs/untitled.md"


def test_vietnamese_passage_kept_exactly_when_text_has_accents() -> None:
    text = "Hệ thống thanh toán chạy trên Kubernetes tại Hà Nội.\n"
    (claim,) = _passages(text)
    assert claim.span is not None
    assert (claim.object_literal, text[claim.span[0] : claim.span[1]]) == (
        text.strip(),
        text.strip(),
    )


def test_short_paragraphs_packed_together_when_they_fit() -> None:
    text = "First paragraph.\n\nSecond paragraph.\n\nThird one."
    assert [c.object_literal for c in _passages(text, max_chars=40)] == [
        "First paragraph.\n\nSecond paragraph.",
        "Third one.",
    ]


def test_long_paragraph_split_between_sentences_when_over_limit() -> None:
    text = "One sentence here. Another sentence there. A third one."
    assert [c.object_literal for c in _passages(text, max_chars=45)] == [
        "One sentence here. Another sentence there.",
        "A third one.",
    ]


def test_list_items_split_between_lines_when_list_is_over_limit() -> None:
    text = "- alpha item\n- beta item\n- gamma item"
    assert [text[start:end] for start, end in passage_spans(text, max_chars=26)] == [
        "- alpha item\n- beta item",
        "- gamma item",
    ]


def test_abbreviation_not_a_sentence_end_when_splitting() -> None:
    text = "Use a cache, e.g. Redis or Memcached. Then restart."
    assert [c.object_literal for c in _passages(text, max_chars=40)] == [
        "Use a cache, e.g. Redis or Memcached.",
        "Then restart.",
    ]


def test_cjk_text_split_within_limit_when_it_has_no_spaces() -> None:
    text = "数据库服务器运行在北京的数据中心。" * 10
    passages = _passages(text, max_chars=50)
    assert "".join(p.object_literal or "" for p in passages) == text
    assert all(len(p.object_literal or "") <= 50 for p in passages)


def test_combining_mark_never_starts_a_passage_when_a_word_is_cut() -> None:
    text = "e\u0301" * 40  # decomposed é: a split must not separate the accent
    spans = passage_spans(text, max_chars=7)
    assert all(text[start] == "e" for start, _ in spans)


def test_rejected_when_max_passage_chars_is_not_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RuleBasedExtractor(max_passage_chars=0)


_WORD = st.text(
    alphabet=st.characters(exclude_categories=("Cs",)).filter(lambda c: not c.isspace()),
    min_size=1,
    max_size=9,  # a separator may add a full stop: every word then still fits in 10
)
_SEPARATOR = st.sampled_from([" ", "  ", "\n", "\n\n", "\n \n", ". ", "! ", "\t", "\u00a0"])


@given(text=st.text(), max_chars=st.integers(min_value=1, max_value=60))
def test_passages_cover_all_text_in_order_when_given_any_text(text: str, max_chars: int) -> None:
    spans = passage_spans(text, max_chars=max_chars)
    assert "".join("".join(text[start:end].split()) for start, end in spans) == "".join(
        text.split()
    )


@given(text=st.text(), max_chars=st.integers(min_value=1, max_value=60))
def test_every_passage_fits_when_given_any_text(text: str, max_chars: int) -> None:
    for passage in _passages(text, max_chars=max_chars):
        assert passage.span is not None
        assert passage.span[1] - passage.span[0] <= max_chars
        assert len(passage.fact_text) <= max_chars


_PROSE = st.text(alphabet="abcXYZ \n.!?,")  # nothing Markdown would read as syntax


@given(text=_PROSE, max_chars=st.integers(min_value=1, max_value=60))
def test_spans_point_at_passage_text_when_text_has_no_markdown(text: str, max_chars: int) -> None:
    for passage in _passages(text, max_chars=max_chars):
        assert passage.span is not None
        cited = text[passage.span[0] : passage.span[1]]
        assert passage.object_literal == passage.fact_text
        assert passage.fact_text.split() == cited.split()


@given(text=st.text(), max_chars=st.integers(min_value=1, max_value=60))
def test_spans_ascend_without_overlap_when_given_any_text(text: str, max_chars: int) -> None:
    spans = [passage.span for passage in _passages(text, max_chars=max_chars)]
    ends = [span[1] for span in spans if span is not None]
    starts = [span[0] for span in spans if span is not None]
    assert all(end <= start for end, start in zip(ends, starts[1:], strict=False))


@given(
    pieces=st.lists(st.tuples(_WORD, _SEPARATOR), min_size=1, max_size=40),
    max_chars=st.integers(min_value=10, max_value=60),
)
def test_no_word_split_when_every_word_fits(pieces: list[tuple[str, str]], max_chars: int) -> None:
    text = "".join(word + separator for word, separator in pieces)
    spans = passage_spans(text, max_chars=max_chars)
    assert [w for start, end in spans for w in text[start:end].split()] == text.split()


# --- passages state plain text, not Markdown --------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "statement"),
    [
        ("# Billing runbook\n\nRestart it.", "Billing runbook\n\nRestart it."),
        ("## Rollback ##\n\nRedeploy.", "Rollback\n\nRedeploy."),
        ("Rollback\n========\n\nRedeploy.", "Rollback\n\nRedeploy."),
        (
            "Restart **billing-api** or *ledger-db* or __cron__.",
            "Restart billing-api or ledger-db or cron.",
        ),
        ("Run `kubectl get pods` first.", "Run kubectl get pods first."),
        (
            "See [the dashboard](https://grafana/d/1) and ![map](map.png).",
            "See the dashboard and map.",
        ),
        ("Mail <mailto:ops@example.com> or <b>page</b>.", "Mail mailto:ops@example.com or page."),
        (
            "- drain the node\n- [x] restart\n1. page on-call",
            "drain the node\nrestart\npage on-call",
        ),
        ("> Quoted advice\n> continues.", "Quoted advice\ncontinues."),
        (
            "| service | host |\n|---|:---:|\n| billing-api | k8s-prod-1 |",
            "service host\nbilling-api k8s-prod-1",
        ),
        ("Runs on ~~vm-pay-01~~ k8s-prod-2.", "Runs on k8s-prod-2."),
        ("Above.\n\n---\n\nBelow.", "Above.\n\nBelow."),
        ("[1]: https://wiki/runbook\n\nSee the wiki.", "See the wiki."),
    ],
)
def test_passage_states_plain_text_when_document_is_markdown(markdown: str, statement: str) -> None:
    (claim,) = _passages(markdown)
    assert (claim.fact_text, claim.object_literal) == (statement, statement)


def test_passage_span_cites_the_markdown_when_statement_is_plain() -> None:
    text = "# Billing runbook\n\nRestart **billing-api**.\n"
    (claim,) = _passages(text)
    assert claim.span is not None
    assert text[claim.span[0] : claim.span[1]] == "# Billing runbook\n\nRestart **billing-api**."


def test_fenced_code_stated_without_its_fences_when_passage_has_code() -> None:
    text = "Check the pods:\n\n```bash\n# list them\nkubectl get pods\n```\n"
    (claim,) = _passages(text)
    assert claim.fact_text == "Check the pods:\n\n# list them\nkubectl get pods"


def test_lone_asterisks_and_underscores_kept_when_they_are_not_emphasis() -> None:
    text = "p < 0.05* holds; 5 * 3 is 15; snake_case_name stays."
    (claim,) = _passages(text)
    assert claim.fact_text == text


def test_no_passage_claim_when_passage_is_only_syntax() -> None:
    assert _passages("---\n\n```\n```\n") == []


# --- predicates from phrases ----------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "predicate"),
    [("runs on", "RUNS_ON"), ("runsOn", "RUNS_ON"), ("Is Blocked-By", "IS_BLOCKED_BY")],
)
def test_phrase_becomes_upper_snake_when_it_is_ascii_words(phrase: str, predicate: str) -> None:
    assert to_predicate(phrase) == predicate


@pytest.mark.parametrize("phrase", ["", "  ", "chạy trên", "3 runs", "???"])
def test_no_predicate_when_phrase_cannot_be_upper_snake(phrase: str) -> None:
    assert to_predicate(phrase) is None


# --- structured: CMDB ---------------------------------------------------------------


def _structured(fields: dict[str, Any], **options: Any) -> list[ExtractedClaim]:
    return list(StructuredExtractor(**options).extract(_record(fields), ""))


def _triples(claims: list[ExtractedClaim]) -> set[tuple[str, str, str | None]]:
    return {(c.subject, c.predicate, c.object_name or c.object_literal) for c in claims}


def test_ci_field_mapped_when_key_differs_in_case() -> None:
    claims = _structured({"Name": "billing-api", "HOST": "k8s-prod-1"})
    assert _triples(claims) == {("billing-api", "RUNS_ON", "k8s-prod-1")}


def test_fact_text_is_a_sentence_when_field_is_mapped() -> None:
    (claim,) = _structured({"name": "billing-api", "host": "k8s-prod-1"})
    assert claim.fact_text == "billing-api runs on k8s-prod-1."


def test_structured_confidence_is_high_when_field_is_mapped() -> None:
    (claim,) = _structured({"name": "billing-api", "owner": "Payments team"})
    assert claim.confidence == pytest.approx(0.95)


def test_one_claim_per_value_when_values_are_separated() -> None:
    claims = _structured({"name": "billing-api", "depends_on": "ledger-db; Kafka, Redis"})
    assert {c.object_name for c in claims} == {"ledger-db", "Kafka", "Redis"}


def test_one_claim_per_item_when_value_is_a_list() -> None:
    claims = _structured({"name": "billing-api", "environment": ["prod", {"name": "staging"}]})
    assert {c.object_name for c in claims} == {"prod", "staging"}


def test_status_is_a_literal_when_field_is_a_value() -> None:
    (claim,) = _structured({"name": "billing-api", "status": "Active, degraded"})
    assert (claim.object_literal, claim.object_name) == ("Active, degraded", None)


def test_owner_is_an_entity_when_field_names_a_thing() -> None:
    (claim,) = _structured({"name": "billing-api", "team": "Payments"})
    assert (claim.object_name, claim.object_type) == ("Payments", "team")


def test_subject_is_the_ci_id_when_name_is_missing() -> None:
    (claim,) = _structured({"id": "CI0042", "host": "k8s-prod-1"})
    assert claim.subject == "CI0042"


def test_subject_type_from_ci_class_when_given() -> None:
    (claim,) = _structured({"name": "billing-api", "type": "Business Service", "host": "x1"})
    assert claim.subject_type == "business_service"


def test_unmapped_fields_ignored_when_extracting() -> None:
    assert _structured({"name": "billing-api", "description": "Bills customers."}) == []


def test_no_claims_when_record_has_no_fields() -> None:
    assert _structured({}) == []


def test_custom_mapping_replaces_default_when_given() -> None:
    claims = _structured(
        {"name": "billing-api", "host": "k8s-prod-1", "Cluster": "k8s-prod"},
        mapping={"cluster": "PART_OF"},
    )
    assert _triples(claims) == {("billing-api", "PART_OF", "k8s-prod")}


def test_mapping_rejected_when_predicate_is_not_upper_snake() -> None:
    with pytest.raises(ValueError, match="UPPER_SNAKE"):
        StructuredExtractor(mapping={"host": "runs on"})


# --- structured: Jira -----------------------------------------------------------------

_ISSUE: dict[str, Any] = {
    "key": "PAY-12",
    "fields": {
        "issuetype": {"name": "Bug"},
        "summary": "Invoices are sent twice",
        "assignee": {"displayName": "Nguyễn Văn An", "emailAddress": "an@example.com"},
        "reporter": {"displayName": "Bob Lee"},
        "status": {"name": "In Progress"},
        "project": {"key": "PAY", "name": "Payments"},
        "components": [{"name": "billing-api"}, {"name": "ledger"}],
    },
}


@pytest.mark.parametrize(
    "triple",
    [
        ("PAY-12", "ASSIGNED_TO", "Nguyễn Văn An"),
        ("PAY-12", "REPORTED_BY", "Bob Lee"),
        ("PAY-12", "HAS_STATUS", "In Progress"),
        ("PAY-12", "PART_OF", "Payments"),
        ("PAY-12", "AFFECTS", "billing-api"),
        ("PAY-12", "AFFECTS", "ledger"),
    ],
)
def test_jira_field_becomes_claim_when_issue_has_it(triple: tuple[str, str, str]) -> None:
    assert triple in _triples(_structured(_ISSUE))


def test_jira_status_is_a_literal_when_extracted() -> None:
    (claim,) = [c for c in _structured(_ISSUE) if c.predicate == "HAS_STATUS"]
    assert (claim.object_literal, claim.object_name) == ("In Progress", None)


def test_jira_detected_when_fields_are_flat() -> None:
    claims = _structured({"key": "PAY-7", "issuetype": "Task", "assignee": "Ana"})
    assert ("PAY-7", "ASSIGNED_TO", "Ana") in _triples(claims)


_BLOCKS = {"name": "Blocks", "inward": "is blocked by", "outward": "blocks"}


@pytest.mark.parametrize(
    ("link", "triple"),
    [
        ({"type": _BLOCKS, "outwardIssue": {"key": "PAY-13"}}, ("PAY-12", "BLOCKS", "PAY-13")),
        ({"type": _BLOCKS, "inwardIssue": {"key": "PAY-9"}}, ("PAY-9", "BLOCKS", "PAY-12")),
        (
            {"type": {"name": "Blocks"}, "inwardIssue": {"key": "PAY-8"}},
            ("PAY-8", "BLOCKS", "PAY-12"),
        ),
        ({"type": "is blocked by", "key": "OPS-2"}, ("OPS-2", "BLOCKS", "PAY-12")),
        ({"type": "depends on", "key": "OPS-1"}, ("PAY-12", "DEPENDS_ON", "OPS-1")),
        (
            {"type": {"name": "Relates"}, "inwardIssue": {"key": "PAY-3"}},
            ("PAY-12", "RELATES_TO", "PAY-3"),
        ),
        ({"type": "relates to", "key": "PAY-4"}, ("PAY-12", "RELATES_TO", "PAY-4")),
    ],
)
def test_issue_link_directed_when_link_has_a_side(
    link: dict[str, Any], triple: tuple[str, str, str]
) -> None:
    issue = {"key": "PAY-12", "issuetype": "Bug", "issuelinks": [link]}
    assert _triples(_structured(issue)) >= {triple}


def test_malformed_link_ignored_when_it_names_no_issue() -> None:
    issue = {"key": "PAY-12", "issuetype": "Bug", "issuelinks": [{"type": _BLOCKS}, "junk"]}
    assert [c.predicate for c in _structured(issue)] == ["HAS_TYPE"]
