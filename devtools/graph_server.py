"""A FalkorDB server of its own (not the broker's), for tests and benchmarks that stop it.

The embedded Redis serves as broker, cache and graph at once, so stopping it would stop
everything. A graph outage is staged with this second server instead: VERA is pointed
at it with `VERA_MEMORY__FALKORDB_URL`, and `stop()`/`start()` take it away and bring
it back on the same port: empty after `stop()` (as after a lost volume), with its graphs
after `stop(keep=True)` (saved on shutdown, loaded at the next start, as a restart does).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis

from devtools.common import ServiceError
from devtools.redis_falkordb import falkordb_binaries


class GraphServer:
    """`redis-server --loadmodule falkordb.so` on a free loopback port."""

    def __init__(self, home: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        self.home = home
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, timeout_s: float = 30.0) -> None:
        server, module = falkordb_binaries()
        self.home.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(  # noqa: S603 - the wheel's own binaries
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.home), "--loadmodule", module],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise ServiceError(f"the graph server on port {self.port} did not start")

    def stop(self, *, keep: bool = False) -> None:
        if self.process is None:
            return
        if keep:
            redis.Redis(port=self.port).shutdown(save=True)  # writes dump.rdb into home
        else:
            (self.home / "dump.rdb").unlink(missing_ok=True)
            self.process.terminate()
        self.process.wait(timeout=30)
        self.process = None
