"""The application role cannot bypass row-level security."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

pytestmark = pytest.mark.django_db


def _one(query: str, params: list[object] | None = None) -> tuple[object, ...]:
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        row = cursor.fetchone()
    assert row is not None
    return tuple(row)


def test_tests_connect_as_the_application_role() -> None:
    (user,) = _one("SELECT current_user")
    assert user == "vera_app"


def test_app_role_is_not_superuser_nor_bypassrls() -> None:
    superuser, bypass, createrole, createdb = _one(
        "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles "
        "WHERE rolname = current_user"
    )
    assert (superuser, bypass, createrole, createdb) == (False, False, False, False)


def test_app_role_owns_no_relation_while_tables_exist() -> None:
    (tables,) = _one("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
    (owned,) = _one(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND pg_get_userbyid(c.relowner) = current_user"
    )
    assert tables > 10  # the migrated schema is there ...
    assert owned == 0  # ... and none of it belongs to the app role


def test_app_role_cannot_become_the_owner_role() -> None:
    (member,) = _one("SELECT pg_has_role(current_user, 'vera_owner', 'MEMBER')")
    assert member is False
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        _one("SET ROLE vera_owner")


def test_app_role_cannot_switch_off_row_level_security() -> None:
    with pytest.raises(DatabaseError, match="must be owner"), transaction.atomic():
        _one("ALTER TABLE tenants_scope DISABLE ROW LEVEL SECURITY")


def test_app_role_cannot_change_the_schema() -> None:
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        _one("CREATE TABLE intruder (id int)")


def test_extensions_are_installed() -> None:
    (names,) = _one("SELECT array_agg(extname ORDER BY extname) FROM pg_extension")
    assert {"vector", "pg_trgm"} <= set(names)
