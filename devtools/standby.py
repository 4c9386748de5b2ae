"""A hot standby of the embedded PostgreSQL: PostgreSQL's own streaming replication.

The standby is a copy: `pg_basebackup` takes the primary's data over a replication
connection (role `vera_replication`, a physical slot so the primary keeps the WAL it
has not sent yet, up to `max_slot_wal_keep_size`), `-R` writes `standby.signal` and
`primary_conninfo`, and the server then replays the primary's WAL as it is written and
answers read-only queries meanwhile (`hot_standby`). Every database, role and row-level
security policy of the primary is on it, byte for byte.

Because it is a copy, it is the one thing here that is rebuilt rather than kept: a
standby whose data belongs to another primary (the primary was initialised again), or
that can no longer follow (its slot was given up), is moved aside and taken anew.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time

from devtools.common import APP_ROLE, DB_NAME, REPLICATION_ROLE, Profile, ServiceError, say
from devtools.postgres import Postgres, pg_bin

STANDBY_BUFFERS = "1GB"


class Standby(Postgres):
    """A streaming hot standby of the profile's primary, on its own port and folder."""

    def __init__(self, profile: Profile) -> None:
        super().__init__(profile)
        self.primary = Postgres(profile)
        self.home = profile.state / "standby"
        self.data = self.home / "data"
        self.log = self.home / "postgres.log"
        self.sockets = self.home / "run"
        self.port = profile.standby_port
        self.slot = f"vera_standby_{profile.name}"

    def _system_identifier(self, data: os.PathLike[str] | str) -> str:
        result = self._run([pg_bin("pg_controldata"), "-D", str(data)])
        for line in result.stdout.splitlines():
            if line.startswith("Database system identifier:"):
                return line.split(":", 1)[1].strip()
        return ""

    def _follows_primary(self) -> bool:
        if not (self.data / "standby.signal").exists():
            return False
        return self._system_identifier(self.data) == self._system_identifier(self.primary.data)

    def _slot_lost(self, passwords: dict[str, str]) -> bool:
        import psycopg

        dsn = f"host=127.0.0.1 port={self.primary.port} user=postgres dbname=postgres"
        with psycopg.connect(dsn, password=passwords["postgres"], autocommit=True) as conn:
            row = conn.execute(
                "SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s", [self.slot]
            ).fetchone()
        return row is None or row[0] == "lost"

    def _base_backup(self, passwords: dict[str, str]) -> None:
        import psycopg

        if self.data.exists():
            aside = self.home / f"data.replaced-{int(time.time())}"
            self.data.rename(aside)
            say(f"the standby's old copy no longer follows the primary; moved to {aside}")
            shutil.rmtree(aside, ignore_errors=True)  # a copy of the primary, nothing more
        dsn = f"host=127.0.0.1 port={self.primary.port} user=postgres dbname=postgres"
        with psycopg.connect(dsn, password=passwords["postgres"], autocommit=True) as conn:
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s AND NOT active",
                [self.slot],
            )
        self._prepare_dirs()
        say(f"taking a base backup of the primary for the standby in {self.data}")
        # The connection string (with the password, which `-R` writes into the standby's
        # primary_conninfo, in its 0700 data folder, to stream with) never reaches the log.
        primary = (
            f"host=127.0.0.1 port={self.primary.port} user={REPLICATION_ROLE} "
            f"password={passwords[REPLICATION_ROLE]}"
        )
        args = [pg_bin("pg_basebackup"), "-d", primary, "-D", str(self.data), "-R"]
        args += ["-X", "stream", "-C", "-S", self.slot, "--checkpoint", "fast", "--no-password"]
        result = self._run(args)
        if result.returncode != 0:
            raise ServiceError(f"pg_basebackup for the standby failed:\n{result.stderr}")

    def start(self, passwords: dict[str, str]) -> bool:
        """Start (or reuse) the standby, taking a base backup first when it has none that
        follows the primary; True if this call started it. The primary must be running."""
        self.home.mkdir(parents=True, exist_ok=True)
        if self.running() and self._follows_primary() and not self._slot_lost(passwords):
            return False
        self.stop()
        if not self._follows_primary() or self._slot_lost(passwords):
            self._base_backup(passwords)
        self._prepare_dirs()
        self._clear_stale_lock()
        buffers = os.environ.get("VERA_DEV__STANDBY_SHARED_BUFFERS", STANDBY_BUFFERS)
        options = (
            f"-p {self.port} -h 127.0.0.1 -k {shlex.quote(str(self.sockets))} "
            f"-c shared_buffers={shlex.quote(buffers)} -c hot_standby=on "
            # Tell the primary what the standby's queries still read, so its vacuum does
            # not remove those rows and cancel a search mid-way.
            "-c hot_standby_feedback=on"
        )
        pg_ctl = [pg_bin("pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data)]
        result = self._run([*pg_ctl, "-l", str(self.log), "-o", options])
        if result.returncode != 0:
            tail = self.log.read_text()[-2000:] if self.log.exists() else result.stderr
            raise ServiceError(f"the PostgreSQL standby did not start:\n{tail}")
        say(f"PostgreSQL standby {self.profile.name} listening on 127.0.0.1:{self.port}")
        return True

    def stop(self) -> None:
        if self.running():
            self._run([pg_bin("pg_ctl"), "stop", "-m", "fast", "-w", "-D", str(self.data)])
            say(f"PostgreSQL standby {self.profile.name} stopped")

    def url(self, passwords: dict[str, str], *, database: str = DB_NAME) -> str:
        """The application role's URL on the standby (what `VERA_DB__REPLICA_URLS` lists)."""
        return f"postgres://{APP_ROLE}:{passwords[APP_ROLE]}@127.0.0.1:{self.port}/{database}"
