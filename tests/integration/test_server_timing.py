"""Server-Timing: every response says how long the Django stack took (the benches read it)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db
APP_METRIC = re.compile(r"(?:^|,\s*)app;dur=(\d+\.\d)(?:$|,)")


def _app_ms(header: str | None) -> float:
    match = APP_METRIC.search(header or "")
    assert match, f"no app;dur metric in {header!r}"
    return float(match.group(1))


def test_server_timing_is_a_positive_duration_when_a_view_answers(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert _app_ms(response.headers.get("Server-Timing")) > 0


def test_server_timing_is_present_when_the_url_is_unknown(client: Client) -> None:
    response = client.get("/no-such-page")
    assert response.status_code == 404
    assert _app_ms(response.headers.get("Server-Timing")) >= 0
