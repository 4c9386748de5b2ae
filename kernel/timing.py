"""Where a request's time went outside the steps a view measures (stdlib only).

The Server-Timing middleware marks when the request reached it; a view that reports
its own steps reads how long the way in took ("pre": the other middleware,
authentication, the tenant's transaction, throttling) and marks its return, after
which the middleware reports the way out ("post": rendering the response, the
middleware unwinding, the transaction's commit).
"""

from __future__ import annotations

import time

_STARTED = "_vera_started"
_VIEW_DONE = "_vera_view_done"


def mark_started(request: object) -> float:
    """The request reached the timing middleware (its first); when, on perf_counter."""
    started = time.perf_counter()
    setattr(request, _STARTED, started)
    return started


def started_at(request: object) -> float | None:
    return getattr(request, _STARTED, None)


def before_view(request: object, entered: float) -> dict[str, float]:
    """{"pre": ms} from the middleware to the view's first line; {} without the mark."""
    started = started_at(request)
    return {} if started is None else {"pre": (entered - started) * 1000}


def view_done(request: object) -> None:
    """Mark the view's return: what follows is reported as "post"."""
    setattr(request, _VIEW_DONE, time.perf_counter())


def after_view(request: object, finished: float) -> dict[str, float]:
    """{"post": ms} from the view's return to `finished`; {} when no view marked it."""
    done = getattr(request, _VIEW_DONE, None)
    return {} if done is None else {"post": (finished - done) * 1000}
