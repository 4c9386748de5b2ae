"""The portal's erasure pages: confirm what an erasure destroys, then its tombstone.

The same use cases as the REST API and the admin: `erasure_preview` says what would go,
`erase` does it (workspace admin, reason and confirmation), the cleanup runs after
commit (a worker finishes it should this process die), and the tombstone page runs the
residual scan on demand.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from common.errors import PermissionDenied
from curation.models import Episode, Source, Tombstone
from retrieval import usecases
from retrieval.usecases import ErasureRefused
from tenants.domain.scopes import Role
from tenants.principals import request_principal

KINDS = {"sources": "source", "episodes": "episode"}


@login_required
@require_http_methods(["GET", "POST"])
def erase_page(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """GET: what erasing it destroys, and the form; POST: erase it, then its tombstone."""
    if kind not in KINDS:
        raise Http404("Only a source or a document can be erased.")
    principal = request_principal(request)
    try:
        preview = usecases.erasure_preview(actor=principal, kind=KINDS[kind], target_id=pk)
    except (Source.DoesNotExist, Episode.DoesNotExist):
        raise Http404(f"No such {KINDS[kind]}.") from None
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    context: dict[str, object] = {"kind": KINDS[kind], "pk": pk, "preview": preview}
    if request.method == "POST":
        try:
            tombstone = usecases.erase(
                actor=principal, kind=KINDS[kind], target_id=pk,
                reason=request.POST.get("reason", ""), confirm=request.POST.get("confirm") == "on",
            )  # fmt: skip
        except ErasureRefused as error:
            context["error"] = str(error)
            context["reason"] = request.POST.get("reason", "")
        else:
            transaction.on_commit(
                lambda: usecases.erasure_cleanup_at_once(tombstone.pk, tombstone.group_id)
            )
            messages.success(request, f"Erased {KINDS[kind]} {pk}; this tombstone is what remains.")
            return redirect("search:tombstone", pk=tombstone.pk)
    return render(request, "retrieval/erase.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def tombstone_page(request: HttpRequest, pk: int) -> HttpResponse:
    """An erasure's tombstone (no content); POST runs the residual scan (workspace admin)."""
    tombstone = Tombstone.objects.filter(pk=pk).first()  # RLS: others' are not found
    if tombstone is None:
        raise Http404("No such tombstone.")
    context: dict[str, object] = {"tombstone": tombstone}
    if request.method == "POST":
        if not request_principal(request).can(Role.ADMIN, tombstone.group_id):
            raise DjangoPermissionDenied("verifying an erasure needs the admin role")
        context["residue"] = usecases.erasure_verify(tombstone)
    return render(request, "retrieval/tombstone.html", context)
