"""The invitation link: who follows it signs up (or in) with the invited address and lands
with the invited role; a used, expired or withdrawn link says so."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from common.errors import NotFound, PermissionDenied
from tenants import usecases
from tenants.domain.scopes import Role
from tenants.usecases import SESSION_KEY


def _refused(request: HttpRequest, reason: str, status: int) -> HttpResponse:
    return render(request, "tenants/invitation.html", {"refusal": reason}, status=status)


@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows the invitation (and, signed out, keeps it for the sign-up or sign-in
    that follows); POST, signed in, accepts it."""
    user = request.user if request.user.is_authenticated else None
    try:
        found = usecases.invitation_check(token, email=getattr(user, "email", None) or None)
    except NotFound:
        return _refused(request, "This link is not a valid invitation.", 404)
    except PermissionDenied as error:
        request.session.pop(SESSION_KEY, None)
        return _refused(request, f"{str(error)[0].upper()}{str(error)[1:]}.", 410)
    if user is None:
        request.session[SESSION_KEY] = token
    elif request.method == "POST":
        try:
            usecases.invitation_accept(token=token, user_id=user.pk)
        except (NotFound, PermissionDenied) as error:
            return _refused(request, str(error), 410)
        request.session.pop(SESSION_KEY, None)
        messages.success(request, f"You joined {found.scope.name}.")
        return redirect("home")
    context = {
        "invitation": found,
        "role": Role(found.role).name.lower(),
        "signed_in": user is not None,
        "path": request.path,
    }
    return render(request, "tenants/invitation.html", context)
