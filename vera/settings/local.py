"""Developer machine: `make run`. DEBUG on, embedded servers, FalkorDB graph."""

from __future__ import annotations

import os

os.environ.setdefault("VERA_MEMORY__GRAPH_BACKEND", "falkordb")

from .base import *  # noqa: F403
from .base import BASE_DIR
from .env import env_bool, env_list, env_str

DEBUG = env_bool("DJANGO_DEBUG", default=True)
# A fixed key is fine on a developer's loopback-only server; production.py refuses it.
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "django-insecure-local-development-only")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

# Static files come straight from the finders; there is no collectstatic output here.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# Sources may reach no network by default on a developer's machine: the demo reads
# files. A developer pointing a source at a local stand-in lists it (host, or a CIDR
# for an address) in VERA_SOURCES__ALLOWED_HOSTS; even then no source connects to the
# ports of this profile's own servers (see curation.services.sources).
VERA_SOURCES__ALLOWED_HOSTS = env_list("VERA_SOURCES__ALLOWED_HOSTS", default=[])
# One dedicated folder, never the temp folder (a checkout may live under /tmp, and with
# it `.devservices/`, which holds the servers' role passwords).
VERA_SOURCES__FILE_ROOTS = env_list(
    "VERA_SOURCES__FILE_ROOTS", default=[str(BASE_DIR / "var" / "sources")]
)

# The dev profile's raw-bytes folder, as `bin/vera services start --print-env` exports it
# and `make run` gives its processes: a shell's `manage.py ingest` and the server share it.
VERA_OBJECT_STORE__ROOT = env_str(
    "VERA_OBJECT_STORE__ROOT", str(BASE_DIR / ".devservices" / "dev" / "objects")
)


# A developer sees calibration take effect without a second step.
VERA_LEARNING__AUTO_ACTIVATE = env_bool("VERA_LEARNING__AUTO_ACTIVATE", default=True)
