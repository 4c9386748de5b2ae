"""The portal's search box: the same parsing, search and hydration as the REST API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from retrieval import bootstrap, selectors
from retrieval.domain.query import InvalidQuery, parse_query
from tenants.middleware import request_principal
from tenants.web.views import htmx_partial


@login_required
@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    """Ranked, cited hits for the signed-in user's scopes; a bad query shows its messages."""
    context: dict[str, object] = {"q": request.GET.get("q", "")}
    if context["q"]:
        try:
            # The form's blank fields mean "not given".
            query = parse_query({k: v for k, v in request.GET.dict().items() if v})
        except InvalidQuery as error:
            context["errors"] = error.errors
        else:
            user_id = request_principal(request).user_id
            result = bootstrap.search()(query=query, now=timezone.now(), user_id=user_id)
            context["result"] = selectors.search_result_cited(result=result)
    template = "retrieval/search.html#results" if htmx_partial(request) else "retrieval/search.html"
    return render(request, template, context)
