"""`scope=` on every list: the named scope's rows (and those under it), 404 for a scope
the caller has no role in, 400 for a malformed one; never silently the caller's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from tenants.domain.scopes import Role, ScopeKind
from tenants.services.scopes import membership_grant, scope_create
from tests.support.ingest import ingest_markdown
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

LISTS = ["/api/v1/episodes", "/api/v1/sources", "/api/v1/audit-events", "/api/v1/claims",
         "/api/v1/keys", "/api/v1/scopes", "/api/v1/snapshots"]  # fmt: skip


def _rows(body: object) -> list[dict]:
    return body["results"] if isinstance(body, dict) else body  # type: ignore[index,return-value]


@pytest.fixture
def two_workspaces(tenant_a: Tenant, tmp_path: Path) -> tuple[Tenant, str]:
    """Tenant A's admin also administers a second workspace, each with a source."""
    other = scope_create(kind=ScopeKind.WORKSPACE, name="Second", parent_id=tenant_a.org.pk)
    membership_grant(user_id=tenant_a.admin.pk, scope_id=other.pk, role=Role.ADMIN)
    ingest_markdown(tenant_a, tmp_path / "a", {"a.md": "# A\n\nThe api-a runs on k8s-1.\n"})
    from tests.support.tenancy import create_source

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "b.md").write_text("# B\n\nThe api-b runs on k8s-2.\n")
    principal = tenant_a.principal(tenant_a.admin)
    source_id = create_source(principal, group_id=other.group_id, kind="markdown", name="b",
                              config={"root": str(tmp_path / "b")}, tier=1)  # fmt: skip
    from tests.support.ingest import drain_outbox, ingest_run

    ingest_run(source_id=source_id, group_id=other.group_id)
    drain_outbox()
    return tenant_a, other.group_id


@pytest.mark.parametrize("url", LISTS)
def test_a_list_narrowed_to_a_scope_holds_only_that_scopes_rows(
    client: Client, two_workspaces: tuple[Tenant, str], url: str
) -> None:
    tenant, other = two_workspaces
    client.force_login(tenant.admin)
    everything = client.get(url)
    assert everything.status_code == 200, everything.content
    narrowed = client.get(url, {"scope": other})
    assert narrowed.status_code == 200, narrowed.content
    rows = _rows(narrowed.json())
    groups = {row.get("group_id") for row in rows if "group_id" in row}
    assert groups <= {other}, (url, groups)
    if url in ("/api/v1/episodes", "/api/v1/sources", "/api/v1/claims"):
        assert rows, url  # the second workspace has its own
        assert len(rows) < len(_rows(everything.json()))


@pytest.mark.parametrize("url", LISTS)
def test_a_list_for_a_scope_the_caller_has_no_role_in_is_a_404_and_a_bad_one_a_400(
    client: Client, two_workspaces: tuple[Tenant, str], tenant_b: Tenant, url: str
) -> None:
    tenant, _ = two_workspaces
    client.force_login(tenant.admin)
    assert client.get(url, {"scope": tenant_b.workspace.group_id}).status_code == 404
    assert client.get(url, {"scope": "w:" + "x" * 60}).status_code == 400
