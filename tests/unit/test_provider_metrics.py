"""Provider metrics: each guarded request's outcome, the breaker's state, tokens and cost.

In-process providers (no HTTP), the process's default registry; each test reads the
change it caused, under a model name no other test uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from prometheus_client import REGISTRY

from kernel.resilience import CircuitBreaker, CircuitOpen
from retrieval.adapters.embedders import CachedEmbedder, Meter, ResilientEmbedder, Usage
from tests.support.clock import RecordingSleep
from vera import metrics


class Answering:
    """An embedder whose provider answers every request."""

    model = "answering-test-1"
    dimension = 2

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


class Unreachable:
    """An embedder whose provider is down: every request fails transiently."""

    model = "unreachable-test-1"
    dimension = 2
    transient_errors = (ConnectionError,)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ConnectionError("provider down")


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _calls(provider: str, model: str, outcome: str) -> float:
    labels = {"provider": provider, "model": model, "outcome": outcome}
    return _sample("vera_provider_calls_total", **labels)


def _breaker_open(provider: str) -> float | None:
    return REGISTRY.get_sample_value("vera_provider_breaker_open", {"provider": provider})


def test_a_provider_request_is_counted_ok_when_the_provider_answers() -> None:
    embedder = ResilientEmbedder(
        Answering(), breaker=CircuitBreaker(failure_threshold=1, reset_after_s=30),
        sleep=RecordingSleep(), observer=metrics.ProviderMetrics(),
    )  # fmt: skip
    before = _calls("Answering", Answering.model, "ok")

    embedder.embed(["a", "b"])

    assert _calls("Answering", Answering.model, "ok") == before + 1
    assert _breaker_open("Answering") == 0


def test_requests_are_counted_as_errors_then_shed_when_the_breaker_opens() -> None:
    embedder = ResilientEmbedder(
        Unreachable(), breaker=CircuitBreaker(failure_threshold=1, reset_after_s=30),
        retries=0, sleep=RecordingSleep(), observer=metrics.ProviderMetrics(),
    )  # fmt: skip
    errors, shed = (_calls("Unreachable", Unreachable.model, o) for o in ("error", "circuit_open"))

    with pytest.raises(ConnectionError):
        embedder.embed(["a"])
    with pytest.raises(CircuitOpen):
        embedder.embed(["a"])

    assert _calls("Unreachable", Unreachable.model, "error") == errors + 1
    assert _calls("Unreachable", Unreachable.model, "circuit_open") == shed + 1
    assert _breaker_open("Unreachable") == 1


def test_metered_tokens_and_cost_are_exported_per_provider_and_model() -> None:
    meter = Meter(prices={"priced-test-1": 2.0}, on_record=metrics.usage_recorded)
    labels = {"provider": "Priced", "model": "priced-test-1"}
    tokens, cost = "vera_provider_tokens_total", "vera_provider_cost_usd_total"
    before = (_sample(tokens, **labels), _sample(cost, **labels))

    meter.record(provider="Priced", model="priced-test-1", texts=["x"], tokens=500_000, calls=1)

    assert _sample(tokens, **labels) - before[0] == 500_000
    assert _sample(cost, **labels) - before[1] == pytest.approx(1.0)


def test_the_cache_meters_the_provider_under_the_resilience_wrapper() -> None:
    recorded: list[tuple[str, str, Usage]] = []
    meter = Meter(on_record=lambda *batch: recorded.append(batch))
    resilient = ResilientEmbedder(Answering(), breaker=None, sleep=RecordingSleep())
    cache = CachedEmbedder(resilient, lru_size=10, ttl_s=60, meter=meter)

    cache.embed(["one", "two"])
    cache.embed(["one"])  # a hit: no provider work, nothing recorded

    assert [(provider, model, usage.texts) for provider, model, usage in recorded] == [
        ("Answering", Answering.model, 2)
    ]
