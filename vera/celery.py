"""The Celery application: configured from Django settings (CELERY_*), tasks autodiscovered."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

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
    from django.conf import settings

    from vera import wiring
    from vera.tracing import setup_tracing

    setup_tracing("vera-worker")
    wiring.reset()
    if not settings.VERA_WORKER_WARM_EMBEDDER:
        return
    try:
        wiring.embedder().embed(["warm-up"])
    except Exception:  # a provider that is down must not stop the worker from starting
        logger.warning("the embedder could not be warmed up", exc_info=True)


# Connected by a call, not as a decorator: celery ships no type hints, and an untyped
# decorator would make the function untyped to mypy.
worker_process_init.connect(_after_fork)
