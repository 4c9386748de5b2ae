"""A reviewer works the review queues in Chromium, end to end, against real ingested claims."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from curation.domain.outbox import Consumer
from curation.domain.tiers import ClaimStatus, Verification
from curation.models import Claim, MergeCandidate, OutboxJob
from curation.services.entities import entity_resolve
from tenants import rls
from tests.support.browser import sign_in
from tests.support.fake_embedders import FixedEmbedder
from tests.support.ingest import ingest_folder
from tests.support.tenancy import Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

RUNS_ON = "The billing-api runs on k8s-prod-1."
DEPENDS_ON = "The billing-api depends on ledger-db."
USES = "The checkout-web uses redis-7."
PENDING = ["DEPENDS_ON", "RUNS_ON", "STATES", "USES"]


def _claim(tenant: Tenant, predicate: str) -> Claim:
    """The claim as the database has it now (read as the workspace admin, under RLS)."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.select_related("object_entity", "reviewed_by").get(predicate=predicate)


def _outbox_jobs(tenant: Tenant, claim: Claim) -> int:
    """The graph's projection jobs for the claim (the index has its own twin of each)."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return OutboxJob.objects.filter(
            kind="claim.project", payload__claim_id=claim.pk, consumer=Consumer.GRAPH
        ).count()


@pytest.fixture
def pending(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """Four tier-3 claims waiting for review in Acme's workspace: three relations and
    the STATES claim every passage of a document becomes."""
    platform = {"platform.md": f"# Platform\n\n{RUNS_ON} {DEPENDS_ON} {USES}\n"}
    ingest_folder(tenant_a, tmp_path / "pending", platform, tier=3, name="docs-tier-3")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        waiting = Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW)
        assert sorted(waiting.values_list("predicate", flat=True)) == PENDING
    return tenant_a


@pytest.fixture
def proposed(tenant_a: Tenant, tmp_path: Path) -> Tenant:
    """One tier-4 proposal in Acme's workspace."""
    search = {"search.md": "# Search\n\nThe search-api uses elastic-8.\n"}
    ingest_folder(tenant_a, tmp_path / "proposed", search, tier=4, name="docs-tier-4")
    return tenant_a


def _open_queue(page: Page, base: str, queue: str = "claims") -> None:
    page.goto(f"{base}/review/?queue={queue}")
    expect(page.get_by_role("heading", name="Review")).to_be_visible()


def _row(page: Page, claim: Claim) -> Locator:
    return page.locator(f"#item-{claim.pk}")


def _row_ids(page: Page) -> list[int]:
    """The claim ids of the undecided rows, top to bottom."""
    ids = page.locator("tr.item").evaluate_all("rows => rows.map((row) => row.id)")
    return [int(item.removeprefix("item-")) for item in ids]


def _count(page: Page, queue: str) -> Locator:
    return page.locator(f"#queue-tabs [data-queue={queue}]")


def _snapshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def reviewer_page(page: Page, live_server, pending: Tenant) -> Page:
    """Acme's reviewer, signed in through the login page, looking at the claims queue."""
    sign_in(page, live_server.url, pending.reviewer.get_username())
    _open_queue(page, live_server.url)
    expect(page.locator("tr.item")).to_have_count(len(PENDING))
    return page


@pytest.fixture
def second_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """Another browser (its own cookies), screenshotted like `page`."""
    context = browser.new_context()
    other = context.new_page()
    other.set_default_timeout(15_000)
    yield other
    _snapshot(other, f"{request.node.name}-second")
    context.close()


def test_approving_a_claim_publishes_it_and_updates_the_count(
    reviewer_page: Page, pending: Tenant
) -> None:
    page = reviewer_page
    claim = _claim(pending, "RUNS_ON")
    expect(_row(page, claim)).to_contain_text(RUNS_ON)
    expect(_row(page, claim).locator("td.evidence q")).to_contain_text("runs on k8s-prod-1")
    expect(_count(page, "claims")).to_have_text("4")
    _snapshot(page, "queue-claims")

    _row(page, claim).get_by_role("button", name="Approve", exact=True).click()

    expect(_row(page, claim)).to_have_text(f"Published #{claim.pk}.")
    expect(_count(page, "claims")).to_have_text("3")
    expect(page.locator("#queue-tabs a.active")).to_contain_text("Claims")  # still on this tab
    claim = _claim(pending, "RUNS_ON")
    assert claim.status == ClaimStatus.PUBLISHED
    assert claim.verification == Verification.HUMAN_VERIFIED
    assert claim.reviewed_by_id == pending.reviewer.pk
    assert _outbox_jobs(pending, claim) == 1
    assert _claim(pending, "DEPENDS_ON").status == ClaimStatus.PENDING_REVIEW


def test_rejecting_with_a_reason_keeps_the_reason(reviewer_page: Page, pending: Tenant) -> None:
    page = reviewer_page
    claim = _claim(pending, "DEPENDS_ON")
    row = _row(page, claim)
    row.get_by_label("reason").fill("ledger-db was retired last year")

    row.get_by_role("button", name="Reject", exact=True).click()

    expect(row).to_have_text("Rejected")
    expect(_count(page, "claims")).to_have_text("3")
    claim = _claim(pending, "DEPENDS_ON")
    assert claim.status == ClaimStatus.REJECTED
    assert claim.status_reason == "ledger-db was retired last year"
    assert claim.reviewed_by_id == pending.reviewer.pk
    assert _outbox_jobs(pending, claim) == 0


def test_rejecting_is_refused_by_the_browser_when_the_reason_is_empty(
    reviewer_page: Page, pending: Tenant
) -> None:
    page = reviewer_page
    claim = _claim(pending, "DEPENDS_ON")
    posted: list[str] = []
    page.on("request", lambda request: request.method == "POST" and posted.append(request.url))
    row = _row(page, claim)
    reason = row.get_by_label("reason")

    row.get_by_role("button", name="Reject", exact=True).click()

    expect(reason).to_be_focused()  # the browser's required-field check stopped the submit
    assert reason.evaluate("input => input.validity.valueMissing") is True
    expect(row.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    expect(_count(page, "claims")).to_have_text("4")
    assert posted == []
    after = _claim(pending, "DEPENDS_ON")
    assert (after.status, after.version, after.reviewed_by_id) == (
        ClaimStatus.PENDING_REVIEW,
        claim.version,
        None,
    )


def test_editing_then_approving_publishes_the_corrected_object(
    reviewer_page: Page, pending: Tenant
) -> None:
    page = reviewer_page
    claim = _claim(pending, "RUNS_ON")
    row = _row(page, claim)
    row.locator("summary", has_text="Edit").click()
    row.get_by_label("Fact").fill("The billing-api runs on k8s-prod-9.")
    row.get_by_label("Object").fill("k8s-prod-9")

    row.get_by_role("button", name="Save and approve").click()

    expect(row).to_have_text(f"Edited and published #{claim.pk}.")
    expect(_count(page, "claims")).to_have_text("3")
    claim = _claim(pending, "RUNS_ON")
    assert claim.status == ClaimStatus.PUBLISHED
    assert claim.verification == Verification.HUMAN_VERIFIED
    assert claim.fact_text == "The billing-api runs on k8s-prod-9."
    assert claim.object_entity is not None
    assert claim.object_entity.canonical_name == "k8s-prod-9"
    assert _outbox_jobs(pending, claim) == 1


def test_accepting_a_proposal_publishes_it(page: Page, live_server, proposed: Tenant) -> None:
    sign_in(page, live_server.url, proposed.reviewer.get_username())
    _open_queue(page, live_server.url)
    expect(_count(page, "proposals")).to_have_text("2")
    page.locator("#queue-tabs a", has_text="Proposals").click()
    claim = _claim(proposed, "USES")
    row = _row(page, claim)
    expect(row).to_contain_text("The search-api uses elastic-8.")
    expect(row).to_contain_text("tier 4")
    _snapshot(page, "queue-proposals")

    row.get_by_role("button", name="Accept").click()

    expect(row).to_have_text(f"Published #{claim.pk}.")
    expect(_count(page, "proposals")).to_have_text("1")
    claim = _claim(proposed, "USES")
    assert claim.status == ClaimStatus.PUBLISHED
    assert claim.reviewed_by_id == proposed.reviewer.pk
    assert _outbox_jobs(proposed, claim) == 1


def test_bulk_approval_publishes_only_the_selected_claims(
    reviewer_page: Page, pending: Tenant
) -> None:
    page = reviewer_page
    runs, deps = _claim(pending, "RUNS_ON"), _claim(pending, "DEPENDS_ON")
    _row(page, runs).get_by_role("checkbox").check()
    _row(page, deps).get_by_role("checkbox").check()

    page.get_by_role("button", name="Approve selected").click()

    statuses = page.get_by_role("status")
    expect(statuses.first).to_have_text("Approved 2 claim(s).")
    for decided in (runs, deps):  # and what each approval came to, in the service's words
        expect(statuses.filter(has_text=f"Published #{decided.pk}.")).to_have_count(1)
    expect(page.locator("tr.item")).to_have_count(2)
    expect(_count(page, "claims")).to_have_text("2")
    for predicate in ("RUNS_ON", "DEPENDS_ON"):
        claim = _claim(pending, predicate)
        assert claim.status == ClaimStatus.PUBLISHED, predicate
        assert claim.reviewed_by_id == pending.reviewer.pk
        assert _outbox_jobs(pending, claim) == 1
    for predicate in ("USES", "STATES"):
        untouched = _claim(pending, predicate)
        assert (untouched.status, untouched.reviewed_by_id) == (ClaimStatus.PENDING_REVIEW, None)


def test_keyboard_approves_then_rejects_with_a_reason(reviewer_page: Page, pending: Tenant) -> None:
    page = reviewer_page
    rows = page.locator("tr.item")
    first_id, second_id, third_id = _row_ids(page)[:3]

    page.keyboard.press("j")
    expect(rows.nth(0)).to_be_focused()
    page.keyboard.press("a")
    expect(page.locator(f"#item-{first_id}")).to_have_text(f"Published #{first_id}.")
    second = page.locator(f"#item-{second_id}")
    expect(second).to_be_focused()  # after a decision the next row takes the focus
    page.keyboard.press("r")
    reason = second.get_by_label("reason")
    expect(reason).to_be_focused()  # r on an empty reason asks for one first
    page.keyboard.type("duplicate of the wiki page")
    page.keyboard.press("Enter")

    expect(second).to_have_text("Rejected")
    expect(_count(page, "claims")).to_have_text("2")
    third = page.locator(f"#item-{third_id}")
    expect(third).to_be_focused()  # the form's decision moves on to the next row too
    page.keyboard.press("k")
    expect(third).to_be_focused()  # decided rows are skipped: it is the first undecided
    page.keyboard.press("j")
    expect(rows.nth(1)).to_be_focused()
    with rls.tenant_context(pending.principal(pending.admin)):
        claims = Claim.objects.in_bulk([first_id, second_id, third_id])
    assert claims[first_id].status == ClaimStatus.PUBLISHED
    assert claims[first_id].verification == Verification.HUMAN_VERIFIED
    assert claims[second_id].status == ClaimStatus.REJECTED
    assert claims[second_id].status_reason == "duplicate of the wiki page"
    assert claims[third_id].status == ClaimStatus.PENDING_REVIEW


def test_keyboard_r_again_rejects_once_the_reason_is_typed(
    reviewer_page: Page, pending: Tenant
) -> None:
    page = reviewer_page
    first_id, second_id = _row_ids(page)[:2]
    first = page.locator(f"#item-{first_id}")

    page.keyboard.press("j")
    page.keyboard.press("r")
    expect(first.get_by_label("reason")).to_be_focused()
    page.keyboard.type("the doc is a draft")
    page.keyboard.press("Tab")  # out of the field: keys are shortcuts again
    page.keyboard.press("r")

    expect(first).to_have_text("Rejected")
    expect(page.locator(f"#item-{second_id}")).to_be_focused()
    expect(_count(page, "claims")).to_have_text("3")
    with rls.tenant_context(pending.principal(pending.admin)):
        claims = Claim.objects.in_bulk([first_id, second_id])
    assert (claims[first_id].status, claims[first_id].status_reason) == (
        ClaimStatus.REJECTED,
        "the doc is a draft",
    )
    assert claims[second_id].status == ClaimStatus.PENDING_REVIEW


def test_the_second_reviewer_sees_who_decided_first(
    reviewer_page: Page, second_page: Page, live_server, pending: Tenant
) -> None:
    admin = second_page
    sign_in(admin, live_server.url, pending.admin.get_username())
    _open_queue(admin, live_server.url)
    claim = _claim(pending, "RUNS_ON")
    expect(_row(admin, claim)).to_contain_text(RUNS_ON)

    _row(reviewer_page, claim).get_by_role("button", name="Approve", exact=True).click()
    expect(_row(reviewer_page, claim)).to_have_text(f"Published #{claim.pk}.")
    late = _row(admin, claim)
    late.get_by_label("reason").fill("looks stale")
    late.get_by_role("button", name="Reject", exact=True).click()

    expect(late).to_have_text("Already published by acme-reviewer.")
    expect(late).to_have_class("decided conflict")
    claim = _claim(pending, "RUNS_ON")
    assert claim.status == ClaimStatus.PUBLISHED
    assert claim.reviewed_by_id == pending.reviewer.pk
    assert claim.status_reason != "looks stale"
    assert _outbox_jobs(pending, claim) == 1  # published once


def test_merge_candidates_are_listed_and_can_be_kept_apart(
    page: Page, live_server, tenant_a: Tenant
) -> None:
    embedder = FixedEmbedder()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        for name in ("auth service", "login gateway"):
            entity_resolve(group_id=tenant_a.workspace.group_id, name=name, embedder=embedder)
        candidate = MergeCandidate.objects.get()
    sign_in(page, live_server.url, tenant_a.reviewer.get_username())
    _open_queue(page, live_server.url, "merges")
    row = page.locator(f"#item-{candidate.pk}")
    expect(row).to_contain_text("login gateway")
    expect(row).to_contain_text("auth service")
    expect(row).to_contain_text("0.90")
    _snapshot(page, "queue-merges")

    row.get_by_role("button", name="Keep apart").click()

    expect(row).to_have_text("Kept apart")
    expect(_count(page, "merges")).to_have_text("0")
    expect(page.locator("#queue-tabs a.active")).to_contain_text("Merge candidates")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        candidate.refresh_from_db()
    assert candidate.status == MergeCandidate.Status.KEPT_APART


def test_a_reviewer_of_another_workspace_sees_the_empty_queue(
    page: Page, live_server, pending: Tenant, tenant_b: Tenant
) -> None:
    sign_in(page, live_server.url, tenant_b.reviewer.get_username())
    _open_queue(page, live_server.url)

    expect(page.locator("td.empty")).to_have_text("Nothing waiting here. Well done.")
    expect(page.locator("tr.item")).to_have_count(0)
    for queue in ("claims", "proposals", "merges"):
        expect(_count(page, queue)).to_have_text("0")
    body = page.locator("main")
    for fact in ("billing-api", "k8s-prod-1", "ledger-db", "checkout-web"):
        expect(body).not_to_contain_text(fact)
    with rls.tenant_context(pending.principal(pending.admin)):
        assert Claim.objects.filter(status=ClaimStatus.PENDING_REVIEW).count() == len(PENDING)
