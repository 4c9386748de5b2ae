"""The Quality page: a workspace's golden-set scores and blend weights over time.

Reviewers and admins of a workspace see it; only its admins switch weights or run an
evaluation, and every write is the use case's (`weight_set_activate`,
`weights_reset_default`, `evaluation_run`) with its own message shown verbatim.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from common.errors import PermissionDenied
from common.htmx import htmx_partial
from retrieval import selectors, usecases
from retrieval.domain.evaluation import Floors
from retrieval.models import EvaluationRun, WeightSet, WordSuggestion
from retrieval.usecases import NeedsConfirmation, RunInProgress, SuggestionDecided
from retrieval.web import charts
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.principals import request_principal

RANGES = {"30": "last 30 days", "90": "last 90 days", "365": "last year", "all": "all"}
DEFAULT_RANGE = "90"
EMPTY_RANGE = dt.timedelta(days=30)  # the axis of "all" before anything was recorded
WORST = 10


def _workspace(request: HttpRequest, principal: Principal) -> tuple[Scope, list[Scope]]:
    """The workspace asked for (?group=, or the form's `group`) and all the user may see.

    RLS already hides other tenants' rows; this decides who may look at all.
    """
    workspaces = selectors.workspaces_reviewable(principal)
    wanted = request.POST.get("group") or request.GET.get("group")
    if not wanted and workspaces:
        return workspaces[0], workspaces
    chosen = next((w for w in workspaces if w.group_id == wanted), None)
    if chosen is None:
        raise DjangoPermissionDenied("The Quality page needs the reviewer role in the workspace.")
    return chosen, workspaces


def _range(request: HttpRequest) -> str:
    key = request.GET.get("range", DEFAULT_RANGE)
    return key if key in RANGES else DEFAULT_RANGE


def _charts_context(group_id: str, range_key: str, now: dt.datetime) -> dict[str, object]:
    days = None if range_key == "all" else int(range_key)
    since = now - dt.timedelta(days=days) if days else None
    points = selectors.evaluation_points(group_id=group_id, since=since)
    steps = selectors.weights_timeline(group_id=group_id, since=since)
    recorded = [p.at for p in points] + [s.at for s in steps if s.at is not None]
    start = since or min(recorded, default=now - EMPTY_RANGE)
    tz = timezone.get_current_timezone()
    return {
        "range": range_key,
        "ranges": RANGES,
        "points": points,
        "scores_svg": charts.scores_chart(points, start=start, end=now, tz=tz) if points else "",
        "weights_svg": charts.weights_chart(steps, start=start, end=now, tz=tz),
        "activations": [s for s in steps if s.at is not None and s.at >= start],
    }


def _page_context(request: HttpRequest, **extra: object) -> dict[str, object]:
    principal = request_principal(request)
    workspace, workspaces = _workspace(request, principal)
    group_id = workspace.group_id
    run, worst = selectors.evaluation_worst_queries(group_id=group_id, limit=WORST)
    weight_sets = selectors.weight_sets_evaluated(group_id=group_id)
    return {
        "workspace": workspace,
        "workspaces": workspaces,
        "can_admin": principal.can(Role.ADMIN, group_id),
        "latest_run": run,
        "worst": worst,
        "weight_sets": weight_sets,
        "active_version": next(row.version for row in weight_sets if row.active),
        "question_words": WordSuggestion.objects.filter(
            group_id=group_id, status=WordSuggestion.Status.PENDING
        ).order_by("-support", "word")[:100],
        **_charts_context(group_id, _range(request), timezone.now()),
        **extra,
    }


@login_required
@require_GET
def quality_page(request: HttpRequest) -> HttpResponse:
    """Charts, worst queries and weight sets of one workspace; HTMX gets just the charts."""
    if htmx_partial(request):
        workspace, _ = _workspace(request, request_principal(request))
        context = _charts_context(workspace.group_id, _range(request), timezone.now())
        return render(request, "retrieval/quality.html#charts", {"workspace": workspace, **context})
    return render(request, "retrieval/quality.html", _page_context(request))


def _back(group_id: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(f"{reverse('search:quality')}?{urlencode({'group': group_id})}")


@login_required
@require_POST
def weights_activate(request: HttpRequest, weight_set_id: int) -> HttpResponse:
    """Activate (or roll back to) a weight set; a doubt is shown with a Confirm button."""
    principal = request_principal(request)
    workspace, _ = _workspace(request, principal)
    reason = request.POST.get("reason", "")
    try:
        activation = usecases.weight_set_activate(
            actor=principal, weight_set_id=weight_set_id, reason=reason,
            confirm=request.POST.get("confirm") == "1",
        )  # fmt: skip
    except WeightSet.DoesNotExist:
        raise Http404("No such weight set.") from None
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except NeedsConfirmation as doubt:
        confirm = {"reason": str(doubt), "weight_set_id": weight_set_id, "note": reason}
        return render(request, "retrieval/quality.html", _page_context(request, confirm=confirm))
    messages.success(request, activation.message)
    return _back(workspace.group_id)


@login_required
@require_POST
def weights_reset(request: HttpRequest) -> HttpResponse:
    """Go back to the built-in default weights (v0)."""
    principal = request_principal(request)
    workspace, _ = _workspace(request, principal)
    try:
        message = usecases.weights_reset_default(
            actor=principal, group_id=workspace.group_id, reason=request.POST.get("reason", "")
        )
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    messages.success(request, message)
    return _back(workspace.group_id)


@login_required
@require_POST
def quality_evaluate(request: HttpRequest) -> HttpResponse:
    """Run the golden set now, with one weight set (or what ranks now), and say how it went."""
    principal = request_principal(request)
    workspace, _ = _workspace(request, principal)
    if not principal.can(Role.ADMIN, workspace.group_id):
        raise DjangoPermissionDenied("evaluating from the portal needs the admin role")
    raw_id = request.POST.get("weight_set", "")
    try:
        run = usecases.evaluation_run(
            actor=principal, group_id=workspace.group_id, now=timezone.now(),
            trigger="portal", floors=Floors.parse(settings.VERA_LEARNING__FLOORS),
            weight_set_id=int(raw_id) if raw_id.isdigit() else None,
        )  # fmt: skip
    except WeightSet.DoesNotExist:
        raise Http404("No such weight set in this workspace.") from None
    except RunInProgress as error:
        messages.warning(request, str(error))
    else:
        passed = run.status == EvaluationRun.Status.PASSED
        level = messages.success if passed else messages.warning
        level(request, f"Evaluation of v{run.weight_version}: {run.status}. {run.message}")
    return _back(workspace.group_id)


@login_required
@require_POST
def question_word_decide(request: HttpRequest, pk: int, decision: str) -> HttpResponse:
    """Accept or dismiss a question word learnt from votes (the workspace's admins)."""
    principal = request_principal(request)
    workspace, _ = _workspace(request, principal)
    decisions = {
        "accept": usecases.word_suggestion_accept,
        "dismiss": usecases.word_suggestion_dismiss,
    }
    decide = decisions.get(decision)
    if decide is None:
        raise Http404("No such decision.")
    try:
        row = decide(actor=principal, group_id=workspace.group_id, pk=pk)
    except WordSuggestion.DoesNotExist:
        raise Http404("No such question word in this workspace.") from None
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except (SuggestionDecided, ValueError) as error:
        messages.warning(request, str(error))
    else:
        messages.success(request, f"{row.word!r} {row.status} for {row.predicate}.")
    return _back(workspace.group_id)
