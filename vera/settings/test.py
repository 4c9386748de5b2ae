"""pytest: the embedded test-profile servers; setup as the owner role, tests as the app role."""

from __future__ import annotations

import os

os.environ.setdefault("VERA_MEMORY__GRAPH_BACKEND", "falkordb")
os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_test")
# Fast and deterministic by default; the MiniLM path has tests of its own.
os.environ.setdefault("VERA_EMBEDDER__PROVIDER", "hashing")

import dj_database_url

# tests/unit runs with no server at all. Without the test-profile servers, the URLs
# point at a port nothing listens on, and the first test that asks for the database
# stops the run with what to do (tests/conftest.py `NO_SERVERS_MESSAGE`).
if "DATABASE_URL" not in os.environ:
    os.environ["VERA_TEST__NO_SERVERS"] = "1"
    os.environ["DATABASE_URL"] = "postgres://no-test-servers@127.0.0.1:9/unavailable"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:9/0")

from .base import *  # noqa: F403
from .base import BASE_DIR, DATABASES
from .env import env_list, env_str

SECRET_KEY = "django-insecure-test-only"  # noqa: S105
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# pytest-django creates and migrates the test database as the owner role (it needs
# CREATEDB and owns the tables); tests/conftest.py then reconnects as the app role.
_owner_url = env_str("DATABASE_OWNER_URL", "")
if _owner_url:
    # Who and where only (a postgres URL always yields all five); the connection
    # options stay those of base.py.
    _owner = dj_database_url.parse(_owner_url)
    DATABASES["default"].update(
        {
            "USER": _owner["USER"],
            "PASSWORD": _owner["PASSWORD"],
            "HOST": _owner["HOST"],
            "PORT": _owner["PORT"],
            "NAME": _owner["NAME"],
        }
    )
DATABASES["default"]["CONN_MAX_AGE"] = 0
VERA_OBJECT_STORE__ROOT = str(BASE_DIR / ".devservices" / "test" / "objects")

# Static files come straight from the finders; there is no collectstatic output here.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
# Two suites on one server (e.g. parallel runs) each need their own test database.
DATABASES["default"]["TEST"] = {"NAME": env_str("VERA_TEST__DB_NAME", "test_vera")}

# The test profile's hot standby (devtools/standby.py), known to Django as `replica_1` so
# that the tests of reading from it may use it; never created or flushed (a mirror: the
# standby replays the primary's test database) and serving no reads unless a test
# configures VERA_DB__REPLICAS (tests/integration/test_read_replicas.py).
_standby_url = env_str("VERA_TEST__STANDBY_URL", "")
if _standby_url:
    DATABASES["replica_1"] = {**dj_database_url.parse(_standby_url), "TEST": {"MIRROR": "default"}}

# The fake upstreams listen on 127.0.0.1 (never on the ports of the test servers
# themselves: those are refused whatever this list says). Test folders live in one
# dedicated folder of the checkout, never the temp folder: tests/conftest.py makes
# pytest's tmp_path live under it. Tests of the policy override these to narrow them.
VERA_SOURCES__ALLOWED_HOSTS = env_list(
    "VERA_SOURCES__ALLOWED_HOSTS", default=["127.0.0.1/32", "localhost"]
)
TEST_SOURCES_DIR = BASE_DIR / "var" / "test-sources"
VERA_SOURCES__FILE_ROOTS = env_list("VERA_SOURCES__FILE_ROOTS", default=[str(TEST_SOURCES_DIR)])

# Only the hashing model unless a test offers another: the e5 that production offers
# (and gives workspaces holding conversations as their companion) costs a model load
# and seconds of embedding per test. The tests of both offer it themselves
# (tests/integration/test_embedding_companion.py, test_embedding_switch.py).
VERA_EMBEDDER__CHOICES = env_list("VERA_EMBEDDER__CHOICES", default=[])
VERA_EMBEDDER__CONVERSATION_COMPANION = env_str("VERA_EMBEDDER__CONVERSATION_COMPANION", "")
