"""The portal's Snapshots page: a workspace's knowledge snapshots, and taking one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from common.errors import PermissionDenied
from retrieval import usecases
from retrieval.models import Snapshot
from retrieval.tasks import snapshots_build
from retrieval.usecases import SnapshotRefused
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.principals import request_principal


@login_required
@require_GET
def snapshots_page(request: HttpRequest) -> HttpResponse:
    """Every snapshot the user may see (newest first) with its seal; a form for admins."""
    principal = request_principal(request)
    administered = Scope.objects.filter(
        group_id__in=principal.groups_at_least(Role.ADMIN)
    ).order_by("name")
    names = dict(Scope.objects.values_list("group_id", "name"))
    snapshots = [
        (snapshot, names.get(snapshot.group_id, snapshot.group_id))
        for snapshot in Snapshot.objects.order_by("-created_at", "-pk")[:200]
    ]
    context = {"snapshots": snapshots, "administered": administered}
    return render(request, "retrieval/snapshots.html", context)


@login_required
@require_POST
def snapshots_take(request: HttpRequest) -> HttpResponse:
    """Take a snapshot of a workspace (admin); a maintenance worker builds and seals it."""
    principal = request_principal(request)
    try:
        snapshot = usecases.snapshot_take(
            actor=principal, group_id=request.POST.get("group", ""),
            name=request.POST.get("name", ""), reason=request.POST.get("reason", ""),
        )  # fmt: skip
    except PermissionDenied as error:
        raise DjangoPermissionDenied(str(error)) from None
    except SnapshotRefused as error:
        messages.error(request, str(error))
    else:
        transaction.on_commit(lambda: snapshots_build.delay(snapshot.pk))
        messages.success(
            request,
            f"Snapshot {snapshot.pk} “{snapshot.name}” is being built; it can be searched "
            "once it is sealed.",
        )
    return HttpResponseRedirect(reverse("search:snapshots"))
