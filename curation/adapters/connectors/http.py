"""JSON over HTTP for connectors: per-request timeouts, jittered retries, Retry-After.

With a SourcePolicy, every request (each redirect hop too) must name an allowed host, and
every connection goes to an address checked after resolution: the name is resolved
here, each address is checked, and the socket connects to that very address, so a DNS
answer cannot change between the check and the connect.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import math
import random
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from curation.domain.errors import ConnectorError
from curation.domain.source_policy import (
    HostRules,
    SourcePolicy,
    address_refusal,
    endpoint_refusal,
    host_refusal,
    ip_literal,
)
from kernel.jsonbounds import JSONTooDeep, loads_bounded
from kernel.resilience import full_jitter_delay

logger = logging.getLogger(__name__)

Params = Mapping[str, str | int]
# Looks at a decoded 200 answer and names why it must be retried (Slack's `ratelimited`), or None.
RetrySignal = Callable[[Any], str | None]

_UNAUTHORISED = frozenset({401, 403})
# Far deeper than any Confluence, Jira or Slack answer nests (rich-text trees included),
# well short of where json.loads would exhaust the stack.
UPSTREAM_MAX_DEPTH = 512


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts a request gets and how long to wait between them."""

    max_attempts: int = 5
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.backoff_base_s, self.backoff_cap_s, self.retry_after_cap_s) < 0:
            raise ValueError("backoff and Retry-After limits cannot be negative")


# The old name of the shared backoff, still imported by tests/test_connectors_http.py.
backoff_delay = full_jitter_delay


def retry_after_seconds(value: str | None, *, now: dt.datetime) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or HTTP-date); None if unusable."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        # HTTP-dates are always GMT; parsedate leaves "-0000" zones naive.
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        seconds = (when - now).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def describe_url(url: str) -> str:
    """scheme://host[:port]/path of a URL: no credentials, no query, safe to put in messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to for a TCP connection, in the resolver's order."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        # Transient as far as we know: httpcore's ConnectError is retried with backoff.
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
    return list(dict.fromkeys(str(answer[4][0]) for answer in answers))


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's socket backend, connecting only to addresses the allow-list admits."""

    def __init__(
        self,
        rules: HostRules,
        *,
        resolve: Callable[[str, int], list[str]] = resolve_host,
        denied: tuple[tuple[str, int], ...] = (),
    ) -> None:
        self._rules = rules
        self._resolve = resolve
        self._denied = denied

    def _own_services(self) -> list[tuple[str, int]]:
        """The server's own service endpoints as addresses (names resolved now)."""
        found: list[tuple[str, int]] = []
        for host, port in self._denied:
            if ip_literal(host) is not None:
                found.append((host, port))
                continue
            try:
                found += [(address, port) for address in self._resolve(host, port)]
            except httpcore.ConnectError:
                continue  # a service name that does not resolve here cannot be reached either
        return found

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        """Resolve `host`, refuse if any address is not allowed, connect to a checked one."""
        if reason := host_refusal(host, self._rules):
            raise ConnectorError(f"connection to {host} refused: {reason}")
        addresses = self._resolve(host, port)
        # One refused answer refuses them all: a mixed answer is how rebinding starts.
        own = self._own_services()
        for address in addresses:
            reason = address_refusal(host, address, self._rules) or endpoint_refusal(
                address, port, own
            )
            if reason:
                raise ConnectorError(f"connection to {host} refused: {reason}")
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError(f"{host} resolved to no address")


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over a GuardedBackend (no proxies: they would resolve names for us)."""

    def __init__(self, rules: HostRules, *, denied: tuple[tuple[str, int], ...] = ()) -> None:
        super().__init__()
        # HTTPTransport takes no network backend, so its pool is rebuilt around ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=100,  # httpx's default limits
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=GuardedBackend(rules, denied=denied),
        )


def _hop_guard(rules: HostRules) -> Callable[[httpx.Request], None]:
    """An httpx request hook refusing any request (each redirect hop) to a host not allowed."""

    def check(request: httpx.Request) -> None:
        host = request.url.raw_host.decode("ascii")
        if reason := host_refusal(host, rules):
            raise ConnectorError(f"GET {describe_url(str(request.url))}: {reason}")

    return check


def _client(timeout: httpx.Timeout, policy: SourcePolicy | None) -> httpx.Client:
    """One pooled client; with a policy, guarded at every hop and every connection."""
    options: dict[str, Any] = {
        "timeout": timeout,
        "follow_redirects": True,
        "headers": {"Accept": "application/json", "User-Agent": "vera-connector/1"},
    }
    if policy is None:
        return httpx.Client(**options)
    # trust_env=False: no proxy from the environment, no credentials from ~/.netrc.
    return httpx.Client(
        **options,
        transport=GuardedTransport(policy.hosts, denied=policy.denied_endpoints),
        trust_env=False,
        event_hooks={"request": [_hop_guard(policy.hosts)]},
    )


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class _Done:
    payload: Any


@dataclass(frozen=True)
class _Retry:
    reason: str
    delay_s: float | None  # None: use the jittered backoff


class ResilientHttp:
    """JSON GETs over one httpx.Client, retrying what is transient and failing fast otherwise.

    Credentials travel only in the per-call `headers`; no message this class builds or
    logs includes headers or query strings, so a token cannot leak through an error.
    With a `source_policy`, only allowed hosts and addresses are reached (module docstring);
    without one (tests, and code that builds its own URLs) nothing is checked.
    """

    def __init__(
        self,
        *,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 30.0,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], dt.datetime] = _utcnow,
        source_policy: SourcePolicy | None = None,
    ) -> None:
        self._policy = policy or RetryPolicy()
        self._sleep = sleep
        # Jitter only spreads retries out; it needs no cryptographic randomness.
        self._rng = rng or random.Random()  # noqa: S311
        self._clock = clock
        # httpx drops the Authorization header itself when a redirect leaves the origin.
        self._client = _client(
            httpx.Timeout(read_timeout_s, connect=connect_timeout_s), source_policy
        )

    def get_json(
        self,
        url: str,
        *,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
        retry_signal: RetrySignal | None = None,
    ) -> Any:
        """GET url and decode its JSON, retrying transient failures; ConnectorError otherwise."""
        where = describe_url(url)
        attempts = self._policy.max_attempts
        last = "no attempt was made"
        for attempt in range(attempts):
            outcome = self._attempt(url, params, headers, retry_signal)
            if isinstance(outcome, _Done):
                return outcome.payload
            last = outcome.reason
            if attempt + 1 < attempts:
                delay = self._delay(attempt, outcome)
                logger.warning(
                    "GET %s: %s; retry %d of %d in %.2fs",
                    where,
                    last,
                    attempt + 1,
                    attempts - 1,
                    delay,
                )
                self._sleep(delay)
        raise ConnectorError(f"GET {where} failed after {attempts} attempts; last: {last}")

    def close(self) -> None:
        """Release pooled connections."""
        self._client.close()

    def __enter__(self) -> ResilientHttp:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _attempt(
        self,
        url: str,
        params: Params | None,
        headers: Mapping[str, str] | None,
        retry_signal: RetrySignal | None,
    ) -> _Done | _Retry:
        try:
            response = self._client.get(url, params=params, headers=headers)
        except httpx.UnsupportedProtocol:
            raise ConnectorError(f"GET {describe_url(url)}: unsupported URL scheme") from None
        except httpx.TimeoutException as exc:
            return _Retry(f"{type(exc).__name__} (no answer within the timeout)", None)
        except httpx.TransportError as exc:
            return _Retry(f"{type(exc).__name__}: {exc}", None)
        return self._judge(response, retry_signal)

    def _judge(self, response: httpx.Response, retry_signal: RetrySignal | None) -> _Done | _Retry:
        status = f"{response.status_code} {response.reason_phrase}".strip()
        where = describe_url(str(response.request.url))
        if response.status_code in _UNAUTHORISED:
            raise ConnectorError(
                f"GET {where}: {status}: unauthorised; check the token and its scopes"
            )
        if response.status_code == 429 or response.status_code >= 500:
            # 503 may carry Retry-After too; without one the backoff decides.
            return _Retry(status, self._retry_after(response))
        if not response.is_success:
            raise ConnectorError(f"GET {where}: {status}")
        try:
            # Bounded: an upstream answer nested thousands deep fails this run, not the stack.
            payload = loads_bounded(response.content, max_depth=UPSTREAM_MAX_DEPTH)
        except JSONTooDeep as exc:
            raise ConnectorError(f"GET {where}: {status} answer refused: {exc}") from None
        except ValueError:
            # Typically an SSO proxy's HTML login page served with 200: retrying will not help.
            kind = response.headers.get("Content-Type", "no content type")
            raise ConnectorError(f"GET {where}: {status} answer is not JSON ({kind})") from None
        reason = retry_signal(payload) if retry_signal else None
        if reason:
            return _Retry(reason, self._retry_after(response))
        return _Done(payload)

    def _retry_after(self, response: httpx.Response) -> float | None:
        seconds = retry_after_seconds(response.headers.get("Retry-After"), now=self._clock())
        return None if seconds is None else min(seconds, self._policy.retry_after_cap_s)

    def _delay(self, attempt: int, outcome: _Retry) -> float:
        if outcome.delay_s is not None:
            return outcome.delay_s
        return full_jitter_delay(
            attempt,
            base_s=self._policy.backoff_base_s,
            cap_s=self._policy.backoff_cap_s,
            rng=self._rng,
        )


class OwnsHttp:
    """Mixin for connectors that may create their HTTP client and must then close it."""

    _http: ResilientHttp
    _owns_http: bool

    def _use_http(self, http: ResilientHttp | None, policy: SourcePolicy | None = None) -> None:
        self._owns_http = http is None
        self._http = http or ResilientHttp(source_policy=policy)

    def close(self) -> None:
        """Release the HTTP client if this connector created it."""
        if self._owns_http:
            self._http.close()
