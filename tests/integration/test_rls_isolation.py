"""Postgres itself keeps tenants apart: raw SQL as the application role.

What holds for every tenant table (forced RLS, no rows without the setting, no reads or
writes across tenants) is proven for all of them in test_rls_introspection.py, which
finds them in the catalog; this module keeps what concerns the setting itself.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from tenants import rls
from tenants.domain.access import ANONYMOUS
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


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


@pytest.mark.django_db(transaction=True)
def test_an_outermost_context_ends_with_its_transaction(
    two_tenants: tuple[Tenant, Tenant],
) -> None:
    a, _ = two_tenants
    # Outermost: the setting is not restored by a statement, the commit ends it.
    with rls.tenant_context(a.principal(a.admin)):
        assert _groups_seen("tenants_apikey") == {a.workspace.group_id}
    assert not connection.in_atomic_block
    with transaction.atomic():
        assert rls.current_group_ids() == []
        assert _groups_seen("tenants_apikey") == set()


@pytest.mark.django_db(transaction=True)
def test_a_context_restores_the_setting_when_autocommit_is_off(
    two_tenants: tuple[Tenant, Tenant],
) -> None:
    a, _ = two_tenants
    transaction.set_autocommit(False)  # the block below then commits nothing itself
    try:
        with rls.tenant_context(a.principal(a.admin)):
            assert _groups_seen("tenants_apikey") == {a.workspace.group_id}
        assert rls.current_group_ids() == []  # the transaction is still open
        assert _groups_seen("tenants_apikey") == set()
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)


def test_only_the_rls_module_writes_the_setting() -> None:
    from pathlib import Path

    from curation.services import lifecycle

    root = Path(__file__).resolve().parents[2]
    # The lifecycle service sets a setting of its own (who may write a claim's status),
    # never a tenant one: its only set_config calls name WRITER_SETTING.
    own = root / "curation" / "services" / "lifecycle.py"
    offenders = [
        str(path.relative_to(root))
        for app in ("vera", "tenants", "curation", "retrieval", "common", "kernel")
        for path in (root / app).rglob("*.py")
        if "set_config" in path.read_text() and path not in (root / "tenants" / "rls.py", own)
    ]
    assert offenders == []
    calls = [line for line in own.read_text().splitlines() if "set_config" in line]
    assert calls
    assert all(line.rstrip().endswith("[WRITER_SETTING])") for line in calls), calls
    assert lifecycle.WRITER_SETTING == "vera.lifecycle"
