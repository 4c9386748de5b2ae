"""Tracing is off without OTEL_EXPORTER_OTLP_ENDPOINT: no provider, no instrumentation.

(The exported traces themselves: tests/integration/test_tracing.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from opentelemetry import trace
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor

from tests.support.workers import ROOT
from vera.tracing import ENDPOINT_ENV, setup_tracing

# What a process does at start, then the modules it imported of the trace SDK, the
# exporters and the instrumentations. (redis-py imports the SDK's metrics module on its
# own when the SDK is installed; it installs nothing.)
TRACING = ("opentelemetry.sdk.trace", "opentelemetry.exporter", "opentelemetry.instrumentation")
PROBE = f"""
import sys
import django
django.setup()
from vera.tracing import setup_tracing
setup_tracing("vera-probe")
import curation.tasks, common.guarded, retrieval.services.search.pipeline
print(sorted(m for m in sys.modules if m.startswith({TRACING!r})))
"""


def test_nothing_is_installed_when_no_endpoint_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    assert setup_tracing("vera-test") is None
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    instrumentors = (DjangoInstrumentor, PsycopgInstrumentor, CeleryInstrumentor, RedisInstrumentor)
    assert not any(each().is_instrumented_by_opentelemetry for each in instrumentors)
    assert not any("opentelemetry" in middleware for middleware in settings.MIDDLEWARE)


def test_a_process_without_an_endpoint_never_imports_the_trace_sdk() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "vera.settings.test"}
    env.pop(ENDPOINT_ENV, None)
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "[]"
