"""Embedded development servers: PostgreSQL (pgvector, pg_trgm) and Redis with FalkorDB.

    python -m devtools.services start|stop|status [--profile dev|test] [--print-env]
    python -m devtools.services run [--profile dev]    # make run: services + web + workers + beat

State lives in `.devservices/<profile>/` (git-ignored). Nothing here ever deletes data:
a data directory from another PostgreSQL major version, a port held by another
program or a lock file that cannot be explained stops with a message saying what
to do. The one exception is the hot standby (devtools/standby.py), a copy of the
primary that is taken anew when it no longer follows it.

The test profile always runs the standby (its tests are in `make test`) and exports
its URL as VERA_TEST__STANDBY_URL, so only the tests that ask for it read from it.
The dev profile runs one when VERA_DEV__STANDBY=1, and then `make run` serves reads
from it (VERA_DB__REPLICA_URLS). Setting DATABASE_URL (with DATABASE_OWNER_URL) or REDIS_URL in the
environment replaces the embedded server with an external one.

This module runs before Django is configured, so it imports nothing from Django.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from devtools.common import (
    DEFAULT_PORTS,
    ROOT,
    Profile,
    ServiceError,
    port_in_use,
    say,
    who_listens,
)
from devtools.postgres import Postgres
from devtools.redis_falkordb import Redis
from devtools.standby import Standby
from devtools.supervisor import LANES, Supervisor


def wants_standby(profile: Profile) -> bool:
    """The test profile always runs a standby; the dev profile when asked to."""
    return profile.name == "test" or os.environ.get("VERA_DEV__STANDBY", "") not in ("", "0")


def start(profile: Profile) -> tuple[dict[str, str], list[Postgres | Redis]]:
    """Start what the environment does not already provide; return its env and what started."""
    env: dict[str, str] = {}
    started: list[Postgres | Redis] = []
    if os.environ.get("DATABASE_URL"):
        if not os.environ.get("DATABASE_OWNER_URL"):
            raise ServiceError(
                "DATABASE_URL points at an external server; also set DATABASE_OWNER_URL "
                "(the role that owns the schema and runs migrations)."
            )
        say("using the external PostgreSQL in DATABASE_URL")
    else:
        postgres = Postgres(profile)
        if postgres.start(profile.secrets()):
            started.append(postgres)
        env.update(postgres.env(profile.secrets()))
        if wants_standby(profile):
            standby = Standby(profile)
            if standby.start(profile.secrets()):
                started.append(standby)
            # The test suite's standby serves only the tests that ask for it.
            test = profile.name == "test"
            env["VERA_TEST__STANDBY_URL" if test else "VERA_DB__REPLICA_URLS"] = standby.url(
                profile.secrets()
            )
    if os.environ.get("REDIS_URL"):
        say("using the external Redis in REDIS_URL")
    else:
        redis_service = Redis(profile)
        if redis_service.start():
            started.append(redis_service)
        env.update(redis_service.env())
    # The profile's raw-bytes folder, for every process: `make run`'s web and workers and
    # a shell's `manage.py ingest` after `--print-env` all read and write one store.
    env["VERA_OBJECT_STORE__ROOT"] = os.environ.get(
        "VERA_OBJECT_STORE__ROOT", str(profile.state / "objects")
    )
    return env, started


def status(profile: Profile) -> int:
    postgres, standby, redis_service = Postgres(profile), Standby(profile), Redis(profile)
    services: list[tuple[str, Postgres | Redis]] = [("postgres", postgres)]
    if wants_standby(profile) or standby.running():
        services.append(("standby", standby))
    for name, service in (*services, ("redis", redis_service)):
        state = "running" if service.running() else "stopped"
        print(f"{profile.name:5} {name:9} {state:8} 127.0.0.1:{service.port}  {service.home}")
    return 0


def print_env(env: dict[str, str]) -> None:
    for key, value in env.items():
        print(f"export {key}={shlex.quote(value)}")


def manage(args: list[str], env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)  # noqa: S603


def run(profile: Profile) -> int:
    """`make run`: services, migrations, demo data, then web + a worker per lane + beat,
    and the MCP server."""
    service_env, started = start(profile)
    owner = {**os.environ, **service_env}
    owner.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.local")
    # Only migrations hold the owner role's credentials: web, workers, beat and the demo
    # seeding connect as the application role and never see DATABASE_OWNER_URL.
    env = {key: value for key, value in owner.items() if key != "DATABASE_OWNER_URL"}
    web_port = int(os.environ.get("VERA_DEV__WEB_PORT", "8000"))
    mcp_port = int(os.environ.get("VERA_DEV__MCP_PORT", "8001"))
    for port, what, variable in ((web_port, "web server", "VERA_DEV__WEB_PORT"),
                                 (mcp_port, "MCP server", "VERA_DEV__MCP_PORT")):  # fmt: skip
        if port_in_use(port):
            raise ServiceError(
                f"port {port} for the {what} is used by {who_listens(port)}; "
                f"stop it or set {variable}=<free port>."
            )
    env.setdefault("VERA_MCP__RESOURCE_URL", f"http://127.0.0.1:{mcp_port}/mcp")
    # Migrations run as the owner role; everything else connects as the app role.
    manage(["migrate", "--noinput"], {**owner, "DATABASE_URL": owner["DATABASE_OWNER_URL"]})
    manage(["seed_demo"], env)
    celery = [str(Path(sys.executable).parent / "celery"), "-A", "vera"]
    # Every process below writes its metric samples to one folder, which the web's
    # /metrics merges (compose shares a volume); a fresh one per run, so counts start at 0.
    metrics_dir = (
        "" if env.get("PROMETHEUS_MULTIPROC_DIR") else tempfile.mkdtemp(prefix="vera-metrics-")
    )
    env.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir)
    supervisor = Supervisor()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: supervisor.stopping.set())
    try:
        supervisor.spawn(
            "web", [sys.executable, "manage.py", "runserver", f"127.0.0.1:{web_port}"], env
        )
        # One worker per lane, so a review decision never waits behind bulk work.
        for lane in LANES:
            supervisor.spawn(
                lane,
                [*celery, "worker", "-l", "info", "-Q", lane, "-n", f"{lane}@%h",
                 "--concurrency", "1"],
                env,
            )  # fmt: skip
        # The schedule is in the database (CELERY_BEAT_SCHEDULER): no schedule file.
        supervisor.spawn("beat", [*celery, "beat", "-l", "info"], env)
        # Agents connect here (docs/api.md shows a client's configuration).
        supervisor.spawn(
            "mcp",
            [sys.executable, "-m", "uvicorn", "vera.mcp.asgi:app", "--host", "127.0.0.1",
             "--port", str(mcp_port), "--log-level", "info"],
            env,
        )  # fmt: skip
        say(f"VERA is starting on http://127.0.0.1:{web_port}/ (Ctrl-C stops everything)")
        say(f"MCP server for agents: {env['VERA_MCP__RESOURCE_URL']}")
        return supervisor.wait()
    finally:
        supervisor.stop()
        if metrics_dir:  # ours, not an operator's
            shutil.rmtree(metrics_dir, ignore_errors=True)
        for service in reversed(started):
            service.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.services", description=__doc__)
    parser.add_argument("command", choices=["start", "stop", "status", "env", "run"])
    parser.add_argument("--profile", choices=sorted(DEFAULT_PORTS), default="dev")
    parser.add_argument("--print-env", action="store_true", help="print `export` lines")
    args = parser.parse_args(argv)
    profile = Profile.named(args.profile)
    try:
        if args.command == "start":
            env, _ = start(profile)
            if args.print_env:
                print_env(env)
            return 0
        if args.command == "env":
            print_env(start(profile)[0])
            return 0
        if args.command == "stop":
            Redis(profile).stop()
            Standby(profile).stop()
            Postgres(profile).stop()
            return 0
        if args.command == "status":
            return status(profile)
        return run(profile)
    except ServiceError as error:
        say(f"error: {error}")
        return 1
    except shutil.Error as error:  # pragma: no cover - defensive
        say(f"error: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
