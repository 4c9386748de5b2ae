"""Scopes and members in the portal: the scopes a person reaches, and one scope's page
(its sub-scopes, members, invitations) with the actions their role allows. Every action
is a POST to the same use cases as the REST API; a refusal is shown with its reason."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from common.errors import NotFound, PermissionDenied
from tenants import selectors, usecases
from tenants.domain.members import MANAGED_FROM
from tenants.domain.scopes import PARENT_KIND, Role, ScopeKind
from tenants.models import Invitation, Scope
from tenants.principals import request_principal

ROLES = [role.name.lower() for role in Role]
# The kind of scope each kind of scope can open under it.
CHILD_KIND = {parent: kind for kind, parent in PARENT_KIND.items() if kind in MANAGED_FROM}


@login_required
@require_GET
def scope_list(request: HttpRequest) -> HttpResponse:
    """The scopes the signed-in person reaches, with their role in each."""
    principal = request_principal(request)
    rows = [
        {"scope": scope, "kind": ScopeKind(scope.kind).name.lower(),
         "role": principal.roles[scope.group_id].name.lower()}
        for scope in selectors.scopes_reached(principal)
    ]  # fmt: skip
    superuser = getattr(request.user, "is_superuser", False)
    return render(request, "tenants/scopes.html", {"rows": rows, "superuser": superuser})


@login_required
def organisations(request: HttpRequest) -> HttpResponse:
    """Superusers only: every organisation of the deployment, and a form opening one with
    its first owner (the same use case as `manage.py create_organisation`)."""
    if not getattr(request.user, "is_superuser", False):
        raise Http404("No such page.")
    if request.method == "POST":
        name = request.POST.get("name", "")
        owner = request.POST.get("owner", "").strip()
        try:
            scope = usecases.organisation_create(
                name=name, owner=owner, by=request.user.get_username()
            )
        except (NotFound, ValueError) as error:
            messages.error(request, f"Not opened: {error}.")
        else:
            messages.success(request, f"Opened {scope.name} ({scope.group_id}), owned by {owner}.")
            return redirect("scopes:organisations")
    found = Scope.objects.filter(kind=ScopeKind.ORGANISATION).order_by("name")
    return render(request, "tenants/organisations.html", {"organisations": found})


@login_required
@require_GET
def scope_page(request: HttpRequest, group_id: str) -> HttpResponse:
    """One scope: what is under it, and for its admins its members and invitations."""
    principal = request_principal(request)
    try:
        scope = usecases.scope_visible(principal, group_id)
    except NotFound:
        raise Http404("No such scope.") from None
    role = principal.roles[scope.group_id]
    kind = ScopeKind(scope.kind)
    child = CHILD_KIND.get(kind)
    admin = role >= Role.ADMIN
    context = {
        "scope": scope,
        "kind": kind.name.lower(),
        "role": role.name.lower(),
        "child_kind": child.name.lower() if child and admin and not scope.archived_at else "",
        "children": scope.children.order_by("name"),
        "manages": bool(
            scope.parent
            and kind in MANAGED_FROM
            and principal.can(Role.ADMIN, scope.parent.group_id)
        ),
        "admin": admin,
        # Its organisation's admins deactivate people from any of its scopes' pages.
        "deactivates": principal.can(Role.ADMIN, _organisation(scope.group_id)),
        "me": principal.user_id,
        "members": selectors.members_of(scope) if admin else [],
        "invitations": _pending(scope) if admin else [],
        "roles": ROLES[: ROLES.index(role.name.lower()) + 1],
        "sent": request.session.pop("vera_sent_invitation", None),
    }
    return render(request, "tenants/scope.html", context)


def _organisation(group_id: str) -> str:
    """The group id of the organisation a scope belongs to (itself for an organisation)."""
    scope = Scope.objects.filter(group_id=group_id).select_related("parent__parent").first()
    while scope is not None and scope.parent is not None:
        scope = scope.parent
    return scope.group_id if scope is not None else group_id


def _pending(scope: Scope) -> QuerySet[Invitation]:
    return Invitation.objects.filter(
        scope=scope, accepted_at__isnull=True, revoked_at__isnull=True
    ).order_by("-created_at")


def _act(
    request: HttpRequest, group_id: str, action: Callable[[], object], done: str
) -> HttpResponse:
    try:
        action()
    except NotFound:
        raise Http404("No such scope or member.") from None
    except (PermissionDenied, ValueError) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, done)
    return redirect("scopes:page", group_id=group_id)


def _role(request: HttpRequest) -> Role:
    name = request.POST.get("role", "")
    if name not in ROLES:
        raise Http404("No such role.")
    return Role[name.upper()]


@login_required
@require_POST
def scope_open(request: HttpRequest, group_id: str) -> HttpResponse:
    principal = request_principal(request)
    kind = request.POST.get("kind", "")
    if kind not in ("workspace", "project"):
        raise Http404("No such kind of scope.")
    opened: list[str] = []

    def act() -> None:
        opened.append(
            usecases.scope_open(
                actor=principal, kind=ScopeKind[kind.upper()],
                name=request.POST.get("name", ""), parent_group_id=group_id,
            ).group_id
        )  # fmt: skip

    response = _act(request, group_id, act, f"{kind.title()} opened.")
    return redirect("scopes:page", group_id=opened[0]) if opened else response


@login_required
@require_POST
def scope_change(request: HttpRequest, group_id: str) -> HttpResponse:
    principal = request_principal(request)
    if "name" in request.POST:
        name = request.POST["name"]
        return _act(request, group_id, lambda: usecases.scope_rename(
            actor=principal, group_id=group_id, name=name), "Renamed.")  # fmt: skip
    archived = request.POST.get("archived") == "true"
    reason = request.POST.get("reason", "")
    return _act(request, group_id, lambda: usecases.scope_archive(
        actor=principal, group_id=group_id, archived=archived, reason=reason),
        "Archived." if archived else "Restored.")  # fmt: skip


@login_required
@require_POST
def member_add(request: HttpRequest, group_id: str) -> HttpResponse:
    principal, role = request_principal(request), _role(request)
    user = request.POST.get("user", "").strip()
    return _act(request, group_id, lambda: usecases.member_set_role(
        actor=principal, group_id=group_id, user=user, role=role), f"{user} added.")  # fmt: skip


@login_required
@require_POST
def member_change(request: HttpRequest, group_id: str, user_id: int) -> HttpResponse:
    principal = request_principal(request)
    if request.POST.get("remove"):
        return _act(request, group_id, lambda: usecases.member_remove(
            actor=principal, group_id=group_id, user_id=user_id), "Removed.")  # fmt: skip
    if request.POST.get("deactivate"):
        organisation = _organisation(group_id)
        return _act(request, group_id, lambda: usecases.member_deactivate(
            actor=principal, group_id=organisation, user_id=user_id), "Deactivated.")  # fmt: skip
    role = _role(request)
    return _act(request, group_id, lambda: usecases.member_set_role(
        actor=principal, group_id=group_id, user=user_id, role=role), "Role changed.")  # fmt: skip


@login_required
@require_POST
def invitation_send(request: HttpRequest, group_id: str) -> HttpResponse:
    principal, role = request_principal(request), _role(request)
    email = request.POST.get("email", "")

    def act() -> None:
        sent = usecases.invitation_send(
            actor=principal, group_id=group_id, email=email, role=role,
            base_url=request.build_absolute_uri("/").rstrip("/"),
        )  # fmt: skip
        request.session["vera_sent_invitation"] = request.build_absolute_uri(sent.path)

    return _act(request, group_id, act, f"Invitation sent to {email.strip()}.")


@login_required
@require_POST
def invitation_withdraw(request: HttpRequest, group_id: str, invitation_id: int) -> HttpResponse:
    principal = request_principal(request)
    return _act(request, group_id, lambda: usecases.invitation_revoke(
        actor=principal, group_id=group_id, invitation_id=invitation_id), "Withdrawn.")  # fmt: skip
