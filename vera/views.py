"""Project-level views: the health endpoint and the landing page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from tenants.middleware import tenant_exempt

from .health import check_all


@tenant_exempt  # must answer 503, not 500, when Postgres is down
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when Postgres, Redis and the graph answer, else 503 naming the failing ones."""
    checks = check_all()
    failing = sorted(name for name, result in checks.items() if not result["ok"])
    body = {"status": "fail" if failing else "ok", "failing": failing, "checks": checks}
    return JsonResponse(body, status=503 if failing else 200)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The signed-in landing page."""
    return render(request, "home.html")
