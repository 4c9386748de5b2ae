"""Shared set-up for benchmarks: the test-profile servers and a fresh `vera_bench` database.

Migrations run as the owner role; the measured work runs as the application role,
exactly as web and worker do.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = os.environ.get("VERA_BENCH_DB", "vera_bench")


def _service_env() -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "vera.devservices", "start", "--profile", "test", "--print-env"],
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
    """Start services, (re)create the bench database, migrate as owner, then act as the app role."""
    env = _service_env()
    os.environ.update(env)
    import psycopg

    owner = env["DATABASE_OWNER_URL"]
    if fresh:
        with psycopg.connect(_with_db(owner, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    os.environ["DATABASE_URL"] = _with_db(owner, DB_NAME)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("VERA_OBJECT_STORE__ROOT", str(ROOT / ".devservices" / "bench-objects"))
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench")
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
