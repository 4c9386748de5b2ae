"""Shared set-up for benchmarks: the test-profile servers and a fresh `vera_bench` database.

Migrations run as the owner role; the measured work runs as the application role,
exactly as web and worker do.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Django models load only after setup_django()
    from tenants.domain.access import Principal
    from tenants.models import Scope

ROOT = Path(__file__).resolve().parent.parent


def db_name() -> str:
    """The bench database's name: VERA_BENCH__DB, else `vera_bench` (read at call time)."""
    return os.environ.get("VERA_BENCH__DB", "vera_bench")


def _service_env() -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "devtools.services", "start", "--profile", "test", "--print-env"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    env = {}
    for line in out.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = shlex.split(value)[0] if value else ""
    return env


def _with_db(url: str, name: str) -> str:
    return url.rsplit("/", 1)[0] + f"/{name}"


def setup_django(*, fresh: bool = True) -> None:
    """Start services, (re)create the bench database, migrate as owner, then act as the app role.

    `fresh=False` keeps the database and its data when it exists (creating it if not).
    """
    env = _service_env()
    os.environ.update(env)
    import psycopg

    owner, name = env["DATABASE_OWNER_URL"], db_name()
    with psycopg.connect(_with_db(owner, "postgres"), autocommit=True) as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = _with_db(owner, name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("VERA_OBJECT_STORE__ROOT", str(ROOT / ".devservices" / "bench-objects"))
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench")
    # The benchmarks write their corpora under the temp folder: an operator's choice for
    # the bench's own database (the local settings' default is var/sources alone).
    os.environ.setdefault("VERA_SOURCES__FILE_ROOTS", tempfile.gettempdir())
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    import dj_database_url

    app = dj_database_url.parse(env["DATABASE_URL"])
    connection = connections["default"]
    connection.close()
    connection.settings_dict.update(USER=app["USER"], PASSWORD=app["PASSWORD"])


@contextmanager
def child_process(
    args: list[str], env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours (a worker, beat, gunicorn) run from the checkout with its output in
    `log`; on exit it gets SIGTERM and a minute to stop, then SIGKILL."""
    with log.open("wb") as out:
        child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603
    try:
        yield child
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextmanager
def timed() -> Iterator[list[float]]:
    """`with timed() as t: ...` then t[0] is the elapsed seconds."""
    box: list[float] = []
    started = time.perf_counter()
    yield box
    box.append(time.perf_counter() - started)


def analyze() -> None:
    """Refresh planner statistics after bulk loading, as autovacuum would a little later.

    Runs as the owner role (DATABASE_URL still names it here); the app role may not.
    """
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("ANALYZE")


def bench_workspace(org: str, name: str) -> tuple[Scope, Principal]:
    """A new workspace `name` under the organisation `org` (made unless it exists) and the
    system principal a benchmark acts as there."""
    from tenants.domain.scopes import ScopeKind
    from tenants.models import Scope
    from tenants.selectors import principal_system
    from tenants.usecases import scope_create

    parent = Scope.objects.filter(kind=ScopeKind.ORGANISATION, name=org).first()
    parent = parent or scope_create(kind=ScopeKind.ORGANISATION, name=org)
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name=name, parent_id=parent.pk)
    return workspace, principal_system("bench", group_ids=[workspace.group_id])


def markdown_source(
    principal: Principal,
    group_id: str,
    root: Path,
    *,
    name: str,
    tier: int = 1,
    kind: str = "markdown",
) -> int:
    """A source of a folder kind (Markdown, or conversations) over `root` in the
    workspace, created through `source_create`; returns its id."""
    from curation.usecases import source_create
    from tenants import rls

    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=group_id, name=name, kind=kind,
            config={"root": str(root)}, trust_tier=tier,
        )  # fmt: skip
    return source.pk


def drain_outbox(consumer: str | None = None) -> None:
    """Run the outbox (every consumer, or the one named) in this process until none is due."""
    from curation.tasks import process_outbox

    while process_outbox(consumer=consumer):
        pass


def lift_rate_limits(scope_id: int) -> None:
    """Raise the REST API's rate limits of the workspace a benchmark's key belongs to.

    A benchmark sends thousands of searches a minute through one key, far past the
    production defaults (VERA_RATE_LIMIT__*): it measures search, not the limiter's 429s.
    """
    from tenants.models import Scope

    unlimited = 2**31 - 1  # the largest a PositiveIntegerField holds
    Scope.objects.filter(pk=scope_id).update(
        search_limit=unlimited, write_limit=unlimited,
        principal_search_limit=unlimited, principal_write_limit=unlimited,
    )  # fmt: skip


def workspace_viewer_key(workspace_pk: int, *, prefix: str) -> str:
    """A viewer's API key for the workspace, issued by its admin (users `<prefix>-admin`
    and `<prefix>-viewer`, made here), rate limits lifted: what a benchmark's HTTP reads
    send, so they run exactly as a client's would."""
    from django.contrib.auth import get_user_model

    from tenants import rls
    from tenants.domain.scopes import Role
    from tenants.selectors import principal_for_user
    from tenants.usecases import api_key_issue, membership_grant

    users = get_user_model().objects
    admin = users.create_user(username=f"{prefix}-admin")
    viewer = users.create_user(username=f"{prefix}-viewer")
    membership_grant(user_id=admin.pk, scope_id=workspace_pk, role=Role.ADMIN)
    membership_grant(user_id=viewer.pk, scope_id=workspace_pk, role=Role.VIEWER)
    actor = principal_for_user(admin.pk, label="bench")
    with rls.tenant_context(actor):
        issued = api_key_issue(
            actor=actor, owner_id=viewer.pk, scope_id=workspace_pk, name=prefix,
            role_ceiling=Role.VIEWER,
        )  # fmt: skip
    lift_rate_limits(workspace_pk)
    return issued.plaintext
