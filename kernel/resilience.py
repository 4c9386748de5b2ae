"""Resilience for calls to a provider: circuit breaker, token bucket, full-jitter retry.

Pure Python (stdlib only) with the clock, the sleep and the random source injected, so
the policies are unit-tested without waiting. Every app uses them: retrieval composes
them per provider (`call_with_resilience`), curation's HTTP connectors and its outbox
back off with `full_jitter_delay`. The breaker sheds load from a provider that keeps
failing, the bucket keeps the request rate under its quota, and transient errors are
retried after a full-jitter backoff so that many callers do not retry in lockstep.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from enum import StrEnum

Clock = Callable[[], float]
Sleep = Callable[[float], None]


class CircuitOpen(Exception):
    """The breaker is open: the call was not attempted."""

    def __init__(self, name: str, *, retry_after_s: float) -> None:
        label = f"circuit {name!r}" if name else "circuit"
        super().__init__(f"{label} is open; next trial in {retry_after_s:.1f}s")
        self.name = name
        self.retry_after_s = retry_after_s


class BreakerState(StrEnum):
    """Where a circuit breaker stands."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Closed -> open after N consecutive failures -> half-open after a timeout.

    Half-open lets exactly one trial call through; its success closes the circuit, its
    failure opens it for another `reset_after_s`. Calls made while open, or while the
    trial is in flight, raise `CircuitOpen` without touching the provider. Thread-safe.
    """

    def __init__(
        self,
        *,
        failure_threshold: int,
        reset_after_s: float,
        clock: Clock = time.monotonic,
        name: str = "",
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if reset_after_s < 0:
            raise ValueError("reset_after_s cannot be negative")
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self.name = name
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state()

    def _state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock() - self._opened_at >= self.reset_after_s:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def before_call(self) -> None:
        """Admit a call or raise `CircuitOpen`; in half-open, admit only the one trial."""
        with self._lock:
            state = self._state()
            if state is BreakerState.CLOSED:
                return
            if state is BreakerState.HALF_OPEN and not self._trial_in_flight:
                self._trial_in_flight = True
                return
            waited = self._clock() - (self._opened_at or 0.0)
            raise CircuitOpen(self.name, retry_after_s=max(self.reset_after_s - waited, 0.0))

    @contextmanager
    def guard(self, *, failures: tuple[type[BaseException], ...] = (Exception,)) -> Iterator[None]:
        """Admit the block, then record it: `failures` count against the provider.

        Any other exception means the provider answered (a rejected request, a bug
        on our side), so it closes the circuit like a success; an interruption that
        is not an `Exception` only frees the half-open trial.
        """
        self.before_call()
        try:
            yield
        except failures:
            self.record_failure()
            raise
        except Exception:
            self.record_success()
            raise
        except BaseException:
            self.release()
            raise
        self.record_success()

    def record_success(self) -> None:
        """The provider answered: close the circuit and forget earlier failures."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def release(self) -> None:
        """The call ended without a verdict (interrupted): let the next call be the trial."""
        with self._lock:
            self._trial_in_flight = False

    def record_failure(self) -> None:
        """The provider failed: open after the threshold, or at once if this was the trial."""
        with self._lock:
            self._failures += 1
            if self._trial_in_flight or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._trial_in_flight = False


class TokenBucket:
    """At most `burst` calls at once, refilled at `rate_per_s`; thread-safe.

    `acquire` reserves its tokens immediately (the balance may go negative) and then
    sleeps until they would have been refilled, so concurrent callers queue fairly in
    arrival order and none can starve another.
    """

    def __init__(
        self,
        *,
        rate_per_s: float,
        burst: float,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
    ) -> None:
        if rate_per_s <= 0:
            raise ValueError("rate_per_s must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(now - self._updated, 0.0)
        self._tokens = min(self.burst, self._tokens + elapsed * self.rate_per_s)
        self._updated = now

    def _check(self, n: float) -> None:
        if n <= 0 or n > self.burst:
            raise ValueError(f"can only take between 0 and burst={self.burst} tokens, not {n}")

    def try_acquire(self, n: float = 1) -> bool:
        """Take `n` tokens if they are there now; never waits."""
        self._check(n)
        with self._lock:
            self._refill()
            if self._tokens < n:
                return False
            self._tokens -= n
            return True

    def acquire(self, n: float = 1) -> float:
        """Take `n` tokens, sleeping until they are available; returns the seconds waited."""
        self._check(n)
        with self._lock:
            self._refill()
            self._tokens -= n
            wait = max(-self._tokens / self.rate_per_s, 0.0)
        if wait > 0:
            self._sleep(wait)
        return wait


# Shared by callers that pass no generator of their own: jitter needs spread, not secrecy.
_JITTER = random.Random()  # noqa: S311 - jitter, not crypto


def full_jitter_delay(
    attempt: int, *, base_s: float, cap_s: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait before retry `attempt`: uniform over [0, min(cap_s, base_s * 2**attempt)].

    Full jitter (not "exponential plus a little noise") is what spreads many callers that
    failed together over the whole window, so their retries do not arrive in lockstep.
    """
    if attempt < 0 or base_s < 0 or cap_s < 0:
        raise ValueError("attempt, base_s and cap_s cannot be negative")
    # 2.0**attempt overflows past 1023; any exponent near that already exceeds any cap.
    ceiling = min(cap_s, base_s * 2.0 ** min(attempt, 1000))
    return (rng if rng is not None else _JITTER).uniform(0.0, ceiling)


def call_with_resilience[T](
    fn: Callable[[], T],
    *,
    breaker: CircuitBreaker | None,
    bucket: TokenBucket | None,
    retries: int,
    retry_on: tuple[type[BaseException], ...],
    sleep: Sleep = time.sleep,
    rng: random.Random | None = None,
    base_delay_s: float = 0.5,
    cap_delay_s: float = 8.0,
) -> T:
    """Call `fn` through the breaker and the bucket, retrying `retry_on` errors with jitter.

    Only `retry_on` errors count as provider failures for the breaker: any other error
    (a rejected request, a bug) means the provider answered, so it is re-raised at once
    and counts as a success. After `retries` retries the last transient error is
    re-raised; a breaker that opens meanwhile stops the retries with `CircuitOpen`.
    """
    if retries < 0:
        raise ValueError("retries cannot be negative")
    for attempt in itertools.count():
        guard = breaker.guard(failures=retry_on) if breaker is not None else nullcontext()
        try:
            with guard:
                if bucket is not None:
                    bucket.acquire()
                return fn()
        except retry_on as error:
            if isinstance(error, CircuitOpen) or attempt >= retries:
                raise
        sleep(full_jitter_delay(attempt, base_s=base_delay_s, cap_s=cap_delay_s, rng=rng))
    raise AssertionError("unreachable")  # itertools.count() never ends
