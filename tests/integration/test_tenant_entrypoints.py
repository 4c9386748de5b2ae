"""Celery tasks and management commands run inside the tenant context they were given."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tenants import rls
from tenants.jobs import TenantTask
from tenants.models import AuditEvent
from tests.support.tenancy import Tenant
from vera.celery import app

pytestmark = pytest.mark.django_db


@app.task(base=TenantTask, name="tests.visible_groups")
def visible_groups() -> list[str]:
    return sorted(set(AuditEvent.objects.values_list("group_id", flat=True)))


def test_task_sees_only_the_groups_it_was_given(tenant_a: Tenant, tenant_b: Tenant) -> None:
    result = visible_groups.apply(kwargs={"group_ids": [tenant_a.workspace.group_id]}).get()
    assert result == [tenant_a.workspace.group_id]


def test_task_ignores_forged_group_ids(tenant_a: Tenant) -> None:
    result = visible_groups.apply(kwargs={"group_ids": ["w:" + "0" * 32]}).get()
    assert result == []


def test_task_without_group_ids_refuses_to_run() -> None:
    with pytest.raises(TypeError, match="group_ids"):
        visible_groups.apply(kwargs={}, throw=True).get()


def test_task_leaves_no_setting_behind(tenant_a: Tenant) -> None:
    visible_groups.apply(kwargs={"group_ids": [tenant_a.workspace.group_id]}).get()
    assert rls.current_group_ids() == []


def test_command_as_user_sees_that_users_groups(tenant_a: Tenant, tenant_b: Tenant) -> None:
    out = StringIO()
    call_command("audit_log", "--as-user", tenant_a.admin.get_username(), stdout=out)
    assert tenant_a.workspace.group_id in out.getvalue()
    assert tenant_b.workspace.group_id not in out.getvalue()


def test_command_for_a_group_sees_that_group(tenant_a: Tenant, tenant_b: Tenant) -> None:
    out = StringIO()
    call_command("audit_log", "--group", tenant_b.workspace.group_id, stdout=out)
    assert "role.grant" in out.getvalue()
    assert tenant_a.workspace.group_id not in out.getvalue()


def test_command_refuses_unknown_groups() -> None:
    with pytest.raises(CommandError, match="unknown group id"):
        call_command("audit_log", "--group", "w:nope")


def test_command_requires_a_principal() -> None:
    with pytest.raises(CommandError, match="one of the arguments"):
        call_command("audit_log")
