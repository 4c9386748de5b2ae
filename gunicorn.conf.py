"""gunicorn's configuration, read from the working directory (the image's /app, the checkout).

Tracing is set up in each worker after the fork: an exporter's thread and sockets
started in the arbiter would not survive into the workers.

Metrics: each worker writes its samples to files in PROMETHEUS_MULTIPROC_DIR, and
`/metrics`, whichever worker answers it, merges them all (prometheus-client's
multiprocess mode). The variable must be set before prometheus-client is first
imported, so it is set here, in the arbiter, before any worker exists: to the
operator's directory, else to a fresh temporary one for this run (removed at exit).
An operator's directory is the deployment's, which other processes (Celery, the MCP
server) write to as well: it is emptied when the deployment starts (compose's volume is
a tmpfs), never here, where it would drop the counts of processes still running.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

# As vera/wsgi.py does: post_fork runs before the worker loads the application, and the
# Django instrumentation reads the settings' MIDDLEWARE.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.production")

# Keep-alive (threaded workers: `--worker-class gthread`; sync workers close after each
# response): an idle connection stays open 75 s, longer than common clients and proxies
# keep one idle before reusing it (httpx 5 s, nginx and AWS load balancers 60 s). A
# server that closes first races the client that reuses the connection, whose request
# then fails with no answer (seen as ReadError under bench.load with gunicorn's 2 s).
keepalive = 75

# Remembered in the environment, not a module global: a reload (HUP) reads this file again.
_TEMPORARY = "VERA_METRICS__TEMPORARY_DIR"
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ[_TEMPORARY] = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(
        prefix="vera-metrics-"
    )


def on_starting(server: Any) -> None:
    """Make sure the metrics directory exists (it is not emptied: see the docstring)."""
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)


def post_fork(server: Any, worker: Any) -> None:
    """Trace this worker's requests (when OTEL_EXPORTER_OTLP_ENDPOINT is set)."""
    from vera.tracing import setup_tracing

    setup_tracing("vera-web")


def post_worker_init(worker: Any) -> None:
    """Load the search embedding model before this worker takes its first request (as a
    Celery pool process does; VERA_WORKER__WARM_EMBEDDER, on by default): otherwise the
    first search of every worker that starts or is replaced waits for it (MiniLM: 0.3 s
    on an idle machine, longer under load), and the worker looks ready before it is."""
    from vera import wiring
    from vera.celery import warm_embedder

    warm_embedder(wiring.query_embedder)


def child_exit(server: Any, worker: Any) -> None:
    """Drop a dead worker's live gauges (its counts stay: they happened)."""
    from vera import metrics

    metrics.process_dead(worker.pid)


def on_exit(server: Any) -> None:
    """Remove the temporary metrics directory of this run (an operator's one stays)."""
    temporary = os.environ.get(_TEMPORARY)
    if temporary and temporary == os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        shutil.rmtree(temporary, ignore_errors=True)
