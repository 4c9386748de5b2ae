"""Database role plumbing: the app role gets data privileges on what the owner creates."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connections
from psycopg import sql

# Data access only: the application role may never alter or own schema objects.
TABLE_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE"


def grant_app_role(*, using: str = "default", **_: Any) -> None:
    """After `migrate`, grant the app role data access to every table and sequence.

    Runs as the migrating (owner) role. Default privileges cover objects created later
    by the same owner, e.g. tables made by a migration run before the next grant.
    """
    role = settings.VERA_DB__APP_ROLE
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_user, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s)", [role]
        )
        current_user, role_exists = cursor.fetchone()
        if not role_exists or current_user == role:
            return
        ident = sql.Identifier(role)
        statements = [
            f"GRANT {TABLE_PRIVILEGES} ON ALL TABLES IN SCHEMA public TO {{}}",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}",
            f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT {TABLE_PRIVILEGES} ON TABLES TO {{}}",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {}",
        ]
        for statement in statements:
            cursor.execute(sql.SQL(statement).format(ident).as_string(cursor.cursor))
