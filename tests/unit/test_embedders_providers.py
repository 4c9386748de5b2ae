"""OpenAI and Voyage embedders through their real SDKs, against a wire-format stub server.

A `ThreadingHTTPServer` on 127.0.0.1 answers `POST /v1/embeddings` the way both APIs
do (OpenAI's `usage.prompt_tokens`, Voyage's `usage.total_tokens`, base64 float32
vectors when the SDK asks for them), with vectors derived from the text, the
requested dimension and the input type. Tests script HTTP failures with `fail_next`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import struct
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
import voyageai
import voyageai.error

from kernel.resilience import BreakerState, CircuitBreaker, CircuitOpen
from retrieval.adapters.embedders import (
    CachedEmbedder,
    EmbeddingError,
    Meter,
    OpenAIEmbedder,
    ResilientEmbedder,
    VoyageEmbedder,
)
from tests.support.clock import FakeClock, RecordingSleep

API_KEY = "sk-test-not-a-real-key"


@dataclass(frozen=True)
class SeenRequest:
    """What the stub saw of one request."""

    path: str
    body: dict[str, Any]
    authorization: str


def stub_vector(text: str, dimension: int, input_type: str | None) -> list[float]:
    """A unit vector that depends only on the text, dimension and input type.

    Its values are float32, so it survives the SDKs' base64 float32 decoding exactly.
    """
    seed = hashlib.sha256(f"{input_type}|{dimension}|{text}".encode()).digest()
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    raw = [rng.uniform(-1.0, 1.0) for _ in range(dimension)]
    norm = math.sqrt(sum(value * value for value in raw))
    unit = [value / norm for value in raw]
    # Round to float32 so that base64 and JSON answers carry the same numbers.
    return list(struct.unpack(f"<{dimension}f", struct.pack(f"<{dimension}f", *unit)))


class EmbeddingStub:
    """Fake OpenAI and Voyage embeddings endpoint; records requests, scripts failures."""

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []
        self.failures: deque[int] = deque()
        self.wrong_dimension = False
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def fail_next(self, *statuses: int) -> None:
        with self._lock:
            self.failures.extend(statuses)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, request: SeenRequest) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            status = self.failures.popleft() if self.failures else 200
        if status != 200:
            # OpenAI reads `error.message`, Voyage reads `detail`.
            return status, {
                "error": {"message": "stub failure", "type": "server_error"},
                "detail": "stub failure",
            }
        return 200, self._embeddings(request.body)

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        dimension = body.get("dimensions") or body.get("output_dimension") or 1536
        if self.wrong_dimension:
            dimension -= 1
        data = []
        for index, text in enumerate(texts):
            vector = stub_vector(text, dimension, body.get("input_type"))
            if body.get("encoding_format") == "base64":
                packed = struct.pack(f"<{len(vector)}f", *vector)
                data.append(
                    {
                        "object": "embedding",
                        "index": index,
                        "embedding": base64.b64encode(packed).decode(),
                    }
                )
            else:
                data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(len(text.split()) + 1 for text in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return {"object": "list", "data": data, "model": body["model"], "usage": usage}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                seen = SeenRequest(self.path, body, self.headers.get("Authorization", ""))
                if self.path != "/v1/embeddings":
                    status, payload = 404, {"detail": "not found"}
                else:
                    status, payload = stub.answer(seen)
                encoded = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the tests read `stub.requests` instead."""

        return Handler


@pytest.fixture(scope="module")
def stub() -> Iterator[EmbeddingStub]:
    server = EmbeddingStub()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _fresh_stub(stub: EmbeddingStub) -> None:
    stub.requests.clear()
    stub.failures.clear()
    stub.wrong_dimension = False


@pytest.fixture
def openai_client(stub: EmbeddingStub) -> openai.OpenAI:
    # No SDK retries: the ResilientEmbedder owns retrying.
    return openai.OpenAI(api_key=API_KEY, base_url=stub.base_url, max_retries=0, timeout=5.0)


@pytest.fixture
def voyage_client(stub: EmbeddingStub) -> voyageai.Client:
    return voyageai.Client(api_key=API_KEY, base_url=stub.base_url, max_retries=0, timeout=5.0)


def test_openai_embedder_returns_the_servers_vectors_in_input_order(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    embedder = OpenAIEmbedder(client=openai_client)
    texts = ["checkout-web runs on k8s", "billing-api depends on redis-7", "ünïcødé ✓"]

    vectors = embedder.embed(texts)

    assert vectors == [stub_vector(text, 1536, None) for text in texts]
    (request,) = stub.requests
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["dimensions"] == 1536
    assert request.authorization == f"Bearer {API_KEY}"


def test_openai_embedder_sends_one_request_per_batch(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    embedder = OpenAIEmbedder(client=openai_client, dimension=256, batch_size=2)
    texts = [f"text {index}" for index in range(5)]

    result = embedder.embed_with_usage(texts)

    assert [len(request.body["input"]) for request in stub.requests] == [2, 2, 1]
    assert result.vectors == [stub_vector(text, 256, None) for text in texts]
    assert result.calls == 3
    assert result.tokens == sum(len(text.split()) + 1 for text in texts)


def test_openai_embedder_refuses_vectors_of_another_dimension(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    stub.wrong_dimension = True
    embedder = OpenAIEmbedder(client=openai_client, dimension=512)

    with pytest.raises(EmbeddingError, match="511-dimensional"):
        embedder.embed(["anything"])


def test_openai_embedder_makes_no_request_for_no_texts(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    assert OpenAIEmbedder(client=openai_client).embed([]) == []
    assert stub.requests == []


def test_voyage_embedder_sends_the_input_type_and_dimension(
    stub: EmbeddingStub, voyage_client: voyageai.Client
) -> None:
    embedder = VoyageEmbedder(client=voyage_client)
    texts = ["Quel service dépend de redis ?", "payments-db is PostgreSQL 16"]

    result = embedder.embed_with_usage(texts)

    assert result.vectors == [stub_vector(text, 1024, "document") for text in texts]
    (request,) = stub.requests
    assert request.body["model"] == "voyage-3.5"
    assert request.body["input_type"] == "document"
    assert request.body["output_dimension"] == 1024
    assert request.authorization == f"Bearer {API_KEY}"
    assert result.tokens == sum(len(text.split()) + 1 for text in texts)


def test_voyage_query_embedder_embeds_a_text_differently_from_the_document_one(
    stub: EmbeddingStub, voyage_client: voyageai.Client
) -> None:
    documents = VoyageEmbedder(client=voyage_client, model="voyage-4-lite")
    queries = documents.for_queries()

    (as_document,) = documents.embed(["what runs on k8s?"])
    (as_query,) = queries.embed(["what runs on k8s?"])

    assert [request.body["input_type"] for request in stub.requests] == ["document", "query"]
    assert as_query == stub_vector("what runs on k8s?", 1024, "query")
    assert as_query != as_document
    assert (queries.model, queries.dimension) == (documents.model, documents.dimension)


def test_voyage_embedder_batches_requests(
    stub: EmbeddingStub, voyage_client: voyageai.Client
) -> None:
    embedder = VoyageEmbedder(client=voyage_client, dimension=256, batch_size=3)

    vectors = embedder.embed([f"fact {index}" for index in range(7)])

    assert len(vectors) == 7
    assert [len(request.body["input"]) for request in stub.requests] == [3, 3, 1]


def test_voyage_embedder_rejects_an_unknown_input_type(voyage_client: voyageai.Client) -> None:
    with pytest.raises(ValueError, match="input_type"):
        VoyageEmbedder(client=voyage_client, input_type="passage")  # type: ignore[arg-type]


def test_resilient_embedder_retries_a_transient_failure_with_jitter(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    stub.fail_next(503, 429)
    sleep = RecordingSleep()
    embedder = ResilientEmbedder(
        OpenAIEmbedder(client=openai_client, dimension=64),
        breaker=CircuitBreaker(failure_threshold=5, reset_after_s=30),
        retries=2,
        sleep=sleep,
        rng=random.Random(7),  # noqa: S311 - jitter
    )

    (vector,) = embedder.embed(["eventually answered"])

    assert vector == stub_vector("eventually answered", 64, None)
    assert len(stub.requests) == 3
    assert len(sleep.calls) == 2
    assert 0 <= sleep.calls[0] <= 0.5
    assert 0 <= sleep.calls[1] <= 1.0


def test_resilient_embedder_does_not_retry_a_rejected_request(
    stub: EmbeddingStub, voyage_client: voyageai.Client
) -> None:
    stub.fail_next(400)
    embedder = ResilientEmbedder(
        VoyageEmbedder(client=voyage_client),
        breaker=CircuitBreaker(failure_threshold=1, reset_after_s=30),
        retries=3,
        sleep=RecordingSleep(),
    )

    with pytest.raises(voyageai.error.InvalidRequestError):
        embedder.embed(["too long, say"])

    assert len(stub.requests) == 1
    assert embedder.breaker is not None
    assert embedder.breaker.state is BreakerState.CLOSED


def test_breaker_opens_on_server_errors_and_then_short_circuits(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    stub.fail_next(*[500] * 10)
    breaker = CircuitBreaker(failure_threshold=3, reset_after_s=30, clock=FakeClock())
    embedder = ResilientEmbedder(
        OpenAIEmbedder(client=openai_client), breaker=breaker, retries=1, sleep=RecordingSleep()
    )

    with pytest.raises(openai.InternalServerError):
        embedder.embed(["a"])  # two attempts, two failures
    with pytest.raises(CircuitOpen):
        embedder.embed(["a"])  # the third failure opens the circuit before the retry
    with pytest.raises(CircuitOpen):
        embedder.embed(["a"])

    assert breaker.state is BreakerState.OPEN
    assert len(stub.requests) == 3


def test_breaker_lets_a_trial_through_after_the_timeout_and_recovers(
    stub: EmbeddingStub, voyage_client: voyageai.Client
) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=30, clock=clock)
    embedder = ResilientEmbedder(
        VoyageEmbedder(client=voyage_client), breaker=breaker, retries=0, sleep=RecordingSleep()
    )
    stub.fail_next(500, 502)
    for _ in range(2):
        with pytest.raises((voyageai.error.ServerError, voyageai.error.ServiceUnavailableError)):
            embedder.embed(["a"])
    clock.advance(29)
    with pytest.raises(CircuitOpen):
        embedder.embed(["a"])

    clock.advance(1)
    assert breaker.state is BreakerState.HALF_OPEN
    (vector,) = embedder.embed(["a"])

    assert vector == stub_vector("a", 1024, "document")
    assert breaker.state is BreakerState.CLOSED
    assert len(stub.requests) == 3


def test_a_failed_trial_opens_the_breaker_for_another_timeout(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=10, clock=clock)
    embedder = ResilientEmbedder(
        OpenAIEmbedder(client=openai_client), breaker=breaker, retries=0, sleep=RecordingSleep()
    )
    stub.fail_next(500, 500)
    with pytest.raises(openai.InternalServerError):
        embedder.embed(["a"])
    clock.advance(10)

    with pytest.raises(openai.InternalServerError):
        embedder.embed(["a"])  # the trial

    assert breaker.state is BreakerState.OPEN
    clock.advance(9.9)
    with pytest.raises(CircuitOpen):
        embedder.embed(["a"])
    assert len(stub.requests) == 2


def test_cache_meters_the_tokens_the_provider_reported_for_misses_only(
    stub: EmbeddingStub, openai_client: openai.OpenAI
) -> None:
    meter = Meter()
    embedder = CachedEmbedder(
        ResilientEmbedder(
            OpenAIEmbedder(client=openai_client),
            breaker=CircuitBreaker(failure_threshold=3, reset_after_s=30),
        ),
        lru_size=100,
        ttl_s=60,
        meter=meter,
    )

    embedder.embed(["one two three", "four five"])
    embedder.embed(["one two three", "four five", "six"])

    usage = meter.usage("text-embedding-3-small")
    assert (usage.calls, usage.texts, usage.tokens, usage.estimated_tokens) == (2, 3, 9, 0)
    assert usage.cost_usd == pytest.approx(9 * 0.02 / 1_000_000)
    assert [request.body["input"] for request in stub.requests] == [
        ["one two three", "four five"],
        ["six"],
    ]


def test_cache_keeps_voyage_query_and_document_vectors_apart(
    stub: EmbeddingStub, voyage_client: voyageai.Client
) -> None:
    documents = VoyageEmbedder(client=voyage_client, dimension=256)
    cached_documents = CachedEmbedder(documents, lru_size=10, ttl_s=60)
    cached_queries = CachedEmbedder(documents.for_queries(), lru_size=10, ttl_s=60)

    assert cached_documents.key("x") != cached_queries.key("x")
    assert cached_queries.key("x").startswith("emb:voyage-3.5:256:query:")
