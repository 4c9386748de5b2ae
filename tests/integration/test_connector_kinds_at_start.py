"""A connector kind half-wired stops the process at start: Django's set-up (every web,
worker, beat and MCP process runs it) refuses a kind without an extraction declared."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

START = "import django; django.setup(); print('started')"
# The same start, after a new kind's declaration was left out (Slack's, here).
HALF_WIRED = (
    "from curation.domain import connector_config as c, sources as s; "
    "c.KINDS = {k: v for k, v in c.KINDS.items() if k is not s.ConnectorKind.SLACK}; " + START
)


def _start(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "vera.settings.test"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_kind_without_extractors_stops_the_process_at_start() -> None:
    whole = _start(START)
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.strip() == "started"
    half = _start(HALF_WIRED)
    assert half.returncode != 0
    assert "started" not in half.stdout
    assert "ImproperlyConfigured" in half.stderr
    assert "connector kind 'slack' declares no rules and no extraction" in half.stderr
