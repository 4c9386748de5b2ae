"""Fake Confluence Cloud, Jira and Slack APIs on 127.0.0.1 for connector tests (plain module).

A real `ThreadingHTTPServer` in a daemon thread answers the three search endpoints the
connectors call, with payloads shaped like the real APIs, from lists the test fills
(`confluence_pages`, `jira_issues`, `slack_messages`). `fail_next()` scripts faults that
the next requests get, in order, whatever endpoint they hit; `requests` records every
request (path, query, headers) so tests can assert paging parameters and credentials.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from curation.adapters.connectors.http import ResilientHttp, RetryPolicy
from curation.domain.records import FetchPage, RecordFailure, SourceRecord

TOKEN = "t0ken-SECRET-4242"
CONFLUENCE_SEARCH = "/wiki/rest/api/content/search"
JIRA_SEARCH = "/rest/api/2/search"
SLACK_HISTORY = "/api/conversations.history"
ECHO = "/echo"  # answers {"ok": true}: for tests of the HTTP helper alone


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour for the next request; `body=None` answers normally late."""

    status: int = 500
    body: bytes | None = b'{"message": "Internal Server Error"}'
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls(status=status)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "1") -> Fault:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(status=429, body=b'{"message": "Too Many Requests"}', headers=headers)

    @classmethod
    def unauthorised(cls) -> Fault:
        return cls(status=401, body=b'{"message": "Unauthorized"}')

    @classmethod
    def malformed_json(cls) -> Fault:
        return cls(status=200, body=b'{"results": [', headers={"Content-Type": "application/json"})

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        return cls(status=200, body=None, delay_s=seconds)

    @classmethod
    def slack_error(cls, error: str, *, retry_after: str | None = None) -> Fault:
        body = json.dumps({"ok": False, "error": error}).encode()
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(status=200, body=body, headers=headers)


@dataclass(frozen=True)
class RecordedRequest:
    """What the fake saw of one request."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]  # lower-case names


def fetched(pages: Iterable[FetchPage]) -> list[SourceRecord | RecordFailure]:
    """Every item (record or failure) of a connector's pages, in order."""
    return [item for page in pages for item in page.items]


def fetched_ids(pages: Iterable[FetchPage]) -> list[str]:
    """The external ids of every item of a connector's pages, in order."""
    return [item.external_id for item in fetched(pages)]


def quick_http(
    sleep: Callable[[float], None], *, max_attempts: int = 4, read_timeout_s: float = 2.0
) -> ResilientHttp:
    """A ResilientHttp for tests: short timeouts, a recorded sleep, no real waiting."""
    return ResilientHttp(
        connect_timeout_s=1.0,
        read_timeout_s=read_timeout_s,
        policy=RetryPolicy(max_attempts=max_attempts, backoff_base_s=0.01, backoff_cap_s=0.05),
        sleep=sleep,
    )


def confluence_page(
    page_id: str,
    *,
    title: str,
    when: str,
    body: str = "<p>Body</p>",
    space: str = "ENG",
    version: int = 1,
) -> dict[str, Any]:
    """A content search result as Confluence Cloud returns it with body.storage expanded."""
    return {
        "id": page_id,
        "type": "page",
        "status": "current",
        "title": title,
        "space": {"key": space, "name": f"{space} space"},
        "version": {"number": version, "when": when},
        "body": {"storage": {"value": body, "representation": "storage"}},
        "_links": {
            "webui": f"/spaces/{space}/pages/{page_id}",
            "self": f"/rest/api/content/{page_id}",
        },
    }


def jira_issue(key: str, *, summary: str, updated: str, **fields: Any) -> dict[str, Any]:
    """A search result as Jira's REST v2 returns it; extra fields are passed through."""
    project = key.split("-", 1)[0]
    return {
        "id": str(abs(hash(key)) % 100000),
        "key": key,
        "self": f"/rest/api/2/issue/{key}",
        "fields": {
            "summary": summary,
            "updated": updated,
            "project": {"key": project, "name": project.title()},
            **fields,
        },
    }


def slack_message(ts: str, text: str, **extra: Any) -> dict[str, Any]:
    """A conversations.history message."""
    return {"type": "message", "user": "U024BE7LH", "text": text, "ts": ts, **extra}


def _minute(pattern: str, query: str, fmt: str) -> dt.datetime | None:
    found = re.search(pattern, query)
    if found is None:
        return None
    return dt.datetime.strptime(found.group(1), fmt).replace(tzinfo=dt.UTC)


def _when(value: Any) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return dt.datetime.min.replace(tzinfo=dt.UTC)  # malformed items sort first


class FakeUpstreams:
    """The fake server; use as a context manager (or start()/stop())."""

    def __init__(self, *, token: str = TOKEN) -> None:
        self.token = token
        self.confluence_pages: list[Any] = []
        self.confluence_next_prefix = ""  # e.g. "http://elsewhere" for an off-site next link
        self.jira_issues: list[Any] = []
        self.jira_max_results_cap = 1000
        self.slack_messages: dict[str, list[Any]] = {}
        self.requests: list[RecordedRequest] = []
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.upstream = self  # type: ignore[attr-defined]
        # A short poll interval keeps shutdown() (once per test) from costing half a second.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeUpstreams:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeUpstreams:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def fail_next(self, *faults: Fault) -> None:
        """Queue faults: each of the next requests gets one, in order."""
        with self._lock:
            self._faults.extend(faults)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self.requests if request.path == path]

    def take(self, request: RecordedRequest) -> Fault | None:
        with self._lock:
            self.requests.append(request)
            return self._faults.popleft() if self._faults else None

    def answer(self, request: RecordedRequest) -> tuple[int, Any]:
        """The status and JSON body a real service would send."""
        routes: dict[str, Callable[[RecordedRequest], tuple[int, Any]]] = {
            CONFLUENCE_SEARCH: self._confluence,
            JIRA_SEARCH: self._jira,
            SLACK_HISTORY: self._slack,
            ECHO: lambda _: (200, {"ok": True}),
        }
        route = routes.get(request.path)
        if route is None:
            return 404, {"message": f"no route {request.path}"}
        guarded = request.path in {CONFLUENCE_SEARCH, JIRA_SEARCH} or (
            request.path == ECHO and "authorization" in request.headers
        )
        if guarded and not self._authorised(request):
            # Echo the presented credential, as careless servers do: it must not leak further.
            presented = request.headers.get("authorization", "")
            return 401, {"message": f"Unauthorized: {presented}"}
        with self._lock:
            return route(request)

    def _authorised(self, request: RecordedRequest) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.token}"

    def _confluence(self, request: RecordedRequest) -> tuple[int, Any]:
        params = request.params
        cql = params.get("cql", "")
        since = _minute(r'lastmodified >= "([^"]+)"', cql, "%Y/%m/%d %H:%M")
        space = re.search(r'space="([^"]*)"', cql)
        pages = [
            page
            for page in self.confluence_pages
            if (since is None or _when(_version_when(page)) >= since)
            and (space is None or _space_key(page) in (None, space.group(1)))
        ]
        pages.sort(key=lambda page: _when(_version_when(page)))
        start, limit = int(params.get("start", 0)), int(params.get("limit", 25))
        chunk = pages[start : start + limit]
        links: dict[str, str] = {"base": f"{self.base_url}/wiki", "context": "/wiki"}
        if start + limit < len(pages):
            query = urlencode({**params, "start": start + limit})
            links["next"] = f"{self.confluence_next_prefix}/rest/api/content/search?{query}"
        body = {"results": chunk, "start": start, "limit": limit, "size": len(chunk)}
        return 200, {**body, "_links": links}

    def _jira(self, request: RecordedRequest) -> tuple[int, Any]:
        params = request.params
        since = _minute(r'updated >= "([^"]+)"', params.get("jql", ""), "%Y-%m-%d %H:%M")
        issues = [
            issue
            for issue in self.jira_issues
            if since is None or _when(_issue_updated(issue)) >= since
        ]
        issues.sort(key=lambda issue: (_when(_issue_updated(issue)), str(_get(issue, "key"))))
        start = int(params.get("startAt", 0))
        limit = min(int(params.get("maxResults", 50)), self.jira_max_results_cap)
        chunk = issues[start : start + limit]
        return 200, {"startAt": start, "maxResults": limit, "total": len(issues), "issues": chunk}

    def _slack(self, request: RecordedRequest) -> tuple[int, Any]:
        params = request.params
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return 200, {"ok": False, "error": "invalid_auth"}
        channel = params.get("channel", "")
        if channel not in self.slack_messages:
            return 200, {"ok": False, "error": "channel_not_found"}
        oldest = Decimal(params.get("oldest", "0"))
        messages = sorted(
            (m for m in self.slack_messages[channel] if Decimal(_slack_ts(m)) > oldest),
            key=lambda m: Decimal(_slack_ts(m)),
            reverse=True,
        )
        offset = (
            int(base64.b64decode(params["cursor"]).decode().split(":")[1])
            if "cursor" in params
            else 0
        )
        limit = int(params.get("limit", 100))
        chunk = messages[offset : offset + limit]
        more = offset + limit < len(messages)
        next_cursor = (
            base64.b64encode(f"next_ts:{offset + limit}".encode()).decode() if more else ""
        )
        return 200, {
            "ok": True,
            "messages": chunk,
            "has_more": more,
            "pin_count": 0,
            "response_metadata": {"next_cursor": next_cursor},
        }


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _version_when(page: Any) -> Any:
    return _get(_get(page, "version"), "when")


def _space_key(page: Any) -> Any:
    return _get(_get(page, "space"), "key")


def _issue_updated(issue: Any) -> Any:
    return _get(_get(issue, "fields"), "updated")


def _slack_ts(message: Any) -> str:
    ts = _get(message, "ts")
    return ts if isinstance(ts, str) and re.match(r"^\d+\.\d+$", ts) else "9999999999.999999"


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_GET(self) -> None:
        upstream: FakeUpstreams = self.server.upstream  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        request = RecordedRequest(
            path=parts.path,
            params=dict(parse_qsl(parts.query, keep_blank_values=True)),
            headers={name.lower(): value for name, value in self.headers.items()},
        )
        fault = upstream.take(request)
        if fault is not None and fault.delay_s:
            upstream.stopping.wait(fault.delay_s)
        if fault is not None and fault.body is not None:
            self._send(fault.status, fault.body, fault.headers)
            return
        status, payload = upstream.answer(request)
        self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

    def _send(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        try:
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer
