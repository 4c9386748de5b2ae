"""An agent proposes a fact over MCP; a reviewer accepts it in Chromium; only then does
the agent's search find it. The contamination guard, end to end, across two processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from curation.tasks import process_outbox
from tenants.domain.scopes import Role
from tenants.services.scopes import membership_grant
from tests.support.browser import sign_in
from tests.support.mcp_server import McpServer, call, mcp_server
from tests.support.tenancy import PASSWORD, Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PROPOSAL = {
    "subject": "search-api",
    "predicate": "RUNS_ON",
    "object": "k8s-prod-9",
    "evidence": "Moved search-api to k8s-prod-9 during the Tuesday migration.",
    "source_url": "https://chat.example/threads/42",
}
QUESTION = {"query": "where does the search-api run"}


@pytest.fixture
def server(app_database_url: str, tmp_path: Path) -> Iterator[McpServer]:
    with mcp_server(database_url=app_database_url, log=tmp_path / "mcp.log") as running:
        yield running


def _found(server: McpServer, key: str, claim_id: int) -> bool:
    _, (result,) = call(server, key, ("search", QUESTION))
    assert not result.is_error, result.content
    return any(hit["claim_id"] == claim_id for hit in result.structured_content["hits"])


def test_an_agents_proposal_waits_for_a_reviewer_then_becomes_searchable(
    page: Page, live_server, server: McpServer, tenant_a: Tenant
) -> None:
    agent = get_user_model().objects.create_user(username="acme-agent", password=PASSWORD)
    membership_grant(user_id=agent.pk, scope_id=tenant_a.workspace.pk, role=Role.CONTRIBUTOR)
    key = tenant_a.issue_key(owner=agent, role=Role.CONTRIBUTOR)

    _, (proposed,) = call(server, key.plaintext, ("propose", PROPOSAL))
    body = proposed.structured_content
    assert not proposed.is_error, proposed.content
    assert (body["status"], body["created"]) == ("proposed", True)
    while process_outbox():  # whatever the outbox holds, nothing makes a proposal searchable
        pass
    assert not _found(server, key.plaintext, body["claim_id"])

    sign_in(page, live_server.url, tenant_a.reviewer.get_username())
    page.goto(f"{live_server.url}/review/?queue=proposals")
    row = page.locator(f"#item-{body['claim_id']}")
    expect(row).to_contain_text("k8s-prod-9")
    expect(row).to_contain_text(f"Proposed by api-key:{key.key.prefix}")
    expect(row).to_contain_text("tier 4")
    page.screenshot(path=str(ARTIFACTS / "mcp-proposal-queue.png"), full_page=True)
    row.get_by_role("button", name="Accept").click()
    expect(row).to_have_text(f"Published #{body['claim_id']}.")

    while process_outbox():
        pass
    assert _found(server, key.plaintext, body["claim_id"])


def test_a_viewer_key_cannot_propose_over_mcp(server: McpServer, tenant_a: Tenant) -> None:
    key = tenant_a.issue_key(owner=tenant_a.viewer).plaintext
    _, (refused,) = call(server, key, ("propose", PROPOSAL))
    assert refused.is_error
    assert "vera:propose" in refused.content[0].text
