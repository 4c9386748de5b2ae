"""Milliseconds per step of one search, and the Server-Timing header that reports them.

Each step is also a span (`vera.search.<step>`) through the OpenTelemetry API, a no-op
unless the process set tracing up (vera/tracing.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import trace

_tracer = trace.get_tracer(__name__)


class Stopwatch:
    """Milliseconds per named step of one search (reported in its Server-Timing header)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            with _tracer.start_as_current_span(f"vera.search.{name}"):
                yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000


def server_timing(ms: Mapping[str, float]) -> str:
    """`step;dur=ms, ...`: the steps beside the middleware's whole-request `app` metric."""
    return ", ".join(f"{step};dur={duration:.1f}" for step, duration in ms.items())
