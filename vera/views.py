"""Project-level views: the health and metrics endpoints, and the landing page."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from tenants.middleware import tenant_exempt

from . import metrics as exported
from .health import check_all, check_dead_letters, check_lanes, check_replicas, verdict


@tenant_exempt  # must answer 503, not 500, when Postgres is down
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """503 naming Postgres when it does not answer (the node cannot do its job: take it
    out); "degraded" (200, each reason named) when Redis, the graph or the object store
    does not, an outbox lane passes its threshold (the service works, late) or a read
    replica is down or lags past its bound (reads go to the primary); else "ok"."""
    checks = check_all()
    failing, degraded = verdict(checks)
    lanes = check_lanes() if checks["postgres"]["ok"] else {}
    degraded += [str(lane["reason"]) for lane in lanes.values() if lane["degraded"]]
    standbys, standby_reasons = check_replicas() if checks["postgres"]["ok"] else ([], [])
    degraded += standby_reasons
    status = "fail" if failing else "degraded" if degraded else "ok"
    body = {"status": status, "failing": failing, "degraded": degraded, "checks": checks,
            "lanes": lanes, "replicas": standbys}  # fmt: skip
    return JsonResponse(body, status=503 if failing else 200)


@tenant_exempt  # reads no tenant data; the outbox figures are counts over every group
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The metrics in the Prometheus text format, for `Bearer VERA_METRICS__TOKEN`: every
    process's that shares PROMETHEUS_MULTIPROC_DIR (gunicorn and Celery workers, beat,
    the MCP server), merged (vera/metrics.py). Off (404) without a token.

    The outbox gauges (lanes, dead letters) are measured afresh for each scrape.
    """
    token = settings.VERA_METRICS__TOKEN
    offered = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not token:
        raise Http404
    if not hmac.compare_digest(offered.encode(), token.encode()):
        return HttpResponse(status=401, headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    check_lanes()
    check_dead_letters()
    return HttpResponse(exported.exposition(), content_type=CONTENT_TYPE_LATEST)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The signed-in landing page."""
    return render(request, "home.html")
