"""`seed_demo` creates the demo organisation, workspace, admin and reviewer once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from tenants.domain.scopes import Role
from tenants.models import Membership, Scope

pytestmark = pytest.mark.django_db


def _seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def test_seed_demo_creates_workspace_with_admin_and_reviewer(monkeypatch) -> None:
    monkeypatch.setenv("VERA_DEMO_REVIEWER_PASSWORD", "a-long-reviewer-pass")
    _seed()
    workspace = Scope.objects.get(name="Demo Workspace")
    assert workspace.group_id.startswith("w:")
    assert workspace.parent is not None
    assert workspace.parent.group_id.startswith("o:")
    roles = dict(Membership.objects.filter(scope=workspace).values_list("user__username", "role"))
    assert roles == {"admin": Role.ADMIN, "reviewer": Role.REVIEWER}
    assert authenticate(username="reviewer", password="a-long-reviewer-pass") is not None


def test_seed_demo_prints_a_generated_password_once(monkeypatch) -> None:
    monkeypatch.delenv("VERA_DEMO_ADMIN_PASSWORD", raising=False)
    first = _seed()
    line = next(line for line in first.splitlines() if line.startswith("demo user 'admin'"))
    password = line.split("password: ")[1].split(" ")[0]
    assert authenticate(username="admin", password=password) is not None
    second = _seed()
    assert password not in second
    assert "exists" in second


def test_seed_demo_is_idempotent() -> None:
    _seed()
    _seed()
    assert Scope.objects.filter(name="Demo Workspace").count() == 1
    assert get_user_model().objects.filter(username__in=["admin", "reviewer"]).count() == 2
