"""Tracing: a real OTLP/HTTP receiver gets the traces of a web process and a worker.

gunicorn (its config's `post_fork` sets tracing up) and a Celery worker (its
`worker_process_init` does) run as their own processes with OTEL_EXPORTER_OTLP_ENDPOINT
pointing at a small receiver in this process, which decodes what they export. The test
process itself never installs a provider, so no other test is traced.

A search writes only its hit log: it causes no outbox job. The job comes from the
request that does cause one, a retraction of a hit the search returned (a decision on
the interactive lane); its worker span links back to that request.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto

from tenants.domain.scopes import Role
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant
from tests.support.web import gunicorn
from tests.support.workers import celery_worker
from vera.celery import app

DOCS = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}
URGENT_RUN = "run/curation.process_urgent_outbox"  # the Celery instrumentation's name
SEARCH_STEPS = {"vera.search.lexical", "vera.search.vector", "vera.search.blend", "vera.search.log"}


@dataclass(frozen=True)
class Span:
    """One received span, reduced to what the assertions read."""

    service: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    attributes: dict[str, object]
    links: tuple[tuple[str, str], ...]  # (trace id, span id) of each linked span


def _value(any_value: object) -> object:
    which = any_value.WhichOneof("value")
    if which == "array_value":
        return [_value(each) for each in any_value.array_value.values]
    return getattr(any_value, which) if which else None


def _spans(request: ExportTraceServiceRequest) -> list[Span]:
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    Span(
                        service=str(resource.get("service.name")),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        name=span.name,
                        kind=span.kind,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        links=tuple((ln.trace_id.hex(), ln.span_id.hex()) for ln in span.links),
                    )
                )
    return spans


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver: POST /v1/traces with a protobuf body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ReceiverHandler)
        self.spans: list[Span] = []
        self.changed = threading.Condition()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def wait_for(self, found: Callable[[list[Span]], bool], *, timeout: float = 60) -> list[Span]:
        """The spans received so far, once `found` holds for them (fails after `timeout`)."""
        with self.changed:
            if not self.changed.wait_for(lambda: found(self.spans), timeout=timeout):
                names = sorted({(s.service, s.name) for s in self.spans})
                pytest.fail(f"the expected spans did not arrive; received {names}")
            return list(self.spans)


class _ReceiverHandler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        received = ExportTraceServiceRequest()
        received.ParseFromString(body)
        with self.server.changed:
            self.server.spans += _spans(received)
            self.server.changed.notify_all()
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the exporters post every 100 ms."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _tracing_env(receiver: Receiver) -> dict[str, str]:
    # Export every 100 ms (the default batches for 5 s), so the test waits for spans briefly.
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}


def _call(url: str, key: str, *, data: dict[str, str] | None = None) -> dict[str, object]:
    request = urllib.request.Request(  # noqa: S310 - loopback
        url,
        data=json.dumps(data).encode() if data is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        answer: dict[str, object] = json.loads(response.read())
        return answer


def _server_span(spans: list[Span], route: str) -> Span | None:
    """The Django server span of the request to `route` (SPAN_KIND_SERVER)."""
    return next(
        (s for s in spans if s.kind == SpanProto.SPAN_KIND_SERVER and route in s.name), None
    )


def _retraction(spans: list[Span]) -> Span | None:
    """The retraction's server span, once a worker's outbox span links to it."""
    retract = _server_span(spans, "retract")
    linked = {link for s in spans if s.name.startswith("vera.outbox.") for link in s.links}
    return retract if retract and (retract.trace_id, retract.span_id) in linked else None


def _purge(queue: str) -> None:
    """Drop messages other runs left in the queue (the test broker is shared)."""
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(queue)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_search_and_the_outbox_job_its_hit_caused_reach_an_otlp_receiver(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str, receiver: Receiver
) -> None:
    ingest_markdown(tenant_a, tmp_path / "docs", DOCS)
    key = tenant_a.issue_key(owner=tenant_a.reviewer, role=Role.REVIEWER).plaintext
    traced = _tracing_env(receiver)
    _purge("interactive")
    with (
        gunicorn(database_url=app_database_url, log=tmp_path / "web.log", extra_env=traced) as url,
        celery_worker(database_url=app_database_url, log_path=tmp_path / "worker.log",
                      queue="interactive", extra_env=traced),
    ):  # fmt: skip
        found = _call(f"{url}/api/v1/search?q=billing-api&k=3", key)
        claim_id = found["hits"][0]["claim_id"]
        _call(f"{url}/api/v1/claims/{claim_id}/retract", key, data={"reason": "wrong document"})

        def complete(spans: list[Span]) -> bool:
            # The Celery span ends (and is exported) after the job spans inside it.
            names = {s.name for s in spans}
            return {"GET api/v1/search", URGENT_RUN} <= names and _retraction(spans) is not None

        spans = receiver.wait_for(complete)

    search = _server_span(spans, "search")
    assert search is not None
    in_search = [s for s in spans if s.trace_id == search.trace_id]
    assert search.service == "vera-web"
    assert tenant_a.workspace.group_id in search.attributes["vera.group_ids"]
    assert any(s.attributes.get("db.system.name", s.attributes.get("db.system")) == "postgresql"
               for s in in_search), "no psycopg span in the search's trace"  # fmt: skip
    assert {s.name for s in in_search} >= SEARCH_STEPS

    retract = _retraction(spans)
    assert retract is not None
    job = next(s for s in spans if s.name.startswith("vera.outbox.") and s.links)
    assert job.service == "vera-worker"
    # The job row kept the retraction's trace context: its span links to the request.
    assert (retract.trace_id, retract.span_id) in job.links
    assert job.attributes["vera.outbox.consumer"] in {"index", "graph"}
    # The wake-up the retraction sent carries its trace too: the worker's Celery span of
    # it is in the request's trace, and the job's span is inside that Celery span.
    celery_run = next(s for s in spans if s.name == URGENT_RUN)
    assert celery_run.service == "vera-worker"
    assert celery_run.trace_id == retract.trace_id
    assert job.trace_id == celery_run.trace_id


@pytest.mark.django_db(transaction=True)
def test_beat_traces_the_tasks_it_sends(
    tmp_path: Path, app_database_url: str, receiver: Receiver, settings: Any
) -> None:
    # A broker database of its own: what beat sends here must reach no test's worker.
    broker = re.sub(r"(/\d+)?$", "/9", settings.CELERY_BROKER_URL, count=1)
    env = {**os.environ, **_tracing_env(receiver), "DATABASE_URL": app_database_url,
           "CELERY_BROKER_URL": broker, "CELERY_RESULT_BACKEND": broker}  # fmt: skip
    env.pop("DATABASE_OWNER_URL", None)
    with (tmp_path / "beat.log").open("wb") as log:
        beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "vera", "beat", "-l", "info",
             "-s", str(tmp_path / "schedule")],
            cwd=Path(__file__).resolve().parents[2], env=env, stdout=log, stderr=log,
        )  # fmt: skip
    try:
        # The outbox sweeps are due every 10 s: beat's first sends come within that.
        spans = receiver.wait_for(
            lambda spans: any(s.name == "apply_async/curation.process_outbox" for s in spans),
            timeout=60,
        )
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        redis.Redis.from_url(broker).flushdb()

    sent = next(s for s in spans if s.name == "apply_async/curation.process_outbox")
    assert sent.service == "vera-beat"
    assert sent.kind == SpanProto.SPAN_KIND_PRODUCER
    assert sent.attributes.get("celery.action") == "apply_async"
