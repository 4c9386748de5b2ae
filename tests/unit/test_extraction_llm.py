"""LLMExtractor with the real openai client against a local Chat Completions stub server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from curation.adapters.extractors import LLMExtractor
from curation.domain.extraction import ClaimBatch, ExtractionError
from curation.domain.records import ExtractedClaim, SourceRecord
from tests.support.fake_models import StubModelAPI, serving

MODEL = "gpt-4o-mini"
TEXT = "# Billing\n\nThe billing-api runs on k8s-prod-1.\nIts status is Active.\n"
RECORD = SourceRecord(
    external_id="docs/billing.md", content=TEXT.encode(), mime="text/markdown", title="Billing"
)
RUNS_ON = {
    "subject": "billing-api",
    "subject_type": "service",
    "predicate": "RUNS_ON",
    "object": "k8s-prod-1",
    "object_is_entity": True,
    "object_type": "host",
    "fact": "billing-api runs on k8s-prod-1.",
    "confidence": 0.9,
    "quote": "The billing-api runs on k8s-prod-1.",
}


class StubChatAPI(StubModelAPI):
    """The shared model API stub, with the extractor built on its client."""

    def reply_claims(self, *claims: Any) -> None:
        self.reply(json.dumps({"claims": list(claims)}))

    def extractor(self, *, max_chars: int = 12000) -> LLMExtractor:
        return LLMExtractor(client=self.client(), model=MODEL, max_chars=max_chars)


@pytest.fixture
def chat_api() -> Iterator[StubChatAPI]:
    with serving(StubChatAPI()) as stub:
        yield stub


def test_claims_returned_when_answer_is_valid(chat_api: StubChatAPI) -> None:
    status = {
        "subject": "billing-api",
        "subject_type": "service",
        "predicate": "HAS_STATUS",
        "object": "Active",
        "object_is_entity": False,
        "object_type": "status",
        "fact": "billing-api has status Active.",
        "confidence": 0.8,
        "quote": "Its status is Active.",
    }
    chat_api.reply_claims(RUNS_ON, status)
    claims = chat_api.extractor().extract(RECORD, TEXT)
    assert list(claims) == [
        ExtractedClaim(
            subject="billing-api",
            subject_type="service",
            predicate="RUNS_ON",
            object_name="k8s-prod-1",
            object_type="host",
            fact_text="billing-api runs on k8s-prod-1.",
            confidence=0.9,
            span=(11, 46),
        ),
        ExtractedClaim(
            subject="billing-api",
            subject_type="service",
            predicate="HAS_STATUS",
            object_literal="Active",
            object_type="status",
            fact_text="billing-api has status Active.",
            confidence=0.8,
            span=(47, 68),
        ),
    ]


def test_request_goes_to_chat_completions_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    chat_api.extractor().extract(RECORD, TEXT)
    assert [request["path"] for request in chat_api.requests] == ["/v1/chat/completions"]


def test_request_names_model_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    chat_api.extractor().extract(RECORD, TEXT)
    assert chat_api.requests[0]["body"]["model"] == MODEL


def test_request_asks_for_temperature_zero_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    chat_api.extractor().extract(RECORD, TEXT)
    assert chat_api.requests[0]["body"]["temperature"] == 0


def test_request_asks_for_json_object_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    chat_api.extractor().extract(RECORD, TEXT)
    assert chat_api.requests[0]["body"]["response_format"] == {"type": "json_object"}


def test_request_carries_document_text_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    chat_api.extractor().extract(RECORD, TEXT)
    assert TEXT in chat_api.user_message()


def test_system_prompt_asks_for_upper_snake_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    chat_api.extractor().extract(RECORD, TEXT)
    system = chat_api.requests[0]["body"]["messages"][0]
    assert (system["role"], "UPPER_SNAKE" in system["content"]) == ("system", True)


def test_long_text_cut_with_a_note_when_over_max_chars(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims()
    text = "word " * 100
    chat_api.extractor(max_chars=52).extract(RECORD, text)
    message = chat_api.user_message()
    assert ("word " * 10).strip() + "\n</document>" in message
    assert "cut to its first 49 of 500 characters" in message


def test_no_request_when_text_is_blank(chat_api: StubChatAPI) -> None:
    claims = chat_api.extractor().extract(RECORD, " \n ")
    assert (list(claims), chat_api.requests) == ([], [])


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("not an object", id="not-an-object"),
        pytest.param({**RUNS_ON, "subject": ""}, id="empty-subject"),
        pytest.param({k: v for k, v in RUNS_ON.items() if k != "subject"}, id="no-subject"),
        pytest.param({k: v for k, v in RUNS_ON.items() if k != "object"}, id="no-object"),
        pytest.param({**RUNS_ON, "object": ["k8s"]}, id="object-is-a-list"),
        pytest.param({**RUNS_ON, "predicate": "???"}, id="predicate-not-words"),
        pytest.param({**RUNS_ON, "predicate": "chạy trên"}, id="predicate-not-ascii"),
        pytest.param({**RUNS_ON, "predicate": 7}, id="predicate-is-a-number"),
        pytest.param({**RUNS_ON, "object_is_entity": "yes"}, id="entity-flag-is-a-string"),
        pytest.param({**RUNS_ON, "confidence": "high"}, id="confidence-is-a-string"),
        pytest.param({k: v for k, v in RUNS_ON.items() if k != "confidence"}, id="no-confidence"),
        pytest.param({**RUNS_ON, "subject_type": 3}, id="type-is-a-number"),
    ],
)
def test_claim_dropped_when_item_is_malformed(chat_api: StubChatAPI, bad: Any) -> None:
    chat_api.reply_claims(bad, RUNS_ON)
    claims = chat_api.extractor().extract(RECORD, TEXT)
    assert ([c.predicate for c in claims], claims.dropped) == (["RUNS_ON"], 1)


def test_dropped_claims_explained_when_items_are_malformed(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims({**RUNS_ON, "predicate": "???"})
    claims = chat_api.extractor().extract(RECORD, TEXT)
    assert claims.notes == ("claim 0 dropped: predicate '???' cannot be written in UPPER_SNAKE",)


def test_predicate_made_upper_snake_when_written_as_words(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims({**RUNS_ON, "predicate": "runs on"})
    (claim,) = chat_api.extractor().extract(RECORD, TEXT)
    assert claim.predicate == "RUNS_ON"


@pytest.mark.parametrize(("given", "kept"), [(1.7, 1.0), (-0.2, 0.0), (1, 1.0)])
def test_confidence_clamped_when_outside_unit_interval(
    chat_api: StubChatAPI, given: float, kept: float
) -> None:
    chat_api.reply_claims({**RUNS_ON, "confidence": given})
    (claim,) = chat_api.extractor().extract(RECORD, TEXT)
    assert claim.confidence == kept


def test_span_none_when_quote_is_not_in_text(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims({**RUNS_ON, "quote": "billing runs somewhere"})
    (claim,) = chat_api.extractor().extract(RECORD, TEXT)
    assert claim.span is None


def test_span_found_when_quote_differs_in_spacing_and_case(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims({**RUNS_ON, "quote": "the billing-api   RUNS on k8s-prod-1."})
    (claim,) = chat_api.extractor().extract(RECORD, TEXT)
    assert claim.span == (11, 46)


def test_fact_built_from_triple_when_fact_is_missing(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims({k: v for k, v in RUNS_ON.items() if k != "fact"})
    (claim,) = chat_api.extractor().extract(RECORD, TEXT)
    assert claim.fact_text == "billing-api runs on k8s-prod-1."


def test_accented_names_kept_when_document_is_vietnamese(chat_api: StubChatAPI) -> None:
    text = "Hệ thống thanh toán chạy trên cụm Hà Nội."
    chat_api.reply_claims(
        {**RUNS_ON, "subject": "Hệ thống thanh toán", "object": "Hà Nội", "quote": text}
    )
    (claim,) = chat_api.extractor().extract(RECORD, text)
    assert (claim.subject, claim.object_name, claim.span) == (
        "Hệ thống thanh toán",
        "Hà Nội",
        (0, len(text)),
    )


def test_claims_read_when_answer_is_wrapped_in_a_code_fence(chat_api: StubChatAPI) -> None:
    chat_api.reply("```json\n" + json.dumps({"claims": [RUNS_ON]}) + "\n```")
    claims = chat_api.extractor().extract(RECORD, TEXT)
    assert [c.predicate for c in claims] == ["RUNS_ON"]


def test_batch_type_returned_when_extracting(chat_api: StubChatAPI) -> None:
    chat_api.reply_claims(RUNS_ON)
    assert isinstance(chat_api.extractor().extract(RECORD, TEXT), ClaimBatch)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param("I found these facts: billing-api runs on k8s.", id="prose"),
        pytest.param('{"claims": [', id="cut-off-json"),
        pytest.param('{"facts": []}', id="no-claims-key"),
        pytest.param('{"claims": "none"}', id="claims-not-a-list"),
        pytest.param("42", id="a-number"),
    ],
)
def test_extraction_error_raised_when_answer_is_unreadable(
    chat_api: StubChatAPI, answer: str
) -> None:
    chat_api.reply(answer)
    with pytest.raises(ExtractionError, match="extraction model's answer"):
        chat_api.extractor().extract(RECORD, TEXT)


def test_extraction_error_is_a_value_error_when_raised(chat_api: StubChatAPI) -> None:
    chat_api.reply("garbage")
    with pytest.raises(ValueError, match="not JSON"):
        chat_api.extractor().extract(RECORD, TEXT)


def test_openai_error_surfaces_when_server_answers_500(chat_api: StubChatAPI) -> None:
    chat_api.fail(500, "The server had an error while processing your request.")
    with pytest.raises(openai.InternalServerError):
        chat_api.extractor().extract(RECORD, TEXT)


def test_openai_error_surfaces_when_rate_limited(chat_api: StubChatAPI) -> None:
    chat_api.fail(429, "Rate limit reached.")
    with pytest.raises(openai.RateLimitError):
        chat_api.extractor().extract(RECORD, TEXT)


def test_extraction_error_raised_when_request_is_refused(chat_api: StubChatAPI) -> None:
    chat_api.fail(400, "This model's maximum context length is 128000 tokens.")
    with pytest.raises(ExtractionError, match="HTTP 400"):
        chat_api.extractor().extract(RECORD, TEXT)
