"""Circuit breaker, token bucket, full jitter and their composition (pure, no I/O).

They live in `kernel.resilience`, below the apps: curation and retrieval share them.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.resilience import (
    BreakerState,
    CircuitBreaker,
    CircuitOpen,
    TokenBucket,
    call_with_resilience,
    full_jitter_delay,
)


class FakeTime:
    """A clock whose sleep advances it: waiting costs no wall time."""

    def __init__(self, start: float = 100.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Transient(Exception):
    """Stands for a provider's 5xx or 429."""


class Rejected(Exception):
    """Stands for a provider's 400: the request itself is wrong."""


class Flaky:
    """Fails with the given errors in turn, then answers "ok"; counts its calls."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def breaker(time: FakeTime, *, threshold: int = 3, reset_after_s: float = 30) -> CircuitBreaker:
    return CircuitBreaker(
        failure_threshold=threshold, reset_after_s=reset_after_s, clock=time.clock
    )


def fail(circuit: CircuitBreaker) -> None:
    circuit.before_call()
    circuit.record_failure()


# --- full jitter -------------------------------------------------------------------


@given(
    attempt=st.integers(min_value=0, max_value=5_000),
    base=st.floats(min_value=0, max_value=60, allow_nan=False),
    cap=st.floats(min_value=0, max_value=3_600, allow_nan=False),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_full_jitter_delay_stays_within_zero_and_the_capped_exponential(
    attempt: int, base: float, cap: float, seed: int
) -> None:
    delay = full_jitter_delay(attempt, base_s=base, cap_s=cap, rng=random.Random(seed))  # noqa: S311

    assert 0.0 <= delay <= min(cap, base * 2.0 ** min(attempt, 1000))


@given(attempt=st.integers(min_value=0, max_value=12), seed=st.integers(0, 2**32))
def test_full_jitter_spreads_over_the_whole_range(attempt: int, seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311
    ceiling = min(8.0, 0.5 * 2**attempt)

    delays = [full_jitter_delay(attempt, base_s=0.5, cap_s=8.0, rng=rng) for _ in range(400)]

    assert min(delays) < 0.1 * ceiling
    assert max(delays) > 0.9 * ceiling


def test_full_jitter_rejects_negative_arguments() -> None:
    with pytest.raises(ValueError, match="negative"):
        full_jitter_delay(-1, base_s=0.5, cap_s=8.0, rng=random.Random(1))  # noqa: S311


def test_full_jitter_draws_from_a_shared_generator_when_none_is_given() -> None:
    delays = {full_jitter_delay(3, base_s=1.0, cap_s=30.0) for _ in range(50)}

    assert all(0.0 <= delay <= 8.0 for delay in delays)
    assert len(delays) > 1


# --- token bucket ------------------------------------------------------------------


@given(
    rate=st.floats(min_value=0.1, max_value=1_000),
    burst=st.integers(min_value=1, max_value=50),
    takes=st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=60),
)
def test_bucket_back_to_back_acquires_take_exactly_the_refill_time(
    rate: float, burst: int, takes: list[int]
) -> None:
    time = FakeTime()
    bucket = TokenBucket(rate_per_s=rate, burst=burst, clock=time.clock, sleep=time.sleep)
    amounts = [min(n, burst) for n in takes]

    for n in amounts:
        bucket.acquire(n)

    elapsed = time.now - 100.0
    expected = max(sum(amounts) - burst, 0) / rate
    assert elapsed == pytest.approx(expected, rel=1e-6, abs=1e-9)


@given(
    rate=st.floats(min_value=0.1, max_value=100),
    burst=st.integers(min_value=1, max_value=20),
    steps=st.lists(
        st.tuples(st.floats(min_value=0, max_value=5), st.integers(min_value=1, max_value=20)),
        min_size=1,
        max_size=60,
    ),
)
def test_bucket_never_grants_more_than_burst_plus_rate_times_elapsed(
    rate: float, burst: int, steps: list[tuple[float, int]]
) -> None:
    time = FakeTime()
    bucket = TokenBucket(rate_per_s=rate, burst=burst, clock=time.clock, sleep=time.sleep)
    granted = 0.0

    for idle, n in steps:
        time.now += idle
        bucket.acquire(min(n, burst))
        granted += min(n, burst)
        assert granted <= burst + rate * (time.now - 100.0) + 1e-6


def test_try_acquire_never_waits_and_succeeds_once_refilled() -> None:
    time = FakeTime()
    bucket = TokenBucket(rate_per_s=2, burst=2, clock=time.clock, sleep=time.sleep)

    assert [bucket.try_acquire() for _ in range(3)] == [True, True, False]
    time.now += 0.5
    assert bucket.try_acquire()
    assert not bucket.try_acquire()
    assert time.sleeps == []


def test_acquire_returns_how_long_it_waited() -> None:
    time = FakeTime()
    bucket = TokenBucket(rate_per_s=4, burst=1, clock=time.clock, sleep=time.sleep)

    assert bucket.acquire() == 0.0
    assert bucket.acquire() == pytest.approx(0.25)
    assert time.sleeps == [pytest.approx(0.25)]


def test_bucket_refuses_to_take_more_than_it_can_ever_hold() -> None:
    bucket = TokenBucket(rate_per_s=1, burst=3)

    with pytest.raises(ValueError, match="burst=3"):
        bucket.acquire(4)


# --- circuit breaker ---------------------------------------------------------------


def test_breaker_stays_closed_below_the_threshold_of_consecutive_failures() -> None:
    circuit = breaker(FakeTime(), threshold=3)

    fail(circuit)
    fail(circuit)
    circuit.record_success()
    fail(circuit)
    fail(circuit)

    assert circuit.state is BreakerState.CLOSED


def test_breaker_opens_after_the_threshold_and_refuses_calls() -> None:
    time = FakeTime()
    circuit = breaker(time, threshold=3, reset_after_s=30)
    for _ in range(3):
        fail(circuit)
    time.now += 10

    with pytest.raises(CircuitOpen) as refused:
        circuit.before_call()

    assert circuit.state is BreakerState.OPEN
    assert refused.value.retry_after_s == pytest.approx(20)


def test_half_open_breaker_admits_one_trial_at_a_time() -> None:
    time = FakeTime()
    circuit = breaker(time, threshold=1, reset_after_s=30)
    fail(circuit)
    time.now += 30

    circuit.before_call()  # the trial

    assert circuit.state is BreakerState.HALF_OPEN
    with pytest.raises(CircuitOpen):
        circuit.before_call()


def test_a_successful_trial_closes_the_breaker() -> None:
    time = FakeTime()
    circuit = breaker(time, threshold=2, reset_after_s=30)
    fail(circuit)
    fail(circuit)
    time.now += 30

    circuit.before_call()
    circuit.record_success()

    assert circuit.state is BreakerState.CLOSED
    fail(circuit)
    assert circuit.state is BreakerState.CLOSED  # the failure count started again


def test_a_failed_trial_reopens_the_breaker_for_a_full_timeout() -> None:
    time = FakeTime()
    circuit = breaker(time, threshold=5, reset_after_s=30)
    for _ in range(5):
        fail(circuit)
    time.now += 30

    fail(circuit)
    time.now += 29.9

    assert circuit.state is BreakerState.OPEN
    time.now += 0.1
    assert circuit.state is BreakerState.HALF_OPEN


def test_guard_counts_a_rejected_request_as_an_answer() -> None:
    circuit = breaker(FakeTime(), threshold=1)

    with pytest.raises(Rejected), circuit.guard(failures=(Transient,)):
        raise Rejected

    assert circuit.state is BreakerState.CLOSED


def test_an_interrupted_trial_frees_the_half_open_slot() -> None:
    time = FakeTime()
    circuit = breaker(time, threshold=1, reset_after_s=5)
    fail(circuit)
    time.now += 5

    with pytest.raises(KeyboardInterrupt), circuit.guard(failures=(Transient,)):
        raise KeyboardInterrupt

    assert circuit.state is BreakerState.HALF_OPEN
    circuit.before_call()  # a new trial is admitted


# --- call_with_resilience ----------------------------------------------------------


def test_transient_errors_are_retried_with_full_jitter_until_success() -> None:
    time = FakeTime()
    fn = Flaky(Transient(), Transient())

    result = call_with_resilience(
        fn,
        breaker=breaker(time),
        bucket=None,
        retries=2,
        retry_on=(Transient,),
        sleep=time.sleep,
        rng=random.Random(3),  # noqa: S311
        base_delay_s=1.0,
        cap_delay_s=10.0,
    )

    assert (result, fn.calls) == ("ok", 3)
    assert len(time.sleeps) == 2
    assert 0 <= time.sleeps[0] <= 1.0
    assert 0 <= time.sleeps[1] <= 2.0


def test_the_last_transient_error_is_raised_when_retries_run_out() -> None:
    time = FakeTime()
    fn = Flaky(Transient("1"), Transient("2"), Transient("3"))

    with pytest.raises(Transient, match="2"):
        call_with_resilience(
            fn, breaker=None, bucket=None, retries=1, retry_on=(Transient,), sleep=time.sleep
        )

    assert fn.calls == 2


def test_other_errors_are_raised_at_once() -> None:
    time = FakeTime()
    fn = Flaky(Rejected())

    with pytest.raises(Rejected):
        call_with_resilience(
            fn, breaker=None, bucket=None, retries=5, retry_on=(Transient,), sleep=time.sleep
        )

    assert (fn.calls, time.sleeps) == (1, [])


def test_an_opening_breaker_stops_the_retries() -> None:
    time = FakeTime()
    circuit = breaker(time, threshold=2)
    fn = Flaky(*[Transient() for _ in range(5)])

    with pytest.raises(CircuitOpen):
        call_with_resilience(
            fn, breaker=circuit, bucket=None, retries=5, retry_on=(Exception,), sleep=time.sleep
        )

    assert fn.calls == 2


def test_every_attempt_takes_a_token_from_the_bucket() -> None:
    time = FakeTime()
    bucket = TokenBucket(rate_per_s=1, burst=1, clock=time.clock, sleep=time.sleep)
    fn = Flaky(Transient())

    call_with_resilience(
        fn,
        breaker=None,
        bucket=bucket,
        retries=1,
        retry_on=(Transient,),
        sleep=time.sleep,
        rng=random.Random(0),  # noqa: S311
        base_delay_s=0.0,
    )

    # the retry's jitter is 0, so the second attempt waited a full second for its token
    assert time.sleeps == [0.0, pytest.approx(1.0)]
