"""The portal's search page names the scopes it searched and narrows to the one chosen,
as the REST search does: a person with two workspaces sees both without a choice and
one with it; another tenant's scope, or a malformed one, is a message and never data."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from django.test import Client

from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope
from tenants.services.scopes import membership_grant, scope_create
from tests.support.ingest import T0, ingest_markdown
from tests.support.snapshots import sealed_snapshot
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

QUESTION = "where do the billing-api and the ledger-api run"
# A workspace name that must reach the page escaped, never as markup.
ODD_NAME = 'Ops <R&D> "West"'
ODD_ESCAPED = "Ops &lt;R&amp;D&gt; &quot;West&quot;"


@pytest.fixture
def second_workspace(tenant_a: Tenant) -> Scope:
    """A second workspace of tenant A's organisation, its admin admin of both."""
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name=ODD_NAME, parent_id=tenant_a.org.pk)
    membership_grant(user_id=tenant_a.admin.pk, scope_id=workspace.pk, role=Role.ADMIN)
    return workspace


@pytest.fixture
def two_workspaces(
    tenant_a: Tenant, tenant_b: Tenant, second_workspace: Scope, tmp_path: Path
) -> Tenant:
    """A fact in each of tenant A's workspaces and one of tenant B's, ingested and
    indexed through the real pipeline; returns tenant A."""
    billing = "# Billing\n\nThe billing-api runs on {}.\n"
    ingest_markdown(tenant_a, tmp_path / "one", {"billing.md": billing.format("k8s-prod-1")}, at=T0)
    west = replace(tenant_a, workspace=second_workspace)
    ledger = {"ledger.md": "# Ledger\n\nThe ledger-api runs on k8s-west-7.\n"}
    ingest_markdown(west, tmp_path / "two", ledger, name="west-docs", at=T0)
    ingest_markdown(tenant_b, tmp_path / "b", {"billing.md": billing.format("k8s-globex-9")}, at=T0)
    return tenant_a


def _page(client: Client, **params: str) -> tuple[int, str, str]:
    """The search page's status, its whole HTML and the HTML of its results."""
    response = client.get("/search/", {"q": QUESTION, **params})
    html = response.content.decode()
    return response.status_code, html, html[html.index('id="results"') :]


def _options(html: str) -> list[str]:
    """The values the scope selector offers, in order."""
    select = html[html.index('<select name="scope"') :]
    select = select[: select.index("</select>")]
    return re.findall(r'<option value="([^"]*)"', select)


def test_without_a_scope_both_workspaces_answer_each_hit_named_by_its_workspace(
    client: Client, two_workspaces: Tenant, second_workspace: Scope
) -> None:
    client.force_login(two_workspaces.admin)
    status, html, results = _page(client)
    assert status == 200
    assert "k8s-prod-1" in results
    assert "k8s-west-7" in results
    assert "k8s-globex-9" not in html
    # Both workspaces, the organisation's published knowledge, the admin's personal scope.
    assert "all your scopes (4)" in results
    for name in ("Acme WS", "Acme Org", ODD_ESCAPED):
        assert f"<strong>{name}</strong>" in results
    assert f'data-group="{two_workspaces.workspace.group_id}">Acme WS</span>' in results
    assert f'data-group="{second_workspace.group_id}">{ODD_ESCAPED}</span>' in results
    assert ODD_NAME not in html


def test_a_chosen_workspace_narrows_the_hits_and_is_named(
    client: Client, two_workspaces: Tenant, second_workspace: Scope
) -> None:
    client.force_login(two_workspaces.admin)
    status, html, results = _page(client, scope=second_workspace.group_id)
    assert status == 200
    assert "k8s-west-7" in results
    assert "k8s-prod-1" not in results
    assert f"Searched\n    <strong>{ODD_ESCAPED}</strong>." in results
    assert "all your scopes" not in results
    assert 'class="hit-scope"' not in results  # one scope searched: nothing to tell apart
    assert f'<option value="{second_workspace.group_id}" selected>' in html

    status, _, results = _page(client, scope=two_workspaces.workspace.group_id)
    assert status == 200
    assert "k8s-prod-1" in results
    assert "k8s-west-7" not in results
    assert "<strong>Acme WS</strong>" in results


def test_the_organisation_chosen_searches_it_and_the_workspaces_under_it(
    client: Client, two_workspaces: Tenant
) -> None:
    viewer = Client()
    viewer.force_login(two_workspaces.viewer)
    status, _, results = _page(viewer, scope=two_workspaces.org.group_id)
    # A workspace viewer reads only the organisation's published knowledge there: none.
    assert status == 200
    assert "<strong>Acme Org</strong>." in results
    assert "k8s-prod-1" not in results
    client.force_login(two_workspaces.admin)
    membership_grant(
        user_id=two_workspaces.admin.pk, scope_id=two_workspaces.org.pk, role=Role.ADMIN
    )
    status, _, results = _page(client, scope=two_workspaces.org.group_id)
    assert status == 200
    assert "<strong>Acme Org</strong> and the 2 scopes under it." in results
    assert "k8s-prod-1" in results
    assert "k8s-west-7" in results


def test_another_tenants_scope_or_a_malformed_one_is_a_message_and_never_data(
    client: Client, two_workspaces: Tenant, tenant_b: Tenant
) -> None:
    client.force_login(two_workspaces.admin)
    for scope in (tenant_b.workspace.group_id, tenant_b.org.group_id, "w:" + "0" * 32):
        status, html, results = _page(client, scope=scope)
        assert status == 200
        assert 'id="search-errors"' in results
        assert "scope: no such scope among those you can read" in results
        assert 'class="hits"' not in results
        assert "k8s-globex-9" not in html
        assert "k8s-prod-1" not in results
        assert "Globex" not in html
    status, _, results = _page(client, scope="tenant-b")
    assert status == 200
    assert "scope: must be a scope" in results
    assert 'class="hits"' not in results


def test_the_selector_lists_the_persons_scopes_and_no_other_tenants(
    client: Client, two_workspaces: Tenant, second_workspace: Scope, tenant_b: Tenant
) -> None:
    client.force_login(two_workspaces.admin)
    html = client.get("/search/").content.decode()
    options = _options(html)
    assert options[0] == ""
    assert ">All my scopes</option>" in html
    ours = {
        two_workspaces.workspace.group_id,
        second_workspace.group_id,
        two_workspaces.org.group_id,
    }
    assert ours <= set(options[1:])
    (personal,) = set(options[1:]) - ours
    assert personal.startswith(ScopeKind.PERSONAL.value + ":")
    assert tenant_b.workspace.group_id not in html
    assert tenant_b.org.group_id not in html
    assert f"{ODD_ESCAPED} (workspace)" in html
    assert "Acme Org (organisation, published knowledge only)" in html

    other = Client()
    other.force_login(tenant_b.viewer)
    theirs = set(_options(other.get("/search/").content.decode())[1:])
    assert {tenant_b.workspace.group_id, tenant_b.org.group_id} <= theirs
    assert not theirs & (ours | {personal})


@pytest.mark.django_db(transaction=True)  # a snapshot is built in its own transaction
def test_a_snapshot_search_is_narrowed_like_a_live_one(
    client: Client, two_workspaces: Tenant, second_workspace: Scope
) -> None:
    snapshot = sealed_snapshot(two_workspaces, name="q1")
    client.force_login(two_workspaces.admin)
    status, _, results = _page(
        client, snapshot=str(snapshot.pk), scope=two_workspaces.workspace.group_id
    )
    assert status == 200
    assert 'id="searched-snapshot"' in results
    assert "k8s-prod-1" in results
    assert "<strong>Acme WS</strong>." in results
    # The other workspace does not reach this snapshot: as if it did not exist.
    status, _, results = _page(client, snapshot=str(snapshot.pk), scope=second_workspace.group_id)
    assert status == 200
    assert "snapshot: No such snapshot." in results
    assert 'class="hits"' not in results
