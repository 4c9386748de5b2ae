"""A newcomer's first run in Chromium: the styled sign-in page, then the seeded demo.

`seed_demo` (what `make run` calls) ingests the bundled sample through the real
connectors; the reviewer it creates signs in and finds work waiting and answers.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-demo-password"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture
def demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The demo workspace as `make run` leaves it, the reviewer's password known."""
    monkeypatch.setenv("VERA_DEMO_REVIEWER_PASSWORD", PASSWORD)
    call_command("seed_demo", sources_dir=tmp_path / "demo", stdout=StringIO())


def _sign_in(page: Page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "reviewer")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Welcome, reviewer")).to_be_visible()


def _snapshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_sign_in_page_has_the_portal_frame_when_signed_out(page: Page, live_server) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    expect(page.locator("header.topbar .brand")).to_have_text("VERA")
    expect(page.locator("link[rel=stylesheet][href$='vera/vera.css']")).to_have_count(1)
    expect(page.locator("main.account button.primary[type=submit]")).to_have_text("Sign In")
    expect(page).to_have_title("Sign In · VERA")


def test_sign_in_page_offers_no_sign_up_when_sign_up_is_closed(page: Page, live_server) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    expect(page.locator("input[name=login]")).to_be_visible()
    expect(page.locator("a[href*='signup']")).to_have_count(0)
    expect(page.get_by_text("sign up", exact=False)).to_have_count(0)


def test_reviewer_finds_seeded_queues_when_demo_is_seeded(
    demo: None, page: Page, live_server
) -> None:
    _sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/review/?queue=claims")
    expect(page.locator("#count-claims")).not_to_have_text("0")
    expect(page.locator("#count-proposals")).not_to_have_text("0")
    # The stale runbook's host, with the CMDB's published one it would supersede.
    runs_on = page.locator(".spo code", has_text="RUNS_ON")
    stale = page.locator("tr.item", has_text="vm-pay-01", has=runs_on)
    expect(stale).to_contain_text("payments-api runs on k8s-prod-2.")
    _snapshot(page, "first_run_claims_queue")
    page.goto(f"{live_server.url}/review/?queue=proposals")
    chat = page.locator("tr.item", has_text="k8s-prod-3", has=runs_on)
    expect(chat).to_contain_text("billing-api runs on k8s-prod-1.")
    _snapshot(page, "first_run_proposals_queue")


def test_reviewer_finds_a_search_hit_when_demo_is_seeded(
    demo: None, page: Page, live_server
) -> None:
    _sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/search/")
    page.fill("input[name=q]", "where does payments-api run")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("ol.hits li").first).to_be_visible()
    expect(page.locator("ol.hits")).to_contain_text("payments-api runs on k8s-prod-2.")
