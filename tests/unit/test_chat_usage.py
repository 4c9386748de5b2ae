"""Tokens and cost of chat model requests (LLM extractor, judges, LLM reranker) and of
Voyage reranking: the price math, and each adapter telling the meter what the real
openai / voyageai client read from a local stub API."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import voyageai
from prometheus_client import REGISTRY

from curation.adapters.extractors import LLMExtractor
from curation.adapters.judges import LLMContradictionJudge, LLMEquivalenceJudge
from curation.domain.extraction import ExtractionError
from curation.domain.records import SourceRecord
from retrieval.adapters.embedders.metering import CHAT_PRICES_USD_PER_MTOK, Meter, Usage
from retrieval.adapters.rerankers import LLMReranker, VoyageReranker
from tests.support.fake_models import TOKENS, StubModelAPI, rerank_answer, serving
from vera import metrics

MODEL = "gpt-4o-mini"
IN_PRICE, OUT_PRICE = CHAT_PRICES_USD_PER_MTOK[MODEL]
RECORD = SourceRecord(external_id="a.md", content=b"x", mime="text/markdown", title="A")


class RecordingMeter:
    """A UsageMeter (and the one Meter method the Voyage reranker calls) that keeps what it
    is told."""

    def __init__(self) -> None:
        self.chats: list[tuple[str, str, int, int]] = []
        self.batches: list[tuple[str, str, int | None, int]] = []

    def record_chat(
        self, *, provider: str, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        self.chats.append((provider, model, input_tokens, output_tokens))

    def record(
        self, *, provider: str, model: str, texts: list[str], tokens: int | None, calls: int
    ) -> Usage:
        self.batches.append((provider, model, tokens, calls))
        return Usage()


@pytest.fixture
def model_api() -> Iterator[StubModelAPI]:
    with serving(StubModelAPI()) as stub:
        yield stub


@pytest.fixture
def meter() -> RecordingMeter:
    return RecordingMeter()


# --- the price math ----------------------------------------------------------------------


def test_chat_cost_is_input_and_output_tokens_each_at_its_rate_when_recorded() -> None:
    recorded: list[tuple[str, str, Usage]] = []
    meter = Meter(chat_prices={"chat-test-1": (2.0, 8.0)}, on_record=lambda *b: recorded.append(b))

    meter.record_chat(
        provider="LLMExtractor", model="chat-test-1", input_tokens=250_000, output_tokens=50_000
    )

    [(provider, model, added)] = recorded
    assert (provider, model) == ("LLMExtractor", "chat-test-1")
    assert (added.calls, added.tokens) == (1, 300_000)
    assert added.cost_usd == pytest.approx(0.25 * 2.0 + 0.05 * 8.0)


def test_chat_usage_adds_up_per_model_when_recorded_twice() -> None:
    meter = Meter()

    for _ in range(2):
        meter.record_chat(provider="P", model=MODEL, input_tokens=1000, output_tokens=100)

    usage = meter.usage(MODEL)
    assert (usage.calls, usage.tokens) == (2, 2200)
    assert usage.cost_usd == pytest.approx(2 * (1000 * IN_PRICE + 100 * OUT_PRICE) / 1e6)


def test_a_dated_snapshot_is_priced_as_its_model_when_the_table_has_no_entry() -> None:
    meter = Meter()

    assert meter.chat_price_per_mtok("gpt-4o-mini-2024-07-18") == CHAT_PRICES_USD_PER_MTOK[MODEL]
    assert meter.chat_price_per_mtok("gpt-4o-2024-08-06") == CHAT_PRICES_USD_PER_MTOK["gpt-4o"]
    assert meter.chat_price_per_mtok("gpt-4omni") is None


def test_an_unpriced_chat_model_is_counted_at_zero_and_logged_once_when_recorded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    meter = Meter(chat_prices={})

    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            meter.record_chat(provider="P", model="local-llm", input_tokens=40, output_tokens=2)

    usage = meter.usage("local-llm")
    assert (usage.calls, usage.tokens, usage.cost_usd) == (2, 84, 0.0)
    warnings = [r.getMessage() for r in caplog.records if "local-llm" in r.getMessage()]
    assert warnings == ["provider model 'local-llm' has no price; its calls are metered at $0"]


def test_the_voyage_rerank_models_are_priced() -> None:
    meter = Meter()

    assert meter.price_per_mtok("rerank-2.5") == 0.05
    assert meter.price_per_mtok("rerank-2.5-lite") == 0.02


def test_chat_tokens_and_cost_are_exported_per_adapter_and_model_when_recorded() -> None:
    meter = Meter(chat_prices={"chat-test-2": (1.0, 3.0)}, on_record=metrics.usage_recorded)
    labels = {"provider": "LLMEquivalenceJudge", "model": "chat-test-2"}
    tokens, cost = "vera_provider_tokens_total", "vera_provider_cost_usd_total"
    before = [REGISTRY.get_sample_value(name, labels) or 0.0 for name in (tokens, cost)]

    meter.record_chat(
        provider="LLMEquivalenceJudge", model="chat-test-2", input_tokens=500_000,
        output_tokens=100_000,
    )  # fmt: skip

    after = [REGISTRY.get_sample_value(name, labels) or 0.0 for name in (tokens, cost)]
    assert after[0] - before[0] == 600_000
    assert after[1] - before[1] == pytest.approx(0.5 + 0.3)


# --- each adapter tells the meter what the client read ------------------------------------


def test_the_extractor_records_the_answers_tokens_when_it_extracts(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.reply(json.dumps({"claims": []}), tokens=(1234, 56))
    extractor = LLMExtractor(client=model_api.client(), model=MODEL, meter=meter)

    extractor.extract(RECORD, "The billing-api runs on k8s-prod-1.")

    assert meter.chats == [("LLMExtractor", MODEL, 1234, 56)]


def test_the_extractor_records_the_tokens_when_the_answer_is_unreadable(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.reply("no JSON at all", tokens=(300, 4))
    extractor = LLMExtractor(client=model_api.client(), model=MODEL, meter=meter)

    with pytest.raises(ExtractionError, match="not JSON"):
        extractor.extract(RECORD, "The billing-api runs on k8s-prod-1.")

    assert meter.chats == [("LLMExtractor", MODEL, 300, 4)]


def test_nothing_is_recorded_when_the_request_is_refused(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.fail(400, "bad request", kind="invalid_request_error")
    extractor = LLMExtractor(client=model_api.client(), model=MODEL, meter=meter)

    with pytest.raises(ExtractionError, match="refused"):
        extractor.extract(RECORD, "The billing-api runs on k8s-prod-1.")

    assert meter.chats == []


def test_each_judge_records_under_its_own_name_when_it_judges(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.reply(json.dumps({"same": True, "confidence": 0.99}), tokens=(90, 12))
    model_api.reply(json.dumps({"replaces": False, "confidence": 0.99}), tokens=(70, 11))
    client = model_api.client()

    LLMEquivalenceJudge(client=client, model=MODEL, meter=meter).same_entity(
        "PG", "PostgreSQL", entity_type="database"
    )
    LLMContradictionJudge(client=client, model=MODEL, meter=meter).replaces("a new", "an old")

    assert meter.chats == [
        ("LLMEquivalenceJudge", MODEL, 90, 12),
        ("LLMContradictionJudge", MODEL, 70, 11),
    ]


def test_the_llm_reranker_records_each_batchs_tokens_when_it_scores(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.reply(json.dumps({"scores": [0.9, 0.1]}), tokens=(500, 9))
    model_api.reply(json.dumps({"scores": [0.5]}), tokens=(300, 5))
    reranker = LLMReranker(client=model_api.client(), model=MODEL, batch_size=2, meter=meter)

    reranker.score("where does billing run", ["a", "b", "c"])

    assert meter.chats == [("LLMReranker", MODEL, 500, 9), ("LLMReranker", MODEL, 300, 5)]


def test_tokens_are_estimated_from_characters_when_the_server_counts_none(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    answer = json.dumps({"claims": []})  # 13 characters: 4 tokens
    model_api.reply(answer, tokens=None)
    extractor = LLMExtractor(client=model_api.client(), model=MODEL, meter=meter)

    extractor.extract(RECORD, "The billing-api runs on k8s-prod-1.")

    [(_, _, input_tokens, output_tokens)] = meter.chats
    sent = model_api.body()["messages"]
    prompt = sum(len(message["content"]) for message in sent)
    assert input_tokens == -(-prompt // 4)
    assert output_tokens == 4


def test_the_voyage_reranker_records_the_billed_tokens_when_it_scores(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.answer(200, rerank_answer({0: 0.2, 1: 0.8}, tokens=777))
    client = voyageai.Client(api_key="test", base_url=model_api.base_url, max_retries=0, timeout=5)

    VoyageReranker(client=client, meter=meter).score("q", ["a", "b"])

    assert meter.batches == [("VoyageReranker", "rerank-2.5", 777, 1)]


def test_the_stub_bills_the_default_tokens_when_a_test_names_none(
    model_api: StubModelAPI, meter: RecordingMeter
) -> None:
    model_api.reply(json.dumps({"claims": []}))
    LLMExtractor(client=model_api.client(), model=MODEL, meter=meter).extract(RECORD, "text")

    assert meter.chats == [("LLMExtractor", MODEL, *TOKENS)]


# --- sample files of processes in several containers -------------------------------------


def test_sample_files_of_two_hosts_differ_when_their_processes_share_a_pid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = []
    for host in ("web-7f3a", "worker_ingest.1"):
        monkeypatch.setattr(metrics.socket, "gethostname", lambda host=host: host)
        names.append(metrics.process_identifier(7))

    assert names == ["web-7f3a-7", "worker-ingest.1-7"]
    assert not any("_" in name for name in names)  # the collector splits file names on "_"
