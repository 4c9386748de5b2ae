"""Key management for workspace admins: issue, rotate, revoke (HTMX, works without JS)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from common.errors import PermissionDenied
from common.htmx import htmx_partial
from tenants import selectors, usecases
from tenants.principals import request_principal
from tenants.web.forms import KeyIssueForm


def _page(request: HttpRequest, form: KeyIssueForm | None = None, **extra: object) -> HttpResponse:
    principal = request_principal(request)
    scopes = selectors.scopes_administered(principal)
    context = {
        "keys": selectors.api_keys_visible(principal),
        "form": form or KeyIssueForm(principal=principal, scopes=scopes),
        "can_issue": scopes.exists(),
        **extra,
    }
    partial = htmx_partial(request) and request.method == "POST"
    return render(
        request, "tenants/keys.html#keys-area" if partial else "tenants/keys.html", context
    )


@login_required
@require_GET
def key_list(request: HttpRequest) -> HttpResponse:
    """The signed-in user's keys and those of the workspaces they administer."""
    return _page(request)


@login_required
@require_POST
def key_issue(request: HttpRequest) -> HttpResponse:
    """Issue a key; the response shows its secret this once."""
    principal = request_principal(request)
    scopes = selectors.scopes_administered(principal)
    form = KeyIssueForm(request.POST, principal=principal, scopes=scopes)
    if not form.is_valid():
        return _page(request, form=form, errors=True)
    try:
        issued = usecases.api_key_issue(
            actor=principal,
            owner_id=form.cleaned_data["owner"].pk,
            scope_id=form.cleaned_data["scope"].pk,
            name=form.cleaned_data["name"],
            role_ceiling=form.cleaned_data["role_ceiling"],
            expires_at=form.expires_at(),
            ip_address=request.META.get("REMOTE_ADDR"),
        )
    except PermissionDenied as error:
        form.add_error(None, str(error))
        return _page(request, form=form, errors=True)
    return _page(request, issued=issued)


def _act(request: HttpRequest, key_id: int, action: str) -> HttpResponse:
    principal = request_principal(request)
    if not selectors.api_keys_visible(principal).filter(pk=key_id).exists():
        raise Http404("No such key.")
    ip = request.META.get("REMOTE_ADDR")
    try:
        if action == "rotate":
            return _page(
                request,
                issued=usecases.api_key_rotate(actor=principal, key_id=key_id, ip_address=ip),
            )
        usecases.api_key_revoke(actor=principal, key_id=key_id, ip_address=ip)
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except ValueError:
        pass  # rotating a revoked key: the page shows it as revoked
    return _page(request, revoked=True)


@login_required
@require_POST
def key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    """Revoke a key at once."""
    return _act(request, key_id, "revoke")


@login_required
@require_POST
def key_rotate(request: HttpRequest, key_id: int) -> HttpResponse:
    """Replace a key's secret; the new one is shown once."""
    return _act(request, key_id, "rotate")
