"""OpenTelemetry tracing: exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set.

Unset, nothing is installed: no provider, no instrumentation, and the SDK is not even
imported, so the spans the code opens through the OpenTelemetry API are the API's
no-ops. Each process sets itself up after it forked (gunicorn's `post_fork`, Celery's
`worker_process_init`, `manage.py`), never at import: the exporter's thread and
sockets must belong to the process that uses them.

The standard OTEL_* variables configure the rest (OTEL_EXPORTER_OTLP_HEADERS,
OTEL_BSP_SCHEDULE_DELAY, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES ...).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SDK is imported only when tracing is on
    from opentelemetry.sdk.trace import TracerProvider

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"

# The provider this process installed, by pid: a forked child inherits the module's
# state, but not the parent's exporter thread, and sets itself up again.
_installed: dict[int, TracerProvider] = {}


def setup_tracing(service_name: str) -> TracerProvider | None:
    """Install this process's tracer provider and instrumentations; None when tracing is off.

    Idempotent per process. Django must be configurable (DJANGO_SETTINGS_MODULE set) and
    not yet serving: its instrumentation adds a middleware to `settings.MIDDLEWARE`.
    """
    if not os.environ.get(ENDPOINT_ENV):
        return None
    pid = os.getpid()
    if pid in _installed:
        return _installed[pid]
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    # Batched off the request path; the exporter reads the endpoint (plus /v1/traces),
    # headers and timeout from the OTEL_EXPORTER_OTLP_* variables.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    for instrumentor in (
        DjangoInstrumentor(),
        PsycopgInstrumentor(),
        CeleryInstrumentor(),
        RedisInstrumentor(),
    ):
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=provider)
    _installed[pid] = provider
    return provider
