"""The resilience chain every provider decorator shares: embedders, rerankers, LLM
extractor and judges.

It is on the floor because curation's and retrieval's adapters both wrap providers with
it; the policies themselves are `kernel.resilience`, and the span is why this is not in
the kernel (which imports no OpenTelemetry).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Protocol

from opentelemetry import trace

from kernel.resilience import CircuitBreaker, CircuitOpen, Sleep, TokenBucket, call_with_resilience

_tracer = trace.get_tracer(__name__)


class CallObserver(Protocol):
    """Told of each guarded request once it has an outcome (the metrics, in production)."""

    def call_finished(
        self, *, provider: str, model: str, outcome: str, breaker: CircuitBreaker | None
    ) -> None:
        """`outcome`: ok, error (after the retries, or rejected), circuit_open (not tried)."""
        ...


class _Provider(Protocol):
    @property
    def model(self) -> str: ...


class Guarded[P: _Provider]:
    """A provider behind a circuit breaker, a token bucket and full-jitter retries.

    Transient errors default to the provider's own `transient_errors`; the sleep and the
    random source are injectable so that tests never wait. Each request is a span
    (`vera.provider.call`, with the provider's adapter and model), its retries inside,
    and its outcome goes to the `observer` (the composition root passes the metrics).
    """

    def __init__(
        self,
        inner: P,
        *,
        breaker: CircuitBreaker | None,
        bucket: TokenBucket | None = None,
        retries: int = 2,
        retry_on: tuple[type[BaseException], ...] | None = None,
        sleep: Sleep = time.sleep,
        rng: random.Random | None = None,
        observer: CallObserver | None = None,
    ) -> None:
        self.inner = inner
        self.model = inner.model
        self.provider = type(inner).__name__  # bounded: one adapter class per provider
        self.breaker = breaker
        self.bucket = bucket
        self.retries = retries
        self.retry_on: tuple[type[BaseException], ...] = (
            retry_on if retry_on is not None else getattr(inner, "transient_errors", ())
        )
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 - jitter only
        self._observer = observer

    def _guarded[T](self, call: Callable[[], T]) -> T:
        """One provider request through breaker, bucket and retries, as one span."""
        attributes = {"vera.provider": self.provider, "vera.model": self.model}
        outcome = "error"
        try:
            with _tracer.start_as_current_span("vera.provider.call", attributes=attributes):
                result = call_with_resilience(
                    call,
                    breaker=self.breaker,
                    bucket=self.bucket,
                    retries=self.retries,
                    retry_on=self.retry_on,
                    sleep=self._sleep,
                    rng=self._rng,
                )
            outcome = "ok"
            return result
        except CircuitOpen:
            outcome = "circuit_open"
            raise
        finally:
            if self._observer is not None:
                self._observer.call_finished(
                    provider=self.provider, model=self.model, outcome=outcome, breaker=self.breaker
                )
