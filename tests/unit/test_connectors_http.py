"""ResilientHttp against a real local server: retries, Retry-After, timeouts, fast failures."""

from __future__ import annotations

import datetime as dt
import random
import socket
from collections.abc import Iterator

import pytest

from curation.adapters.connectors.http import (
    ResilientHttp,
    RetryPolicy,
    backoff_delay,
    retry_after_seconds,
)
from curation.domain.errors import ConnectorError
from tests.support.clock import RecordingSleep
from tests.support.fake_upstreams import ECHO, TOKEN, FakeUpstreams, Fault, quick_http

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)


class CeilingRandom(random.Random):
    """Always draws the top of the range, so the jitter ceiling itself is observable."""

    def uniform(self, a: float, b: float) -> float:
        return b


@pytest.fixture
def upstream() -> Iterator[FakeUpstreams]:
    with FakeUpstreams() as server:
        yield server


@pytest.fixture
def http(sleep: RecordingSleep) -> Iterator[ResilientHttp]:
    """Three attempts and a short read timeout: the timeout tests wait less."""
    with quick_http(sleep, max_attempts=3, read_timeout_s=0.3) as client:
        yield client


def _closed_port() -> int:
    # Bind then release: nothing listens there for the duration of the test.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_backoff_ceiling_doubles_per_attempt_when_below_the_cap() -> None:
    delays = [backoff_delay(n, base_s=0.5, cap_s=30, rng=CeilingRandom()) for n in range(4)]
    assert delays == [0.5, 1.0, 2.0, 4.0]


def test_backoff_ceiling_stops_at_the_cap_when_attempts_grow() -> None:
    assert backoff_delay(12, base_s=0.5, cap_s=30, rng=CeilingRandom()) == 30


def test_backoff_draws_anywhere_from_zero_when_jittered() -> None:
    rng = random.Random(7)  # noqa: S311 - a seeded draw for a deterministic test
    delays = [backoff_delay(3, base_s=1, cap_s=30, rng=rng) for _ in range(200)]
    assert all(0 <= delay <= 8 for delay in delays)
    assert min(delays) < 1 < 7 < max(delays)


def test_retry_after_is_read_as_seconds_when_given_delta_seconds() -> None:
    assert retry_after_seconds("7", now=NOW) == 7.0


def test_retry_after_is_read_as_a_date_when_given_an_http_date() -> None:
    assert retry_after_seconds("Wed, 01 May 2024 12:00:30 GMT", now=NOW) == 30.0


def test_retry_after_is_zero_when_the_date_is_past() -> None:
    assert retry_after_seconds("Wed, 01 May 2024 11:00:00 GMT", now=NOW) == 0.0


@pytest.mark.parametrize("value", [None, "", "soon", "nan", "inf"])
def test_retry_after_is_ignored_when_unusable(value: str | None) -> None:
    assert retry_after_seconds(value, now=NOW) is None


def test_policy_rejects_zero_attempts_when_configured() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


def test_get_json_succeeds_after_a_retry_when_the_server_errors_once(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.server_error(503))
    assert http.get_json(upstream.base_url + ECHO) == {"ok": True}
    assert len(upstream.requests_to(ECHO)) == 2
    assert len(sleep.calls) == 1
    assert 0 <= sleep.calls[0] <= 0.01  # first backoff ceiling: base * 2**0


def test_get_json_waits_as_told_when_rate_limited_with_retry_after(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.rate_limited("3"))
    assert http.get_json(upstream.base_url + ECHO) == {"ok": True}
    assert sleep.calls == [3.0]


def test_get_json_caps_the_wait_when_retry_after_is_excessive(
    upstream: FakeUpstreams, sleep: RecordingSleep
) -> None:
    policy = RetryPolicy(max_attempts=2, retry_after_cap_s=10)
    upstream.fail_next(Fault.rate_limited("86400"))
    with ResilientHttp(policy=policy, sleep=sleep) as http:
        http.get_json(upstream.base_url + ECHO)
    assert sleep.calls == [10]


def test_get_json_backs_off_when_rate_limited_without_retry_after(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.rate_limited(None))
    http.get_json(upstream.base_url + ECHO)
    assert len(sleep.calls) == 1
    assert 0 <= sleep.calls[0] <= 0.01


def test_get_json_retries_when_the_answer_is_slower_than_the_read_timeout(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.slow(1.0))
    assert http.get_json(upstream.base_url + ECHO) == {"ok": True}
    assert len(upstream.requests_to(ECHO)) == 2
    assert len(sleep.calls) == 1


def test_get_json_names_the_last_status_when_retries_run_out(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    upstream.fail_next(Fault.server_error(500), Fault.server_error(502), Fault.server_error(503))
    with pytest.raises(ConnectorError, match=r"after 3 attempts; last: 503 Service Unavailable"):
        http.get_json(upstream.base_url + ECHO)
    assert len(sleep.calls) == 2  # no pointless wait after the last attempt


def test_get_json_fails_at_once_when_the_token_is_rejected(
    upstream: FakeUpstreams, http: ResilientHttp, sleep: RecordingSleep
) -> None:
    with pytest.raises(ConnectorError, match="unauthorised") as failure:
        http.get_json(upstream.base_url + ECHO, headers={"Authorization": f"Bearer {TOKEN}x"})
    assert TOKEN not in str(failure.value)
    assert len(upstream.requests_to(ECHO)) == 1
    assert sleep.calls == []


def test_get_json_fails_at_once_when_the_answer_is_not_json(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    upstream.fail_next(Fault.malformed_json())
    with pytest.raises(ConnectorError, match="not JSON"):
        http.get_json(upstream.base_url + ECHO)
    assert len(upstream.requests_to(ECHO)) == 1


def test_get_json_fails_at_once_naming_the_depth_when_the_answer_nests_too_deep(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    deep = b'{"results": ' + b"[" * 3_000 + b"]" * 3_000 + b"}"
    upstream.fail_next(Fault(status=200, body=deep, headers={"Content-Type": "application/json"}))
    with pytest.raises(ConnectorError, match="answer refused: JSON nested deeper than 512"):
        http.get_json(upstream.base_url + ECHO)
    assert len(upstream.requests_to(ECHO)) == 1


def test_get_json_fails_at_once_when_the_status_is_a_client_error(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    with pytest.raises(ConnectorError, match="404 Not Found"):
        http.get_json(upstream.base_url + "/nowhere")
    assert len(upstream.requests) == 1


def test_get_json_retries_then_fails_when_nothing_listens(
    http: ResilientHttp, sleep: RecordingSleep
) -> None:
    with pytest.raises(ConnectorError, match="after 3 attempts; last: ConnectError"):
        http.get_json(f"http://127.0.0.1:{_closed_port()}/x")
    assert len(sleep.calls) == 2


def test_errors_leave_out_the_query_string_when_describing_the_url(
    upstream: FakeUpstreams, http: ResilientHttp
) -> None:
    with pytest.raises(ConnectorError) as failure:
        http.get_json(upstream.base_url + "/nowhere", params={"q": "private words"})
    assert "private" not in str(failure.value)
    assert f"{upstream.base_url}/nowhere" in str(failure.value)
