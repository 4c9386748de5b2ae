"""The portal's search box: parsing, narrowing, search and hydration as the REST API's."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from common.htmx import htmx_partial
from retrieval import usecases
from retrieval.domain.query import InvalidQuery, Query, parse_query
from retrieval.models import Snapshot
from retrieval.selectors import CitedResult
from retrieval.usecases import SnapshotRefused
from tenants import selectors as tenant_selectors
from tenants.domain.access import Principal
from tenants.domain.scopes import ScopeKind
from tenants.models import Scope
from tenants.principals import request_principal

NO_SUCH_SCOPE = "no such scope among those you can read"


@login_required
@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    """Ranked, cited hits for the signed-in user's scopes, or the one scope chosen (and
    what is under it); a bad query or a scope out of reach shows its messages.

    With a sealed snapshot chosen, the hits are the snapshot's (as it answered when
    sealed); one that cannot be searched says why.
    """
    principal = request_principal(request)
    readable = _readable_scopes(principal)
    sealed = Snapshot.objects.filter(status=Snapshot.Status.SEALED).order_by("-created_at")
    context: dict[str, object] = {
        "q": request.GET.get("q", ""),
        "snapshot": request.GET.get("snapshot", ""),
        "snapshots": list(sealed[:50]),
        "scope": request.GET.get("scope", ""),
        "scopes": [_option(scope, principal) for scope in readable],
    }
    if context["q"]:
        try:
            # The form's blank fields mean "not given".
            query = parse_query({k: v for k, v in request.GET.dict().items() if v})
        except InvalidQuery as error:
            context["errors"] = error.errors
        else:
            context.update(_narrowed_results(query, principal, readable))
    template = "retrieval/search.html#results" if htmx_partial(request) else "retrieval/search.html"
    return render(request, template, context)


def _readable_scopes(principal: Principal) -> list[Scope]:
    """The scopes the person searches without a choice: those they hold a role in, then
    those above whose published knowledge they read (the scope registry is not under
    row-level security; only group ids the principal already reads are looked up)."""
    reached = list(tenant_selectors.scopes_reached(principal))
    if not principal.reads:
        return reached
    above = Scope.objects.filter(group_id__in=sorted(principal.reads)).order_by("kind", "name")
    return reached + list(above)


def _option(scope: Scope, principal: Principal) -> dict[str, object]:
    """One entry of the scope selector: the scope, its kind, and whether only its
    published knowledge is read (a scope above the person's own)."""
    return {
        "scope": scope,
        "kind": ScopeKind(scope.kind).name.lower(),
        "published_only": scope.group_id in principal.reads,
    }


def _narrowed_results(
    query: Query, principal: Principal, readable: list[Scope]
) -> dict[str, object]:
    """The search use case's results (narrowed to the scope the query names, live or of
    the snapshot it names, as REST and MCP search) with what was searched; a scope the
    person has no role in, or a snapshot that cannot be searched, is a message, never
    data."""
    try:
        searched = usecases.search(principal, query)
    except usecases.ScopeNotVisible:
        return {"errors": {"scope": NO_SUCH_SCOPE}}
    except Snapshot.DoesNotExist:
        return {"errors": {"snapshot": "No such snapshot."}}
    except SnapshotRefused as error:
        return {"errors": {"snapshot": str(error)}}
    return _described(searched, query, readable)


def _described(
    searched: usecases.Searched, query: Query, readable: list[Scope]
) -> dict[str, object]:
    """The results with the names of the scopes searched (those the narrowed principal
    reads), the snapshot searched if any, and, when there were several scopes, the scope
    of each hit."""
    within = searched.within
    groups = within.group_ids | within.reads
    scopes = [scope for scope in readable if scope.group_id in groups]
    names = {scope.group_id: scope.name for scope in readable}
    return {
        "result": searched.result,
        "searched": searched.snapshot,
        "searched_names": [scope.name for scope in scopes],
        "chosen_name": names.get(query.scope, query.scope) if query.scope else "",
        "hits": _hit_rows(searched.result, names, labelled=len(scopes) > 1),
    }


def _hit_rows(
    result: CitedResult, names: dict[str, str], *, labelled: bool
) -> list[dict[str, object]]:
    """Each hit with the name of the scope it belongs to when several were searched
    (a scope the page did not list is looked up once for all such hits)."""
    if not labelled:
        return [{"hit": hit, "scope_name": ""} for hit in result.hits]
    unlisted = {hit.group_id for hit in result.hits} - names.keys()
    named = {**names, **_scope_names(unlisted)}
    return [
        {"hit": hit, "scope_name": named.get(hit.group_id, hit.group_id)} for hit in result.hits
    ]


def _scope_names(group_ids: Iterable[str]) -> dict[str, str]:
    """The names of these scopes, in one query (none when there are none to name)."""
    wanted = sorted(set(group_ids) - {""})
    if not wanted:
        return {}
    return dict(Scope.objects.filter(group_id__in=wanted).values_list("group_id", "name"))
