"""gunicorn's configuration, read from the working directory (the image's /app, the checkout).

Tracing is set up in each worker after the fork: an exporter's thread and sockets
started in the arbiter would not survive into the workers.
"""

from __future__ import annotations

import os
from typing import Any

# As vera/wsgi.py does: post_fork runs before the worker loads the application, and the
# Django instrumentation reads the settings' MIDDLEWARE.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vera.settings.production")


def post_fork(server: Any, worker: Any) -> None:
    """Trace this worker's requests (when OTEL_EXPORTER_OTLP_ENDPOINT is set)."""
    from vera.tracing import setup_tracing

    setup_tracing("vera-web")
