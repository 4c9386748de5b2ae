"""CachedEmbedder: in-process LRU+TTL, then the test-profile Redis, then the provider.

The provider is a recording fake; Redis is the real server the test profile starts
(`REDIS_URL`). Every test embeds under a model name of its own, so its keys cannot
meet another test's, and deletes them afterwards.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import uuid
from collections.abc import Iterator, Sequence

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from retrieval.adapters.embedders import CachedEmbedder, HashingEmbedder, Meter
from retrieval.adapters.embedders.metering import estimate_tokens
from tests.support.clock import FakeClock

DIMENSION = 32


class RecordingEmbedder:
    """A provider fake: hashed vectors, and a log of every batch it was asked for."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.dimension = DIMENSION
        self.batches: list[list[str]] = []
        self._vectors = HashingEmbedder(dimension=DIMENSION)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return self._vectors.embed(texts)


def float32(vector: list[float]) -> list[float]:
    return list(struct.unpack(f"<{len(vector)}f", struct.pack(f"<{len(vector)}f", *vector)))


@pytest.fixture
def provider() -> RecordingEmbedder:
    return RecordingEmbedder(model=f"recording-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def redis_client(provider: RecordingEmbedder) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    yield client
    keys = list(client.scan_iter(match=f"emb:{provider.model}:*"))
    if keys:
        client.delete(*keys)
    client.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_second_call_is_served_from_the_lru_when_texts_repeat(
    provider: RecordingEmbedder,
) -> None:
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60)

    first = cache.embed(["alpha", "beta"])
    second = cache.embed(["beta", "alpha"])

    assert provider.batches == [["alpha", "beta"]]
    assert second == [first[1], first[0]]


def test_only_the_missing_texts_reach_the_provider_once_each(
    provider: RecordingEmbedder,
) -> None:
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60)
    cache.embed(["alpha"])

    vectors = cache.embed(["gamma", "alpha", "gamma", "delta"])

    assert provider.batches == [["alpha"], ["gamma", "delta"]]
    assert vectors[0] == vectors[2]


def test_a_hit_returns_exactly_the_vector_the_miss_returned(provider: RecordingEmbedder) -> None:
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60)

    (miss,) = cache.embed(["alpha"])
    (hit,) = cache.embed(["alpha"])

    assert miss == hit == float32(HashingEmbedder(dimension=DIMENSION).embed(["alpha"])[0])


def test_lru_entry_expires_after_the_ttl(provider: RecordingEmbedder) -> None:
    clock = FakeClock()
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60, clock=clock)
    cache.embed(["alpha"])

    clock.advance(59.9)
    cache.embed(["alpha"])
    assert len(provider.batches) == 1

    clock.advance(0.1)
    cache.embed(["alpha"])
    assert provider.batches == [["alpha"], ["alpha"]]


def test_lru_evicts_the_least_recently_used_text_when_full(provider: RecordingEmbedder) -> None:
    cache = CachedEmbedder(provider, lru_size=2, ttl_s=60)
    cache.embed(["alpha", "beta"])
    cache.embed(["alpha"])  # beta is now the least recently used

    cache.embed(["gamma"])
    cache.embed(["alpha", "beta"])

    assert provider.batches == [["alpha", "beta"], ["gamma"], ["beta"]]


def test_empty_input_asks_nothing(provider: RecordingEmbedder) -> None:
    meter = Meter()

    assert CachedEmbedder(provider, lru_size=10, ttl_s=60, meter=meter).embed([]) == []
    assert provider.batches == []
    assert meter.snapshot() == {}


def test_meter_counts_only_misses_and_estimates_unreported_tokens(
    provider: RecordingEmbedder,
) -> None:
    meter = Meter(prices={provider.model: 1.0})
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60, meter=meter)

    cache.embed(["a" * 40, "b" * 10])
    cache.embed(["a" * 40, "b" * 10])
    cache.embed(["c" * 3])

    usage = meter.usage(provider.model)
    assert (usage.calls, usage.texts) == (2, 3)
    assert usage.tokens == usage.estimated_tokens == 10 + 3 + 1
    assert usage.cost_usd == pytest.approx(14 / 1_000_000)


def test_meter_counts_an_unpriced_model_at_zero_and_says_so(
    provider: RecordingEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    meter = Meter()
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60, meter=meter)

    with caplog.at_level(logging.WARNING):
        cache.embed(["alpha"])
        cache.embed(["beta"])

    assert meter.usage(provider.model).cost_usd == 0.0
    assert meter.usage(provider.model).tokens == 2 + 1  # "alpha", "beta"
    assert [record.getMessage() for record in caplog.records].count(
        f"provider model {provider.model!r} has no price; its calls are metered at $0"
    ) == 1


def test_price_table_covers_the_configured_providers() -> None:
    meter = Meter()

    assert meter.price_per_mtok("text-embedding-3-small") == 0.02
    assert meter.price_per_mtok("voyage-3.5") == 0.06
    assert meter.price_per_mtok("voyage-4-lite") == 0.02
    assert meter.price_per_mtok("all-MiniLM-L6-v2") == 0.0
    assert meter.price_per_mtok("multilingual-e5-small-q4") == 0.0
    assert meter.price_per_mtok("hashing-v1-256") == 0.0


def test_estimate_is_a_quarter_token_per_character_and_one_per_text_at_least() -> None:
    assert estimate_tokens(["", "abcd", "abcde"]) == 1 + 1 + 2


def test_a_second_process_is_served_from_redis(
    provider: RecordingEmbedder, redis_client: redis.Redis
) -> None:
    meter = Meter()
    CachedEmbedder(provider, lru_size=10, ttl_s=60, redis=redis_client, meter=meter).embed(
        ["alpha", "beta"]
    )
    other_process = CachedEmbedder(provider, lru_size=10, ttl_s=60, redis=redis_client, meter=meter)

    vectors = other_process.embed(["beta", "alpha", "gamma"])

    assert provider.batches == [["alpha", "beta"], ["gamma"]]
    assert vectors[:2] == [
        float32(vector) for vector in HashingEmbedder(dimension=DIMENSION).embed(["beta", "alpha"])
    ]
    assert meter.usage(provider.model).texts == 3


def test_redis_holds_float32_bytes_under_the_model_key_with_a_ttl(
    provider: RecordingEmbedder, redis_client: redis.Redis
) -> None:
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=90, redis=redis_client)

    (vector,) = cache.embed(["alpha"])

    key = cache.key("alpha")
    assert key == (
        f"emb:{provider.model}:{DIMENSION}:"
        "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8"
    )
    stored = redis_client.get(key)
    assert isinstance(stored, bytes)
    assert list(struct.unpack(f"<{DIMENSION}f", stored)) == vector
    assert 0 < redis_client.pttl(key) <= 90_000


def test_a_redis_entry_of_the_wrong_size_is_a_miss(
    provider: RecordingEmbedder, redis_client: redis.Redis
) -> None:
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60, redis=redis_client)
    redis_client.set(cache.key("alpha"), b"\x00" * 12, px=60_000)

    cache.embed(["alpha"])

    assert provider.batches == [["alpha"]]


def unreachable_redis() -> redis.Redis:
    return redis.Redis(port=closed_port(), socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))


def test_redis_being_down_costs_a_provider_call_not_an_error(
    provider: RecordingEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    cache = CachedEmbedder(provider, lru_size=10, ttl_s=60, redis=unreachable_redis())

    with caplog.at_level(logging.WARNING):
        (vector,) = cache.embed(["alpha"])

    assert len(vector) == DIMENSION
    assert provider.batches == [["alpha"]]
    assert [record.getMessage()[:29] for record in caplog.records] == [
        "embedding cache read failed, "
    ]


def test_redis_is_left_alone_for_a_while_after_an_error(
    provider: RecordingEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    cache = CachedEmbedder(
        provider,
        lru_size=0,
        ttl_s=60,
        redis=unreachable_redis(),
        clock=clock,
        redis_retry_after_s=30,
    )
    with caplog.at_level(logging.WARNING):
        cache.embed(["alpha"])
        assert len(caplog.records) == 1
        caplog.clear()
        clock.advance(29)
        cache.embed(["alpha"])
        assert caplog.records == []
        clock.advance(1)
        cache.embed(["alpha"])

    assert len(caplog.records) == 1
    assert provider.batches == [["alpha"]] * 3


def test_a_redis_client_that_decodes_responses_is_refused(provider: RecordingEmbedder) -> None:
    client = redis.Redis.from_url(os.environ["REDIS_URL"], decode_responses=True)

    with pytest.raises(ValueError, match="decode_responses"):
        CachedEmbedder(provider, lru_size=10, ttl_s=60, redis=client)
