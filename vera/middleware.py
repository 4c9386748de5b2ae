"""Project-wide middleware."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from kernel import timing

from . import metrics

HEADER = "Server-Timing"
# Any other method a client sends is one label value, so it cannot grow the label set.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_of(request: HttpRequest) -> str:
    """The URL pattern that served the request ("api/v1/claims/<int:pk>/retract"), never
    the path itself: the label set stays as small as the URLconf, whatever clients ask."""
    match = request.resolver_match
    if match is None:
        return "unmatched"
    return match.route or match.view_name


class ServerTimingMiddleware:
    """Adds `Server-Timing: app;dur=<ms>` to every response: the time the Django stack took,
    also observed as `vera_http_request_duration_seconds` per route, method and status.

    First in MIDDLEWARE, so the figure covers every other middleware, the RLS
    transaction and the view; it stops when the response object is returned, so
    a streamed body's remaining chunks are not counted.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = timing.mark_started(request)
        response = self.get_response(request)
        finished = time.perf_counter()
        elapsed = finished - started
        metric = f"app;dur={elapsed * 1000:.1f}"
        for step, ms in timing.after_view(request, finished).items():
            metric += f", {step};dur={ms:.1f}"
        # A metric set further in (a view, a proxy's library) is kept beside ours.
        existing = response.get(HEADER)
        response[HEADER] = f"{existing}, {metric}" if existing else metric
        method = request.method if request.method in METHODS else "other"
        metrics.HTTP_REQUEST_DURATION.labels(
            route=route_of(request), method=method, status=str(response.status_code)
        ).observe(elapsed)
        return response
