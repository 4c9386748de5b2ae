"""The portal's search box: the same parsing, search and hydration as the REST API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from common.htmx import htmx_partial
from retrieval import selectors, usecases
from retrieval.domain.query import InvalidQuery, Query, parse_query
from retrieval.models import Snapshot
from retrieval.services.snapshots import SnapshotRefused
from tenants.principals import request_principal


@login_required
@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    """Ranked, cited hits for the signed-in user's scopes; a bad query shows its messages.

    With a sealed snapshot chosen, the hits are the snapshot's (as it answered when
    sealed); one that cannot be searched says why.
    """
    sealed = Snapshot.objects.filter(status=Snapshot.Status.SEALED).order_by("-created_at")
    context: dict[str, object] = {
        "q": request.GET.get("q", ""),
        "snapshot": request.GET.get("snapshot", ""),
        "snapshots": list(sealed[:50]),
    }
    if context["q"]:
        try:
            # The form's blank fields mean "not given".
            query = parse_query({k: v for k, v in request.GET.dict().items() if v})
        except InvalidQuery as error:
            context["errors"] = error.errors
        else:
            if query.snapshot is not None:
                context.update(_snapshot_results(query))
            else:
                user_id = request_principal(request).user_id
                result = usecases.search(query=query, now=timezone.now(), user_id=user_id)
                context["result"] = selectors.search_result_cited(result=result)
    template = "retrieval/search.html#results" if htmx_partial(request) else "retrieval/search.html"
    return render(request, template, context)


def _snapshot_results(query: Query) -> dict[str, object]:
    """The snapshot's cited hits, or the reason it cannot be searched."""
    try:
        snapshot, cited = usecases.snapshot_search(query)
    except Snapshot.DoesNotExist:
        return {"errors": {"snapshot": "No such snapshot."}}
    except SnapshotRefused as error:
        return {"errors": {"snapshot": str(error)}}
    return {"result": cited, "searched": snapshot}
