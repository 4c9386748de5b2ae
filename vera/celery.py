"""The Celery application: configured from Django settings (CELERY_*), tasks autodiscovered."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.signals import beat_init, task_postrun, worker_process_init, worker_process_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.local")

app = Celery("vera")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
logger = logging.getLogger(__name__)


def _after_fork(**_: Any) -> None:
    """Each pool process builds its own clients and loads the embedding model before work.

    Sockets must not be shared across a fork, so adapters built in the parent are
    dropped, and tracing (when on) starts here, in the process that runs the tasks.
    Loading the model here, not on the first task, keeps a worker's first review
    decision from waiting for it (measured: 21 s on a busy 2-core machine).
    """
    from vera import wiring
    from vera.tracing import setup_tracing

    setup_tracing("vera-worker")
    wiring.reset()
    warm_embedder(wiring.embedder)


def warm_embedder(embedder_of: Callable[[], Any]) -> None:
    """Load the embedding model now, before the process takes work (a Celery pool
    process, a gunicorn worker), unless VERA_WORKER__WARM_EMBEDDER is off. A provider that
    is down must not stop the process from starting: that is logged, not raised."""
    from django.conf import settings

    if not settings.VERA_WORKER__WARM_EMBEDDER:
        return
    try:
        warm_up(embedder_of())
    except Exception:
        logger.warning("the embedder could not be warmed up", exc_info=True)


def _beat_started(**_: Any) -> None:
    """Beat traces (when on) its schedule's queries and each task it sends; the worker's
    span of a task is then a child of beat's send, so a scheduled run has one trace."""
    from vera.tracing import setup_tracing

    setup_tracing("vera-beat")


def warm_up(embedder: Any) -> None:
    """Load the model behind the wrappers (cache, guard). Embedding a fixed text through
    them would be a cache hit after the first worker ever started, and load nothing."""
    model = embedder
    while getattr(model, "inner", None) is not None:
        model = model.inner
    load = getattr(model, "warm_up", None)
    if callable(load):
        load()
    else:  # a remote provider: nothing to load, a call proves it answers
        model.embed(["warm-up"])


def _ingest_counted(*, sender: Any = None, retval: Any = None, state: str = "", **_: Any) -> None:
    """Count a finished ingestion run from its task's result (vera_ingest_*): the task
    belongs to curation, which exports nothing itself."""
    if getattr(sender, "name", "") == "curation.ingest_source" and state == "SUCCESS":
        from vera import metrics

        metrics.ingest_finished(retval)


def _learning_counted(*, sender: Any = None, retval: Any = None, state: str = "", **_: Any) -> None:
    """Count the nightly evaluations and calibrations per workspace by outcome
    (vera_eval_runs, vera_calibration_runs) from their task's result."""
    if state == "SUCCESS" and isinstance(retval, dict):
        from vera import metrics

        metrics.learning_finished(getattr(sender, "name", ""), retval)


def _before_exit(*, pid: int, **_: Any) -> None:
    """Drop this pool process's live gauges when it shares a PROMETHEUS_MULTIPROC_DIR."""
    from vera import metrics

    metrics.process_dead(pid)


# Connected by a call, not as a decorator: celery ships no type hints, and an untyped
# decorator would make the function untyped to mypy.
worker_process_init.connect(_after_fork)
beat_init.connect(_beat_started)
task_postrun.connect(_ingest_counted)
task_postrun.connect(_learning_counted)
worker_process_shutdown.connect(_before_exit)
