"""The sign-in page a newcomer meets: the portal's frame, and no sign-up while it is closed.

The demo behind it, on a real `make run`, is tests/e2e/test_make_run.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


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
