"""What every embedded service shares: the checkout, the profiles, ports and processes."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import socket
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The test profile's ports move with the checkout's path, so two clones on one machine
# (a working tree and a fresh-clone check, say) can run their suites side by side.
_CHECKOUT = zlib.crc32(str(ROOT).encode()) % 1000
DEFAULT_PORTS = {"dev": (54320, 63790), "test": (55000 + _CHECKOUT, 64000 + _CHECKOUT)}
DB_NAME = "vera"
OWNER_ROLE = "vera_owner"
APP_ROLE = "vera_app"
# Streams the WAL to hot standbys (pg_basebackup, primary_conninfo); reads no table.
REPLICATION_ROLE = "vera_replication"
ROLES = ("postgres", OWNER_ROLE, APP_ROLE, REPLICATION_ROLE)


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

    @property
    def standby_port(self) -> int:
        """The hot standby's port: VERA_DEV__STANDBY_PORT, else 2,000 below the primary's."""
        return int(os.environ.get("VERA_DEV__STANDBY_PORT", self.pg_port - 2000))

    @classmethod
    def named(cls, name: str) -> Profile:
        pg_default, redis_default = DEFAULT_PORTS[name]
        # VERA_DEV__ROOT moves every profile's state elsewhere (the make-run browser test
        # runs a whole fresh `make run` in a temporary folder on free ports).
        root = os.environ.get("VERA_DEV__ROOT")
        return cls(
            name=name,
            pg_port=int(os.environ.get("VERA_DEV__PG_PORT", pg_default)),
            redis_port=int(os.environ.get("VERA_DEV__REDIS_PORT", redis_default)),
            **({"root": Path(root).absolute()} if root else {}),
        )

    def secrets(self) -> dict[str, str]:
        """Role passwords, generated once per profile and kept in a 0600 file; a role
        added since the file was written gets its password added, the others are kept."""
        path = self.state / "secrets.json"
        known: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        if all(role in known for role in ROLES):
            return dict(known)
        self.state.mkdir(parents=True, exist_ok=True)
        values = {role: known.get(role) or secrets.token_hex(24) for role in ROLES}
        partial = path.with_suffix(".json.new")
        partial.unlink(missing_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(values, handle)
        partial.replace(path)
        return values
