"""Project-wide middleware."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "Server-Timing"


class ServerTimingMiddleware:
    """Adds `Server-Timing: app;dur=<ms>` to every response: the time the Django stack took.

    First in MIDDLEWARE, so the figure covers every other middleware, the RLS
    transaction and the view; it stops when the response object is returned, so
    a streamed body's remaining chunks are not counted.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        metric = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        # A metric set further in (a view, a proxy's library) is kept beside ours.
        existing = response.get(HEADER)
        response[HEADER] = f"{existing}, {metric}" if existing else metric
        return response
