"""The login page works in a real browser and leads to the signed-in home page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_user_signs_in_through_the_login_page(page: Page, live_server) -> None:
    get_user_model().objects.create_user(username="rita", password="correct-horse-battery")
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/accounts/login/?next=/")
    page.fill("input[name=login]", "rita")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Welcome, rita")).to_be_visible()


def test_wrong_password_keeps_the_user_on_the_login_page(page: Page, live_server) -> None:
    get_user_model().objects.create_user(username="rita", password="correct-horse-battery")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=login]", "rita")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    expect(page.get_by_text("not correct")).to_be_visible()
    expect(page).to_have_url(f"{live_server.url}/accounts/login/")


def test_htmx_is_served_from_static(page: Page, live_server) -> None:
    response = page.request.get(f"{live_server.url}/static/vendor/htmx/htmx.min.js")
    assert response.status == 200
    assert "htmx" in response.text()[:2000]
