"""Migration curation 0020: a source's secret variable under the old flat prefix is renamed.

`VERA_SOURCE_SECRET_<NAME>` became `VERA_SOURCE_SECRET__<NAME>` when every VERA_
variable took one form. The migration's SQL runs here as it does on a deployment: as
the owner role, against rows under forced RLS, and leaves RLS forced. It runs in a
transaction that is rolled back, so the test database's migration state is untouched.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import dj_database_url
import psycopg
import pytest
from django.db import connections

from curation.models import Source
from tenants import rls
from tenants.selectors import principal_system
from tests.support.tenancy import Tenant, markdown_source

pytestmark = pytest.mark.django_db(transaction=True)

MIGRATION = importlib.import_module("curation.migrations.0020_source_secret_section_name")


def _owner_dsn() -> str:
    owner = dj_database_url.parse(os.environ["DATABASE_OWNER_URL"])
    name = connections["default"].settings_dict["NAME"]
    return f"postgres://{owner['USER']}:{owner['PASSWORD']}@{owner['HOST']}:{owner['PORT']}/{name}"


def test_old_secret_names_are_renamed_and_every_other_name_is_kept(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    names = ["VERA_SOURCE_SECRET_ACME_WIKI", "VERA_SOURCE_SECRET__JIRA", "", "ACME_TOKEN",
             "VERA_SOURCE_SECRETS_X", "VERA_SOURCE_SECRET_" + "L" * 80,
             "VERA_SOURCE_SECRET_" + "M" * 81]  # fmt: skip
    system = principal_system("test", group_ids=[tenant_a.workspace.group_id])
    ids = []
    for number, name in enumerate(names):
        pk = markdown_source(tenant_a, tmp_path, tier=2, name=f"docs {number}")
        with rls.tenant_context(system):  # written around the services: an older row
            Source.objects.filter(pk=pk).update(token_env=name)
        ids.append(pk)

    with psycopg.connect(_owner_dsn()) as owner:
        owner.execute(MIGRATION.FORWARD)
        rows = dict(
            owner.execute(
                "SELECT id, token_env FROM curation_source WHERE id = ANY(%s)", [ids]
            ).fetchall()
        )
        forced = owner.execute(
            "SELECT relforcerowsecurity FROM pg_class WHERE relname = 'curation_source'"
        ).fetchone()
        owner.rollback()

    assert [rows[pk] for pk in ids] == [
        "VERA_SOURCE_SECRET__ACME_WIKI",
        "VERA_SOURCE_SECRET__JIRA",
        "",
        "ACME_TOKEN",
        "VERA_SOURCE_SECRETS_X",
        "VERA_SOURCE_SECRET__" + "L" * 80,  # 100 characters: still fits the column
        "VERA_SOURCE_SECRET_" + "M" * 81,  # would not fit: left for the operator
    ]
    assert forced == (True,)
