"""Create the demo organisation, workspace, reviewer and admin (idempotent)."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.services.scopes import membership_grant, scope_create

DEMO_ORG = "Demo Organisation"
DEMO_WORKSPACE = "Demo Workspace"
USERS = (
    # username, password env var, role on the workspace, Django staff
    ("admin", "VERA_DEMO_ADMIN_PASSWORD", Role.ADMIN, True),
    ("reviewer", "VERA_DEMO_REVIEWER_PASSWORD", Role.REVIEWER, False),
)


class Command(BaseCommand):
    """`make run` calls this; passwords come from env or are generated and printed once."""

    help = "Create a demo organisation and workspace with an admin and a reviewer."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        org = Scope.objects.filter(kind=ScopeKind.ORGANISATION, name=DEMO_ORG).first()
        if org is None:
            org = scope_create(kind=ScopeKind.ORGANISATION, name=DEMO_ORG)
        workspace = Scope.objects.filter(parent=org, name=DEMO_WORKSPACE).first()
        if workspace is None:
            workspace = scope_create(
                kind=ScopeKind.WORKSPACE, name=DEMO_WORKSPACE, parent_id=org.pk
            )
        user_model = get_user_model()
        for username, password_env, role, staff in USERS:
            user = user_model.objects.filter(username=username).first()
            if user is None:
                password = os.environ.get(password_env) or secrets.token_urlsafe(12)
                user = user_model.objects.create_user(
                    username=username,
                    email=f"{username}@demo.vera.invalid",
                    password=password,
                    is_staff=staff,
                    is_superuser=staff,
                )
                shown = "from $" + password_env if os.environ.get(password_env) else password
                self.stdout.write(f"demo user {username!r} password: {shown} (shown once)")
            else:
                reset = f"python manage.py changepassword {username}"
                self.stdout.write(f"demo user {username!r} exists (reset: {reset})")
            membership_grant(user_id=user.pk, scope_id=workspace.pk, role=role)
        self.stdout.write(f"demo workspace: {workspace}")
