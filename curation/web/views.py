"""Review queues and claim pages (HTMX partials; full pages without JavaScript)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from common.errors import PermissionDenied
from common.htmx import htmx_partial
from curation import selectors, usecases
from curation.domain.errors import ObjectStoreError
from curation.domain.params import parse_related
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, MergeCandidate
from kernel.params import MAX_ID, InvalidQuery
from tenants.domain.scopes import Role
from tenants.principals import request_principal

PAGE_SIZE = 50
CARDS_PER_PAGE = 10  # a card holds a whole document: its claims and its text
QUEUES = {"claims": ClaimStatus.PENDING_REVIEW, "proposals": ClaimStatus.PROPOSED}
FILTERS = ("source", "predicate", "entity", "tier")


def _queue_context(request: HttpRequest) -> dict[str, object]:
    principal = request_principal(request)
    queue = request.GET.get("queue", "claims")
    filters = {key: request.GET[key] for key in FILTERS if request.GET.get(key)}
    sort = request.GET.get("sort", "oldest")
    number = request.GET.get("page")
    page: Page[MergeCandidate] | Page[Claim] | Page[int]
    cards: list[selectors.DocumentCard] = []
    by_document = queue == "claims" and request.GET.get("group") == "document"
    if queue == "merges":
        page = Paginator(selectors.merge_queue(principal=principal), PAGE_SIZE).get_page(number)
    elif queue == "rechecks":
        rechecks = selectors.recheck_queue(principal=principal, filters=filters, sort=sort)
        page = Paginator(rechecks, PAGE_SIZE).get_page(number)
    elif by_document:
        page, cards = _cards_page(request, filters, sort)
    else:
        status = QUEUES.get(queue, ClaimStatus.PENDING_REVIEW)
        claims = selectors.review_queue(
            principal=principal, status=status, filters=filters, sort=sort
        )
        page = Paginator(claims, PAGE_SIZE).get_page(number)
        page.object_list = selectors.attach_current_values(list(page.object_list))
    return {
        "queue": queue if queue in {*QUEUES, "rechecks", "merges"} else "claims",
        "page": page,
        "filters": filters,
        "sort": sort,
        "counts": selectors.queue_counts(principal),
        "options": selectors.queue_filter_options(principal, queue=queue),
        "can_review": bool(selectors.reviewable_groups(principal)),
        "group": "document" if by_document else "",
        "cards": cards,
    }


def _cards_page(
    request: HttpRequest, filters: dict[str, str], sort: str
) -> tuple[Page[int], list[selectors.DocumentCard]]:
    """A page of the claims queue by document: the documents, then their cards."""
    principal = request_principal(request)
    ids = selectors.review_document_ids(principal=principal, filters=filters, sort=sort)
    page = Paginator(ids, CARDS_PER_PAGE).get_page(request.GET.get("page"))
    cards = usecases.review_documents(
        principal=principal, episode_ids=list(page.object_list), filters=filters
    )
    return page, cards


@login_required
@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    """One queue: filters, sorting, pagination; an HTMX request gets just the list."""
    template = "curation/review.html#queue" if htmx_partial(request) else "curation/review.html"
    return render(request, template, _queue_context(request))


def _decided(
    request: HttpRequest, item_id: int, message: str, *, status: int = 200, colspan: int = 7
) -> HttpResponse:
    """The answer to a decision: the row's new state for HTMX, else back to the queue."""
    if htmx_partial(request):
        principal = request_principal(request)
        context = {"item_id": item_id, "message": message, "conflict": status == 409,
                   "counts": selectors.queue_counts(principal), "colspan": colspan}  # fmt: skip
        return render(request, "curation/review.html#decided", context, status=status)
    (messages.error if status >= 400 else messages.success)(request, message)
    return redirect(request.headers.get("Referer") or "/review/")


def _version(request: HttpRequest) -> int:
    try:
        return int(request.POST["version"])
    except (KeyError, ValueError):
        raise DjangoPermissionDenied("the form is missing the item's version") from None


def _run(request: HttpRequest, claim_id: int, version: int, action: str) -> str:
    """Run one decision and say what happened: a publishing decision's own message
    (published, superseded, or closed as a duplicate), never a guess like "Accepted"."""
    actor, post = request_principal(request), request.POST
    if action in {"approve", "edit"}:
        edit = usecases.Edit(post.get("fact_text", ""), post.get("object_text"))
        return usecases.review_approve(
            actor=actor, claim_id=claim_id, version=version, edit=edit if action == "edit" else None
        ).message
    if action == "accept":
        return usecases.proposal_accept(actor=actor, claim_id=claim_id, version=version).message
    reason = post.get("reason", "")
    if action == "keep":
        usecases.recheck_keep(actor=actor, claim_id=claim_id, version=version)
        return f"Kept #{claim_id}: nothing asks for a re-check of it now."
    if action == "retract":
        done = usecases.recheck_retract(
            actor=actor, claim_id=claim_id, version=version, reason=reason
        )
        return done.message
    if action == "reject":
        usecases.review_reject(actor=actor, claim_id=claim_id, version=version, reason=reason)
        return "Rejected"
    usecases.proposal_decline(actor=actor, claim_id=claim_id, version=version, reason=reason)
    return "Declined"


def _decide(request: HttpRequest, claim_id: int, action: str) -> HttpResponse:
    if any("\x00" in value for value in request.POST.values()):
        return _decided(request, claim_id, "Text may not contain NUL characters.", status=400)
    version = _version(request)
    try:
        message = _run(request, claim_id, version, action)
    except Claim.DoesNotExist:
        raise Http404("No such claim.") from None
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except usecases.Conflict as conflict:
        return _decided(request, claim_id, str(conflict), status=409)
    except (ValueError, usecases.RetractionRefused) as error:  # no reason given
        return _decided(request, claim_id, str(error), status=400)
    return _decided(request, claim_id, message)


@login_required
@require_POST
def claim_decide(request: HttpRequest, claim_id: int, action: str) -> HttpResponse:
    """approve | reject | edit (then approve) a tier-3 claim."""
    if action not in {"approve", "reject", "edit"}:
        raise Http404
    return _decide(request, claim_id, action)


@login_required
@require_POST
def proposal_decide(request: HttpRequest, claim_id: int, action: str) -> HttpResponse:
    """accept | decline a tier-4 proposal."""
    if action not in {"accept", "decline"}:
        raise Http404
    return _decide(request, claim_id, action)


@login_required
@require_POST
def recheck_decide(request: HttpRequest, claim_id: int, action: str) -> HttpResponse:
    """keep | retract a reviewed claim that reprocessing no longer found in its document."""
    if action not in {"keep", "retract"}:
        raise Http404
    return _decide(request, claim_id, action)


@login_required
@require_POST
def merge_decide(request: HttpRequest, candidate_id: int, action: str) -> HttpResponse:
    """merge | keep-apart two entities."""
    if action not in {"merge", "keep-apart"}:
        raise Http404
    try:
        usecases.candidate_decide(
            actor=request_principal(request), candidate_id=candidate_id, merge=action == "merge"
        )
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except ValueError as error:
        return _decided(request, candidate_id, str(error), status=409, colspan=4)
    return _decided(
        request, candidate_id, "Merged" if action == "merge" else "Kept apart", colspan=4
    )


def _items(request: HttpRequest) -> list[tuple[int, int]]:
    """The claims a bulk form names, each `id:version` (the version the reviewer saw)."""
    items = []
    for raw in request.POST.getlist("item"):
        pk, _, version = raw.partition(":")
        if pk.isdigit() and version.isdigit():
            items.append((int(pk), int(version)))
    return items


@login_required
@require_POST
def bulk_decide(request: HttpRequest) -> HttpResponse:
    """Approve or reject the selected claims; conflicts are reported, the rest commit."""
    approve = request.POST.get("action") == "approve"
    items = _items(request)
    try:
        outcome = usecases.review_bulk(
            actor=request_principal(request), items=items, approve=approve,
            reason=request.POST.get("reason", ""),
        )  # fmt: skip
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except ValueError as error:
        messages.error(request, str(error))
        return redirect(request.headers.get("Referer") or "/review/")
    verb = "Approved" if approve else "Rejected"
    messages.success(request, f"{verb} {len(outcome.done)} claim(s).")
    for claim_id in outcome.done:
        messages.info(request, outcome.messages[claim_id])
    for claim_id, why in outcome.conflicts.items():
        messages.warning(request, f"#{claim_id}: {why}")
    return redirect(request.headers.get("Referer") or "/review/")


def _card_decided(
    request: HttpRequest, episode_id: int, outcome: usecases.BulkOutcome, *, approve: bool
) -> HttpResponse:
    """The answer to a card's decision: the card's new state for HTMX, else the queue."""
    summary = f"{'Approved' if approve else 'Rejected'} {len(outcome.done)} claim(s)."
    lines = [outcome.messages[pk] for pk in outcome.done]
    lines += [f"#{pk}: {why}" for pk, why in outcome.conflicts.items()]
    if htmx_partial(request):
        context = {"episode_id": episode_id, "summary": summary, "lines": lines,
                   "conflict": bool(outcome.conflicts),
                   "counts": selectors.queue_counts(request_principal(request))}  # fmt: skip
        return render(request, "curation/review.html#card_decided", context)
    messages.success(request, summary)
    for line in lines:
        messages.info(request, line)
    return redirect(request.headers.get("Referer") or "/review/?queue=claims&group=document")


@login_required
@require_POST
def document_decide(request: HttpRequest, episode_id: int, action: str) -> HttpResponse:
    """approve | reject every claim a document's card lists (each at the version shown),
    through the same service as the rows and the bulk form; conflicts are reported."""
    if action not in {"approve", "reject"}:
        raise Http404
    try:
        outcome = usecases.review_bulk(
            actor=request_principal(request), items=_items(request), approve=action == "approve",
            reason=request.POST.get("reason", ""),
        )  # fmt: skip
    except Claim.DoesNotExist:  # not visible (RLS): another workspace's, or gone
        raise Http404("No such claim.") from None
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except ValueError as error:  # no reason given: the card stays as it was
        if htmx_partial(request):
            return HttpResponse(str(error), status=400, headers={"HX-Reswap": "none"})
        messages.error(request, str(error))
        return redirect(request.headers.get("Referer") or "/review/")
    return _card_decided(request, episode_id, outcome, approve=action == "approve")


@login_required
@require_GET
def episode_raw(request: HttpRequest, episode_id: int) -> HttpResponse:
    """The raw artifact an episode stored, shown as text (never rendered as HTML)."""
    episode = Episode.objects.filter(pk=episode_id).first()
    if episode is None or not episode.object_key:
        raise Http404("No such artifact.")
    try:
        data = usecases.artifact_bytes(episode)
    except KeyError:
        raise Http404("The artifact's bytes are gone (erased).") from None
    except ObjectStoreError:
        unavailable = "The object store cannot be reached now; try again later."
        return HttpResponse(unavailable, status=503, content_type="text/plain; charset=utf-8")
    response = HttpResponse(data, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@login_required
@require_GET
def claim_detail(request: HttpRequest, claim_id: int) -> HttpResponse:
    """A claim's page: history across supersession, evidence, related claims."""
    claim = (
        Claim.objects.select_related("subject", "object_entity", "source", "reviewed_by")
        .filter(pk=claim_id)
        .first()
    )
    if claim is None:
        raise Http404("No such claim.")
    context = {
        "claim": claim,
        "history": selectors.claim_history(claim_id=claim.pk),
        "evidence": claim.evidence.select_related("episode", "episode__source"),
        "related": selectors.claim_related(claim),
        # Retraction is offered to whoever may retract, on what can be retracted.
        "can_retract": request_principal(request).can(Role.REVIEWER, claim.group_id),
        "retractable": claim.status in usecases.RETRACTABLE,
        # Erasure (destroying the content) is a workspace admin's.
        "can_erase": request_principal(request).can(Role.ADMIN, claim.group_id),
    }
    return render(request, "curation/claim.html", context)


@login_required
@require_POST
def retract(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """Retract a claim or an episode from the claim page, or reinstate a retracted claim
    (`undo`), with the reviewer's reason; the page then says what was done (the
    service's own message)."""
    back = request.POST.get("claim", "")
    target = redirect("review:claim-detail", claim_id=int(back)) if back.isdigit() else None
    actor, reason = request_principal(request), request.POST.get("reason", "")
    done: usecases.Retraction | usecases.Reinstatement
    try:
        if kind == "claims" and request.POST.get("undo") == "1":
            done = usecases.claim_reinstate(actor=actor, claim_id=pk, reason=reason)
        elif kind == "claims":
            done = usecases.claim_retract(actor=actor, claim_id=pk, reason=reason)
        elif kind == "episodes":
            done = usecases.episode_retract(actor=actor, episode_id=pk, reason=reason)
        else:
            raise Http404("Nothing of that kind can be retracted here.")
    except (Claim.DoesNotExist, Episode.DoesNotExist):
        raise Http404("No such item.") from None
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except usecases.RetractionRefused as error:
        messages.error(request, str(error))
        return target or HttpResponse(str(error), status=400, content_type="text/plain")
    messages.success(request, done.message)
    return target or redirect("review:queue")


@login_required
@require_GET
def entity_detail(request: HttpRequest, entity_id: int) -> HttpResponse:
    """An entity's page: names, facts now and before, merges, and its neighbourhood drawn
    as of a chosen day and to a chosen depth (the picture alone is swapped by htmx)."""
    view = selectors.entity_view(entity_id=entity_id) if entity_id <= MAX_ID else None
    if view is None:
        raise Http404("No such entity.")
    if view.entity.pk != entity_id:  # merged: the survivor's page is the one to share
        return redirect("review:entity", entity_id=view.entity.pk)
    raw = request.GET.dict()
    day = raw.pop("as_of", "").strip()
    params = {key: value for key, value in raw.items() if key in {"hops"}}
    if day:  # a calendar day means its end: what was valid when the day was over
        params["as_of"] = f"{day}T23:59:59+00:00"
    try:
        query = parse_related(params)
    except InvalidQuery as error:
        problems = "; ".join(f"{name}: {message}" for name, message in error.errors.items())
        return HttpResponse(problems, status=400, content_type="text/plain; charset=utf-8")
    paths = usecases.entity_related(
        entity=view.entity, principal=request_principal(request), query=query,
        read=selectors.claim_models,
    )  # fmt: skip
    context = {
        "view": view,
        "picture": selectors.entity_picture(view, paths),
        "paths": paths,
        "as_of": day,
        "hops": query.hops,
    }
    template = "curation/_entity_picture.html" if htmx_partial(request) else "curation/entity.html"
    return render(request, template, context)
