"""What browser tests share: signing in through the real login form."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.tenancy import PASSWORD


def sign_in(page: Page, base: str, username: str) -> None:
    """Sign in with the test password and wait for the landing page's greeting."""
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name=f"Welcome, {username}")).to_be_visible()
