"""Production settings are safe by default and refuse to start half-configured."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, "
    "s.ALLOWED_HOSTS, s.VERA_MEMORY__GRAPH_BACKEND)"
)


def _production(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "VERA_MEMORY"))}
    clean.update(DJANGO_SETTINGS_MODULE="vera.settings.production", **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True
    )


def test_production_refuses_to_start_without_a_secret_key() -> None:
    result = _production(DJANGO_ALLOWED_HOSTS="vera.example.org")
    assert result.returncode != 0
    assert "Set DJANGO_SECRET_KEY" in result.stderr


def test_production_refuses_to_start_without_allowed_hosts() -> None:
    result = _production(DJANGO_SECRET_KEY="x" * 50)
    assert result.returncode != 0
    assert "Set DJANGO_ALLOWED_HOSTS" in result.stderr


def test_production_defaults_are_secure_and_use_neo4j() -> None:
    result = _production(DJANGO_SECRET_KEY="x" * 50, DJANGO_ALLOWED_HOSTS="vera.example.org")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "False",
        "True",
        "True",
        "True",
        "['vera.example.org']",
        "neo4j",
    ]


def test_a_malformed_boolean_is_a_clear_error() -> None:
    result = _production(
        DJANGO_SECRET_KEY="x" * 50, DJANGO_ALLOWED_HOSTS="h", DJANGO_SECURE_SSL_REDIRECT="maybe"
    )
    assert result.returncode != 0
    assert "DJANGO_SECURE_SSL_REDIRECT='maybe' is not a boolean" in result.stderr


def test_an_old_variable_name_still_reaches_its_setting_and_the_start_names_it() -> None:
    probe = (
        "import django; django.setup(); from django.conf import settings as s; "
        "from django.core.management import call_command; "
        "print(s.VERA_NEO4J__URI, s.VERA_AUTH_FAILURE__LIMIT); "
        "call_command('check')"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERA_NEO4J")}
    env.update(
        VERA_NEO4J_URI="bolt://graph.example:7687",  # old name only: carried over
        VERA_AUTH_FAILURE_LIMIT="3",
        VERA_AUTH_FAILURE__LIMIT="7",  # both: the new name wins
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["bolt://graph.example:7687", "7"]
    assert "(vera.W001) VERA_NEO4J_URI is an old name: rename it VERA_NEO4J__URI" in result.stderr
    assert "VERA_AUTH_FAILURE_LIMIT is ignored: VERA_AUTH_FAILURE__LIMIT is set" in result.stderr


def test_old_names_are_carried_over_and_the_new_name_wins() -> None:
    from vera.settings.env import adopt_renamed

    environ = {
        "VERA_WORKER_WARM_EMBEDDER": "false",
        "VERA_LOG_LEVEL": "DEBUG",
        "VERA_LOG__LEVEL": "WARNING",
        "VERA_CACHE_URL": "redis://x/1",
        "VERA_CACHE__URL": "redis://x/1",  # the same value twice: nothing to say but rename
        "VERA_SOURCE_SECRET_ACME_WIKI": "token",
        "VERA_SOURCE_SECRET__JIRA": "kept",
        "VERA_UNRELATED_THING": "untouched",
    }
    notes = adopt_renamed(environ)
    assert environ["VERA_WORKER__WARM_EMBEDDER"] == "false"
    assert environ["VERA_LOG__LEVEL"] == "WARNING"
    assert environ["VERA_SOURCE_SECRET__ACME_WIKI"] == "token"
    assert "VERA_SOURCE_SECRET___JIRA" not in environ
    assert "VERA_UNRELATED__THING" not in environ
    assert notes == [
        "VERA_CACHE_URL is an old name: rename it VERA_CACHE__URL",
        "VERA_LOG_LEVEL is ignored: VERA_LOG__LEVEL is set; remove VERA_LOG_LEVEL",
        "VERA_SOURCE_SECRET_ACME_WIKI is an old name: rename it VERA_SOURCE_SECRET__ACME_WIKI",
        "VERA_WORKER_WARM_EMBEDDER is an old name: rename it VERA_WORKER__WARM_EMBEDDER",
    ]
    assert adopt_renamed({"VERA_WORKER__WARM_EMBEDDER": "x"}) == []


def _worker_memory_limit(mb: str) -> str:
    """Celery's worker_max_memory_per_child (KiB) in a process given VERA_WORKER__MAX_MEMORY_MB."""
    probe = "from vera.celery import app; print(app.conf.worker_max_memory_per_child)"
    env = {**os.environ, "VERA_WORKER__MAX_MEMORY_MB": mb}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_worker_memory_limit_reaches_celery_in_kib_when_set() -> None:
    assert _worker_memory_limit("512") == str(512 * 1024)


def test_worker_memory_limit_is_off_when_zero() -> None:
    assert _worker_memory_limit("0") == "None"


def test_a_worker_warms_the_model_behind_its_cache_not_the_cache() -> None:
    from vera.celery import warm_up

    class Model:
        loaded = 0

        def warm_up(self) -> None:
            self.loaded += 1

        def embed(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("warming must not embed through the wrappers")

    class Wrapper:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[0.0]]  # a cache hit: the model behind it would stay unloaded

    model = Model()
    warm_up(Wrapper(Wrapper(model)))
    assert model.loaded == 1


def test_warming_is_skipped_when_off_and_a_failure_does_not_stop_the_process(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from vera.celery import warm_embedder

    class Model:
        loaded = 0

        def warm_up(self) -> None:
            self.loaded += 1

    model = Model()
    settings.VERA_WORKER__WARM_EMBEDDER = False
    warm_embedder(lambda: model)
    assert model.loaded == 0

    settings.VERA_WORKER__WARM_EMBEDDER = True
    warm_embedder(lambda: model)
    assert model.loaded == 1

    def provider_down() -> Model:
        raise ConnectionError("provider down")

    with caplog.at_level(logging.WARNING, logger="vera.celery"):
        warm_embedder(provider_down)  # logged, not raised
    assert "the embedder could not be warmed up" in caplog.text


def test_local_sources_read_one_dedicated_folder_and_reach_no_network_by_default() -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "VERA_"))}
    probe = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.VERA_SOURCES__FILE_ROOTS, s.VERA_SOURCES__ALLOWED_HOSTS)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
        env={**clean, "DJANGO_SETTINGS_MODULE": "vera.settings.local"},
    )  # fmt: skip
    assert result.stdout.strip() == f"{[str(ROOT / 'var' / 'sources')]} []"
