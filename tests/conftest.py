"""Shared fixtures: the test database is built by the owner role, tests run as the app role."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dj_database_url
import pytest
from django.conf import settings
from django.db import connections
from psycopg import sql

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from devtools.graph_server import GraphServer
    from tests.support.s3_server import S3Server
    from tests.support.tenancy import Tenant

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
# pytest's tmp_path folders live in the test profile's one allowed file root for sources
# (vera.settings.test TEST_SOURCES_DIR), not in the temp folder, which sources may not
# read. PYTEST_DEBUG_TEMPROOT is where pytest numbers its `pytest-of-<user>/pytest-N`.
TEST_SOURCES_DIR = Path(__file__).resolve().parent.parent / "var" / "test-sources"
TEST_SOURCES_DIR.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", str(TEST_SOURCES_DIR))


NO_SERVERS_MESSAGE = (
    "This test needs the test-profile servers: run `make test`, or first "
    '`eval "$(bin/vera services start --profile test --print-env)"` then pytest. '
    "Only tests/unit runs without them."
)


@pytest.fixture(scope="session")
def test_servers() -> None:
    """Stop at once, saying what to do, when a test needs servers that were not started."""
    if os.environ.get("VERA_TEST__NO_SERVERS"):
        pytest.exit(NO_SERVERS_MESSAGE, returncode=2)


@pytest.fixture(scope="session")
def django_db_setup(
    test_servers: None, django_db_setup: None, django_db_blocker: pytest.FixtureRequest
) -> Iterator[None]:
    """After pytest-django created and migrated the test DB as the owner, switch to the app role.

    Every test then talks to Postgres exactly as web, worker and beat do: as a role that
    is neither superuser nor BYPASSRLS and owns nothing.
    """
    app = dj_database_url.parse(os.environ["DATABASE_URL"])
    connection = connections["default"]
    with django_db_blocker.unblock(), connection.cursor() as cursor:  # type: ignore[attr-defined]
        # Test-only: pytest-django empties tables between transactional tests with TRUNCATE.
        cursor.execute(
            sql.SQL("GRANT TRUNCATE ON ALL TABLES IN SCHEMA public TO {}")
            .format(sql.Identifier(settings.VERA_DB__APP_ROLE))
            .as_string(cursor.cursor)
        )
        # Test-only: a test of a query plan refreshes the statistics of the rows it made
        # (ANALYZE, inside its transaction), so the plan is the one those rows get, not
        # one for whatever an auto-analyze saw between two earlier tests (an empty table).
        cursor.execute(
            sql.SQL("GRANT MAINTAIN ON ALL TABLES IN SCHEMA public TO {}")
            .format(sql.Identifier(settings.VERA_DB__APP_ROLE))
            .as_string(cursor.cursor)
        )
    connection.close()
    owner = {key: connection.settings_dict[key] for key in ("USER", "PASSWORD")}
    connection.settings_dict.update(USER=app["USER"], PASSWORD=app["PASSWORD"])
    yield
    connection.close()
    connection.settings_dict.update(owner)  # dropping the test DB is the owner's job


@pytest.fixture
def app_database_url() -> str:
    """DATABASE_URL for a child process (worker, server) that must use the test database."""
    app = dj_database_url.parse(os.environ["DATABASE_URL"])
    name = connections["default"].settings_dict["NAME"]
    return f"postgres://{app['USER']}:{app['PASSWORD']}@{app['HOST']}:{app['PORT']}/{name}"


def _chromium() -> str | None:
    return os.environ.get("VERA_TEST__CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium driven by Playwright (never a downloaded browser build)."""
    executable = _chromium()
    if executable is None:
        pytest.skip("Chromium is not installed (make test installs it with apt-get as root)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests
    # make around it are ordinary synchronous calls, so Django's guard does not apply.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh browser context per test; a screenshot is kept in test-artifacts/."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.fixture
def tenant_a(db: None) -> Tenant:
    from tests.support.tenancy import make_tenant

    return make_tenant("Acme")


@pytest.fixture
def tenant_b(db: None) -> Tenant:
    from tests.support.tenancy import make_tenant

    return make_tenant("Globex")


@pytest.fixture
def graph_server(tmp_path: Path) -> Iterator[GraphServer]:
    """A FalkorDB server of the test's own (its `stop()` is an outage), as the graph."""
    from django.test import override_settings

    from devtools.common import ServiceError
    from devtools.graph_server import GraphServer

    server = GraphServer(tmp_path / "graph")
    try:
        server.start()
    except ServiceError as error:
        pytest.fail(str(error))
    with override_settings(VERA_MEMORY__FALKORDB_URL=server.url):
        yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 API server for the whole session, reached over HTTP (never patched in)."""
    from tests.support.s3_server import S3Server

    server = S3Server(tmp_path_factory.mktemp("s3") / "moto.log")
    server.start()
    yield server
    server.stop()


def _object_store_at(server: S3Server, settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point VERA's object store at a fresh bucket of `server`; its name."""
    import secrets

    from tests.support.s3_server import CREDENTIALS

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no other credential source
    bucket = f"vera-test-{secrets.token_hex(6)}"
    server.client().create_bucket(Bucket=bucket)
    settings.VERA_OBJECT_STORE__BACKEND = "s3"
    settings.VERA_OBJECT_STORE__ENDPOINT_URL = server.url
    settings.VERA_OBJECT_STORE__BUCKET = bucket
    return bucket


@pytest.fixture
def s3_bucket(s3_server: S3Server, settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """VERA's object store is S3 (the session's moto server), in a bucket of the test's own."""
    return _object_store_at(s3_server, settings, monkeypatch)


@pytest.fixture
def s3_outage(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """VERA's object store is an S3 server of the test's own: its `stop()` is an outage.

    botocore does not retry here (VERA_OBJECT_STORE__RETRIES=0), so a refused
    connection fails a call at once instead of after botocore's backoff.
    """
    from tests.support.s3_server import S3Server

    server = S3Server(tmp_path / "moto.log")
    server.start()
    _object_store_at(server, settings, monkeypatch)
    settings.VERA_OBJECT_STORE__RETRIES = 0
    yield server
    server.stop()
