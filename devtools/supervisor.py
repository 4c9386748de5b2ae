"""Runs web, a worker per Celery lane and beat in the foreground, as `make run` does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from devtools.common import ROOT, say

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
        """A warm stop: SIGTERM to each main process, then its whole group, then SIGKILL.

        Only the main process is asked first: a Celery worker then finishes its running
        task and stops its pool itself (signalling the group would kill the pool child
        mid-task, a WorkerLostError). The group is signalled afterwards for what a main
        process leaves behind, such as runserver's autoreloaded child.
        """
        self.stopping.set()
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in self.children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for child in self.children.values():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, sig)
            if sig == signal.SIGTERM:
                time.sleep(0.5)
        for child in self.children.values():
            if child.poll() is None:
                child.kill()
                child.wait()
