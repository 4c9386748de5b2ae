"""A real S3 API server on 127.0.0.1 for tests: moto's server mode in a process of its own.

boto3 reaches it over HTTP through `endpoint_url`, as VERA reaches MinIO in compose:
nothing in the test process is patched. `stop()` is an outage (connections refused),
`start()` brings it back on the same port, empty (moto keeps buckets in memory).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

# What every S3 client of the tests signs with: moto accepts any key, and a client that
# finds credentials in the environment never asks an instance metadata service.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "vera-test", "AWS_SECRET_ACCESS_KEY": "vera-test-secret"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class S3Server:
    """`python -m moto.server` on a free loopback port; use start()/stop()."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout_s: float = 30.0) -> None:
        args = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        env = {**os.environ, "MOTO_PORT": str(self.port)}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"the moto S3 server did not start:\n{self.log.read_text()}")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process = None

    def client(self) -> Any:
        """A plain boto3 client of the server, for a test's own set-up and checks."""
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
            config=Config(connect_timeout=2, read_timeout=10, retries={"total_max_attempts": 1}),
        )
