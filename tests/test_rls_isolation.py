"""Postgres itself keeps tenants apart: raw SQL as the application role."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from tenants import rls
from tenants.domain.access import ANONYMOUS
from tests.tenancy import Tenant

pytestmark = pytest.mark.django_db
RLS_TABLES = ("tenants_apikey", "tenants_auditevent")


def _groups_seen(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT group_id FROM {table}")  # noqa: S608 - fixed names
        return {row[0] for row in cursor.fetchall()}


@pytest.fixture
def two_tenants(tenant_a: Tenant, tenant_b: Tenant) -> tuple[Tenant, Tenant]:
    # Keys and audit events (the grants above) exist in both workspaces.
    tenant_a.issue_key(owner=tenant_a.viewer)
    tenant_b.issue_key(owner=tenant_b.viewer)
    return tenant_a, tenant_b


@pytest.mark.parametrize("table", RLS_TABLES)
def test_no_rows_when_no_tenant_setting(two_tenants: tuple[Tenant, Tenant], table: str) -> None:
    with transaction.atomic():
        assert rls.current_group_ids() == []
        assert _groups_seen(table) == set()


@pytest.mark.parametrize("table", RLS_TABLES)
def test_only_own_rows_when_tenant_a_is_set(two_tenants: tuple[Tenant, Tenant], table: str) -> None:
    a, b = two_tenants
    with rls.tenant_context(a.principal(a.admin)):
        seen = _groups_seen(table)
    assert a.workspace.group_id in seen
    assert b.workspace.group_id not in seen


@pytest.mark.parametrize("table", RLS_TABLES)
def test_rls_is_forced_with_policies(table: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relrowsecurity, relforcerowsecurity, "
            "(SELECT count(*) FROM pg_policy WHERE polrelid = c.oid) "
            "FROM pg_class c WHERE relname = %s",
            [table],
        )
        enabled, forced, policies = cursor.fetchone()
    assert (enabled, forced) == (True, True)
    assert policies == 4


def test_insert_into_another_tenants_group_is_rejected(two_tenants: tuple[Tenant, Tenant]) -> None:
    a, b = two_tenants
    with (
        pytest.raises(DatabaseError, match="row-level security"),
        rls.tenant_context(a.principal(a.admin)),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "INSERT INTO tenants_auditevent (group_id, actor_label, action, target_type, "
            "target_id, data, created_at) VALUES (%s, 'x', 'forged', '', '', '{}', now())",
            [b.workspace.group_id],
        )


def test_update_moving_a_row_into_another_tenant_is_rejected(
    two_tenants: tuple[Tenant, Tenant],
) -> None:
    a, b = two_tenants
    with (
        pytest.raises(DatabaseError, match="row-level security"),
        rls.tenant_context(a.principal(a.admin)),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "UPDATE tenants_apikey SET group_id = %s WHERE group_id = %s",
            [b.workspace.group_id, a.workspace.group_id],
        )


def test_update_of_another_tenants_rows_touches_nothing(
    two_tenants: tuple[Tenant, Tenant],
) -> None:
    a, b = two_tenants
    with rls.tenant_context(a.principal(a.admin)), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tenants_apikey SET name = 'pwned' WHERE group_id = %s", [b.workspace.group_id]
        )
        assert cursor.rowcount == 0
    with rls.tenant_context(b.principal(b.admin)):
        assert "pwned" not in {row[0] for row in _names()}


def test_a_forged_group_in_the_setting_needs_the_rls_module(
    two_tenants: tuple[Tenant, Tenant],
) -> None:
    # The anonymous principal reaches nothing, whatever a caller asks for.
    with rls.tenant_context(ANONYMOUS):
        assert _groups_seen("tenants_apikey") == set()


def test_tenant_context_restores_the_outer_setting(two_tenants: tuple[Tenant, Tenant]) -> None:
    a, b = two_tenants
    with rls.tenant_context(a.principal(a.admin)):
        with rls.tenant_context(b.principal(b.admin)):
            assert b.workspace.group_id in rls.current_group_ids()
        assert rls.current_group_ids() == sorted(a.principal(a.admin).group_ids)


@pytest.mark.django_db(transaction=True)
def test_nothing_leaks_to_the_next_transaction_on_a_persistent_connection(
    two_tenants: tuple[Tenant, Tenant],
) -> None:
    a, _ = two_tenants
    with transaction.atomic():
        rls.activate(a.principal(a.admin))
        assert _groups_seen("tenants_apikey")
    with transaction.atomic():
        assert rls.current_group_ids() == []
        assert _groups_seen("tenants_apikey") == set()


def test_only_the_rls_module_writes_the_setting() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    offenders = [
        str(path.relative_to(root))
        for app in ("vera", "tenants", "curation", "retrieval")
        for path in (root / app).rglob("*.py")
        if "set_config" in path.read_text() and path != root / "tenants" / "rls.py"
    ]
    assert offenders == []


def _names() -> list[tuple[str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM tenants_apikey")
        return list(cursor.fetchall())
