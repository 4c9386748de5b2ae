"""The portal's search box: the same service as the REST API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET
from rest_framework.exceptions import ValidationError

from curation.models import Claim
from retrieval import bootstrap
from retrieval.api.views import parse_query
from retrieval.services.search import search
from tenants.middleware import request_principal
from tenants.web.views import htmx_partial


@login_required
@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    """Ranked, cited hits for the signed-in user's scopes; errors are shown, not raised."""
    context: dict[str, object] = {"q": request.GET.get("q", "")}
    if context["q"]:
        try:
            query = parse_query({k: v for k, v in request.GET.items() if v})
        except ValidationError as error:
            details = error.detail.values() if isinstance(error.detail, dict) else [error.detail]
            context["error"] = "; ".join(
                "; ".join(map(str, d)) if isinstance(d, list) else str(d) for d in details
            )
        else:
            providers = bootstrap.providers()
            result = search(
                query=query, embedder=providers.embedder(), weights=providers.weights(),
                now=timezone.now(), user_id=request_principal(request).user_id,
                reranking=providers.reranking(),
            )  # fmt: skip
            claims = Claim.objects.select_related("subject", "source").in_bulk(
                [hit.claim_id for hit in result.hits]
            )
            context["hits"] = [(hit, claims[hit.claim_id]) for hit in result.hits]
    template = "retrieval/search.html#results" if htmx_partial(request) else "retrieval/search.html"
    return render(request, template, context)
