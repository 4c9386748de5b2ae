"""Settings shared by every environment. All values come from environment variables."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from .env import (
    adopt_renamed,
    env_bool,
    env_int,
    env_int_map,
    env_list,
    env_list_map,
    env_str,
    renamed_secret,
)

# Django classes the type stubs make generic (ModelAdmin[Claim], ModelForm[Source]) accept
# their type arguments at run time too.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent.parent

# Old variable names still set on a deployment are carried over to their new names before
# anything is read; the `vera.W001` check names each one at every start.
VERA_RENAMED_VARIABLES = adopt_renamed(os.environ)

# Safe defaults: production.py demands a real key and DEBUG stays off unless asked for.
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
DEBUG = env_bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", default=[])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "pgtrigger",
    "django_htmx",
    "template_partials",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "mozilla_django_oidc",
    "django_celery_beat",
    "vera.apps.VeraConfig",
    "tenants.apps.TenantsConfig",
    "curation.apps.CurationConfig",
    "retrieval.apps.RetrievalConfig",
]

MIDDLEWARE = [
    # First: its Server-Timing figure covers every other middleware and the view.
    "vera.middleware.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # Last: every view runs in a transaction with the caller's RLS groups set.
    "tenants.middleware.TenantContextMiddleware",
]

ROOT_URLCONF = "vera.urls"
WSGI_APPLICATION = "vera.wsgi.application"
ASGI_APPLICATION = "vera.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- PostgreSQL -----------------------------------------------------------------
# DATABASE_URL is the *application* role: not superuser, not BYPASSRLS, owns nothing.
# Migrations run with DATABASE_URL set to the owner role's URL (see docs/operations.md).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", "postgres://vera_app@127.0.0.1:5432/vera"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", default=60),
        conn_health_checks=True,
    )
}
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int(
    "DATABASE_CONNECT_TIMEOUT", default=5
)
# The role that web, worker and beat connect as; post-migrate grants it table access.
VERA_DB__APP_ROLE = env_str("VERA_DB__APP_ROLE", "vera_app")

# --- Read replicas: PostgreSQL hot standbys serving read-only work --------------------
# Application-role URLs of streaming standbys of DATABASE_URL's server (docs/operations.md
# "The way to grow"). Searches, context packs, MCP reads, GET pages and API lists read
# from one that is up, within VERA_DB__REPLICA_MAX_LAG_S of the primary and has replayed
# the caller's last write; else from the primary (tenants/replicas.py).
VERA_DB__REPLICA_URLS = env_list("VERA_DB__REPLICA_URLS", default=[])
VERA_DB__REPLICAS: list[str] = []
for _number, _url in enumerate(VERA_DB__REPLICA_URLS, start=1):
    _alias = f"replica_{_number}"
    DATABASES[_alias] = dj_database_url.parse(
        _url,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", default=60),
        conn_health_checks=True,
    )
    # A standby that does not answer soon is skipped; the primary serves meanwhile.
    DATABASES[_alias]["OPTIONS"] = {
        "connect_timeout": env_int("VERA_DB__REPLICA_CONNECT_TIMEOUT_S", default=2)
    }
    # A test run never creates or flushes a standby's database: it replays the primary's.
    DATABASES[_alias]["TEST"] = {"MIRROR": "default"}
    VERA_DB__REPLICAS.append(_alias)
DATABASE_ROUTERS = ["common.reads.ReadReplicaRouter"]
# Replay further behind the primary than this (seconds) and a standby serves no reads.
VERA_DB__REPLICA_MAX_LAG_S = env_int("VERA_DB__REPLICA_MAX_LAG_S", default=5)
# How often each process checks a standby (seconds), and retries one found down.
VERA_DB__REPLICA_CHECK_S = env_int("VERA_DB__REPLICA_CHECK_S", default=1)
VERA_DB__REPLICA_RETRY_S = env_int("VERA_DB__REPLICA_RETRY_S", default=5)
# How long a caller's last write is remembered for read-your-writes (seconds); a
# standby further behind than this is already skipped by the lag bound.
VERA_DB__REPLICA_WRITE_MEMORY_S = env_int("VERA_DB__REPLICA_WRITE_MEMORY_S", default=600)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis / Valkey: Celery broker, cache, rate limits ------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# The cache gets its own database so that clearing it never touches the broker or graph.
CACHES: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("VERA_CACHE__URL", re.sub(r"(/\d+)?$", "/1", REDIS_URL, count=1)),
        "KEY_PREFIX": "vera:cache",
        "TIMEOUT": 300,
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
    }
}

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", default=15 * 60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A pool process whose peak resident memory (billiard reads ru_maxrss on Linux) passed
# this many MB is replaced after its current task (0: never): what native libraries keep
# after a bulk projection goes back to the machine instead of staying with an idle
# worker. The replacement loads its model again (worker_process_init). Celery counts KiB.
VERA_WORKER__MAX_MEMORY_MB = env_int("VERA_WORKER__MAX_MEMORY_MB", default=1024)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = (
    VERA_WORKER__MAX_MEMORY_MB * 1024 if VERA_WORKER__MAX_MEMORY_MB > 0 else None
)
CELERY_TIMEZONE = "UTC"
# Lanes: each queue has its own worker processes (`bin/vera run`, compose), so a review
# decision never waits behind a bulk ingest or its projection. Unrouted tasks go to
# maintenance.
CELERY_TASK_DEFAULT_QUEUE = "maintenance"
CELERY_TASK_ROUTES = {
    "curation.process_urgent_outbox": {"queue": "interactive"},
    "curation.process_outbox": {"queue": "projection"},
    "curation.ingest_source": {"queue": "ingest"},
    "curation.reprocess_source": {"queue": "ingest"},
    "curation.schedule_sources": {"queue": "maintenance"},
    "curation.resume_reprocessing": {"queue": "maintenance"},
    "vera.check_health": {"queue": "maintenance"},
    "retrieval.calibrate_workspaces": {"queue": "maintenance"},
    "retrieval.evaluate_workspaces": {"queue": "maintenance"},
    "retrieval.index_catch_up": {"queue": "maintenance"},
    "retrieval.snapshots_build": {"queue": "maintenance"},
    "retrieval.flush_provider_usage": {"queue": "maintenance"},
    "retrieval.expire_context_packs": {"queue": "maintenance"},
    "retrieval.learn_question_words": {"queue": "maintenance"},
}
# Beat reads its schedule from the database (django-celery-beat): the entries below are
# written there at each start; the nightly learning jobs are rows a migration created,
# which an operator reschedules in the admin (Periodic tasks) without a deploy.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
VERA_WORKER__LANES = ("interactive", "projection", "ingest", "maintenance")
# Load the embedding model in each worker process at start, not on its first task.
VERA_WORKER__WARM_EMBEDDER = env_bool("VERA_WORKER__WARM_EMBEDDER", default=True)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # Beat's liveness: a cheap task every minute proves broker -> worker -> Postgres/Redis/graph.
    "vera-health-every-minute": {"task": "vera.check_health", "schedule": 60.0},
}

# --- The learning loop: calibration from votes, golden-set evaluation -----------------
# Votes on hits logged within this many days are calibration samples.
VERA_LEARNING__WINDOW_DAYS = env_int("VERA_LEARNING__WINDOW_DAYS", default=30)
# Served context packs are kept this many days (the caller's question and the facts it
# was given), then deleted by the nightly `retrieval.expire_context_packs`; 0 keeps them.
VERA_CONTEXT__PACK_RETENTION_DAYS = env_int("VERA_CONTEXT__PACK_RETENTION_DAYS", default=90)
# The spec's minimum-sample guard: helpful and unhelpful votes each need this many.
VERA_LEARNING__MIN_SAMPLES = env_int("VERA_LEARNING__MIN_SAMPLES", default=30)
# How far a calibration moves from the active weights towards the derived ones (0, 1].
VERA_LEARNING__RATE = float(env_str("VERA_LEARNING__RATE", "1.0"))
# Activate a calibrated candidate without an admin (when the guard passes and the golden
# set, if any, does not score it lower). Off in production; local settings turn it on.
VERA_LEARNING__AUTO_ACTIVATE = env_bool("VERA_LEARNING__AUTO_ACTIVATE", default=False)
# Floors that fail an evaluation run, e.g. "ndcg_at_10=0.5,hit_at_10=0.8" (empty: none).
VERA_LEARNING__FLOORS = env_str("VERA_LEARNING__FLOORS", "")

# --- Graph projection (rebuildable from Postgres + object store) ---------------------
VERA_MEMORY__GRAPH_BACKEND = env_str("VERA_MEMORY__GRAPH_BACKEND", "neo4j")
VERA_MEMORY__GRAPH_NAME = env_str("VERA_MEMORY__GRAPH_NAME", "vera")
VERA_MEMORY__FALKORDB_URL = env_str("VERA_MEMORY__FALKORDB_URL", REDIS_URL)
VERA_NEO4J__URI = env_str("VERA_NEO4J__URI", "")
VERA_NEO4J__USER = env_str("VERA_NEO4J__USER", "neo4j")
VERA_NEO4J__PASSWORD = env_str("VERA_NEO4J__PASSWORD", "")
VERA_NEO4J__DATABASE = env_str("VERA_NEO4J__DATABASE", "neo4j")

# --- Object store for raw artifacts --------------------------------------------------
VERA_OBJECT_STORE__BACKEND = env_str("VERA_OBJECT_STORE__BACKEND", "local")
VERA_OBJECT_STORE__ROOT = env_str("VERA_OBJECT_STORE__ROOT", str(BASE_DIR / "var" / "objects"))
VERA_OBJECT_STORE__BUCKET = env_str("VERA_OBJECT_STORE__BUCKET", "vera-artifacts")
VERA_OBJECT_STORE__ENDPOINT_URL = env_str("VERA_OBJECT_STORE__ENDPOINT_URL", "")
# S3 only: each attempt's connect and read timeouts, and botocore's retries of a
# transient error (throttling, 5xx, connection) after the first attempt. A store that
# keeps failing opens a circuit breaker: calls then fail at once until its trial.
VERA_OBJECT_STORE__CONNECT_TIMEOUT_S = env_int("VERA_OBJECT_STORE__CONNECT_TIMEOUT_S", default=2)
VERA_OBJECT_STORE__READ_TIMEOUT_S = env_int("VERA_OBJECT_STORE__READ_TIMEOUT_S", default=30)
VERA_OBJECT_STORE__RETRIES = env_int("VERA_OBJECT_STORE__RETRIES", default=2)

# --- Embeddings ----------------------------------------------------------------------
# hashing (offline, deterministic) | minilm (local all-MiniLM-L6-v2, English)
# | e5 (local multilingual-e5-small, 4-bit, ~100 languages) | openai | voyage
VERA_EMBEDDER__PROVIDER = env_str("VERA_EMBEDDER__PROVIDER", "minilm")
VERA_EMBEDDER__MODEL = env_str("VERA_EMBEDDER__MODEL", "")
VERA_EMBEDDER__DIMENSION = env_int("VERA_EMBEDDER__DIMENSION", default=0)
# The other models a workspace admin may switch their workspace to (an operator's
# allow-list of providers above; the default provider is always offered). The bundled
# local e5 is offered unless withdrawn (""): it is loaded only once a workspace uses it.
VERA_EMBEDDER__CHOICES = env_list("VERA_EMBEDDER__CHOICES", default=["e5"])
# A second offered model new workspaces are also searched with (their companion; "" for
# none). Ranks better (SciFact 0.738 against 0.718 with MiniLM and e5) at the price of
# embedding every document with both models; a workspace admin can change it.
VERA_EMBEDDER__COMPANION = env_str("VERA_EMBEDDER__COMPANION", "")
# The companion a workspace that holds a conversation source gets, unless it has one
# or its admin removed it ("" for none; must be offered). Conversations' turns
# are short and casual: with e5 beside MiniLM a 1,000-token pack holds 0.555 of the
# multi-hop evidence against 0.510 (bench.memory). e5 is a bundled local model: offered
# unless the operator withdraws it (and then clears this too).
VERA_EMBEDDER__CONVERSATION_COMPANION = env_str("VERA_EMBEDDER__CONVERSATION_COMPANION", "e5")
# Threads of a local e5 model per process (0: every core). OpenMP reads it once. One, as
# MiniLM uses: web and worker processes share the cores, and OpenMP's barriers stall
# when its threads wait for a core (query p50 849 ms with 2 threads on a loaded 2-core
# machine, 14.5 ms idle; 23.6 ms with 1 thread idle).
VERA_EMBEDDER__THREADS = env_int("VERA_EMBEDDER__THREADS", default=1)
# Provider requests per second (hosted embedders only).
VERA_EMBEDDER__RATE_PER_S = env_int("VERA_EMBEDDER__RATE_PER_S", default=10)
# Seconds a hosted embedder's request may take before it counts as a failure.
VERA_EMBEDDER__TIMEOUT_S = env_int("VERA_EMBEDDER__TIMEOUT_S", default=30)

# --- Stage-3 reranker (cross-encoder) ---------------------------------------------------
# "" (off, the default) | voyage (rerank-2.5, VOYAGE_API_KEY) | llm (OPENAI_API_KEY)
VERA_RERANKER__PROVIDER = env_str("VERA_RERANKER__PROVIDER", "")
# Defaults to rerank-2.5 for voyage; the llm provider needs a model named.
VERA_RERANKER__MODEL = env_str("VERA_RERANKER__MODEL", "")
# An OpenAI-compatible base URL for the llm provider; "" is the client's default.
VERA_RERANKER__BASE_URL = env_str("VERA_RERANKER__BASE_URL", "")
# How many stage-2 candidates are re-scored (1..100), and the reranker's share w of
# final = (1 - w) * normalised_blend + w * ce.
VERA_RERANKER__TOP_N = env_int("VERA_RERANKER__TOP_N", default=20)

# --- Stage-1 fusion ------------------------------------------------------------------------
# Weighted RRF (k = 1): each list's votes count this much, e.g. "fulltext=1.0,vector=0.5"
# to lean on the lexical list. Default: the spec's plain RRF (every list 1.0).
VERA_SEARCH__FUSION_WEIGHTS = env_str("VERA_SEARCH__FUSION_WEIGHTS", "")
VERA_RERANKER__WEIGHT = float(env_str("VERA_RERANKER__WEIGHT", "0.5"))
VERA_RERANKER__TIMEOUT_S = env_int("VERA_RERANKER__TIMEOUT_S", default=10)
VERA_RERANKER__RATE_PER_S = env_int("VERA_RERANKER__RATE_PER_S", default=10)

# --- Extraction ----------------------------------------------------------------------
# An OpenAI-compatible model for free-text extraction; off unless a model is named.
VERA_EXTRACTOR__LLM_MODEL = env_str("VERA_EXTRACTOR__LLM_MODEL", "")
VERA_EXTRACTOR__LLM_BASE_URL = env_str("VERA_EXTRACTOR__LLM_BASE_URL", "")
# Judges for entity equivalence and fact contradiction; off unless a model is named.
VERA_JUDGE__LLM_MODEL = env_str("VERA_JUDGE__LLM_MODEL", "")
VERA_JUDGE__LLM_BASE_URL = env_str("VERA_JUDGE__LLM_BASE_URL", "")
VERA_JUDGE__THRESHOLD = float(env_str("VERA_JUDGE__THRESHOLD", "0.9"))
VERA_JUDGE__CACHE_SIZE = env_int("VERA_JUDGE__CACHE_SIZE", default=4096)
# The LLM extractor's and the judges' requests: the timeout of one request, requests per
# second (each role has its own bucket and breaker), and retries of a transient error.
VERA_LLM__TIMEOUT_S = env_int("VERA_LLM__TIMEOUT_S", default=60)
VERA_LLM__RATE_PER_S = env_int("VERA_LLM__RATE_PER_S", default=5)
VERA_LLM__RETRIES = env_int("VERA_LLM__RETRIES", default=2)
# Predicates with one value at a time: a new value supersedes the old one.
VERA_ONTOLOGY__FUNCTIONAL_PREDICATES = env_list("VERA_ONTOLOGY__FUNCTIONAL_PREDICATES", default=[])
CELERY_BEAT_SCHEDULE["curation-schedule-sources"] = {
    "task": "curation.schedule_sources",
    "schedule": 60.0,
}
# A reprocessing run nobody has advanced for this long (its worker died, its message was
# lost) is sent to a worker again; a live run commits a batch far more often.
VERA_REPROCESS__STALE_AFTER_S = env_int("VERA_REPROCESS__STALE_AFTER_S", default=900)
CELERY_BEAT_SCHEDULE["curation-resume-reprocessing"] = {
    "task": "curation.resume_reprocessing",
    "schedule": 300.0,
    "options": {"expires": 300.0},
}
# Each outbox consumer drains on its own beat entry, so a slow or down graph never holds
# up the search index (and the other way round).
CELERY_BEAT_SCHEDULE["curation-project-graph"] = {
    "task": "curation.process_outbox",
    "schedule": 10.0,
    "kwargs": {"consumer": "graph"},
    # A tick not started within its period is dropped: a busy lane needs no backlog of them.
    "options": {"expires": 10.0},
}
CELERY_BEAT_SCHEDULE["curation-project-index"] = {
    "task": "curation.process_outbox",
    "schedule": 10.0,
    "kwargs": {"consumer": "index"},
    "options": {"expires": 10.0},
}
# How long a worker's leased outbox batch is hidden from the others: longer than any
# batch takes; a worker killed mid-batch delays its jobs by this much.
VERA_OUTBOX__LEASE_S = env_int("VERA_OUTBOX__LEASE_S", default=600)
# Graph jobs projected per transaction (one UNWIND per statement), up to a lease's 200.
VERA_OUTBOX__GRAPH_BATCH = env_int("VERA_OUTBOX__GRAPH_BATCH", default=200)
# Backpressure: an outbox lane whose visible pending jobs (due, not leased) number more
# than BACKLOG, or whose longest-waiting one has waited more than AGE_S seconds, is
# degraded: /healthz says so (200), vera_lane_degraded{lane} is 1, one warning is logged.
# Per-lane values override the defaults, e.g. "interactive=200". A bulk ingest of 13,000
# claims queues 26,000 jobs for the projection lane; a reviewer's decision should be
# projected within seconds (a wake-up, else the 30 s sweep).
VERA_BACKPRESSURE__BACKLOG = env_int("VERA_BACKPRESSURE__BACKLOG", default=50_000)
VERA_BACKPRESSURE__AGE_S = env_int("VERA_BACKPRESSURE__AGE_S", default=900)
VERA_BACKPRESSURE__LANE_BACKLOG = env_int_map(
    "VERA_BACKPRESSURE__LANE_BACKLOG", default={"interactive": 500}
)
VERA_BACKPRESSURE__LANE_AGE_S = env_int_map(
    "VERA_BACKPRESSURE__LANE_AGE_S", default={"interactive": 120}
)
for _lanes in (VERA_BACKPRESSURE__LANE_BACKLOG, VERA_BACKPRESSURE__LANE_AGE_S):
    if unknown := set(_lanes) - {"interactive", "projection"}:
        raise ImproperlyConfigured(
            f"VERA_BACKPRESSURE__LANE_*: {sorted(unknown)} run no outbox jobs; "
            "name interactive or projection."
        )
# What ingestion does while the projection lane is degraded: "defer" (a scheduled run
# waits for a later tick, a manual one is refused), "slow" (runs, pausing PAUSE_S after
# each page while the lane stays degraded) or "off" (ingests regardless).
VERA_BACKPRESSURE__INGEST = env_str("VERA_BACKPRESSURE__INGEST", "defer")
if VERA_BACKPRESSURE__INGEST not in ("defer", "slow", "off"):
    raise ImproperlyConfigured(
        f"VERA_BACKPRESSURE__INGEST={VERA_BACKPRESSURE__INGEST!r}; choose defer, slow or off."
    )
VERA_BACKPRESSURE__INGEST_PAUSE_S = env_int("VERA_BACKPRESSURE__INGEST_PAUSE_S", default=5)
# /metrics (Prometheus text format) answers a scraper sending `Bearer <this token>`;
# without a token it is off (404).
VERA_METRICS__TOKEN = env_str("VERA_METRICS__TOKEN", "")
# A workspace switched to another embedding model is re-embedded a bounded batch a tick.
CELERY_BEAT_SCHEDULE["retrieval-index-catch-up"] = {
    "task": "retrieval.index_catch_up",
    "schedule": 60.0,
    "options": {"expires": 60.0},
}
# Knowledge snapshots waiting to be built (each is also sent at once when taken).
CELERY_BEAT_SCHEDULE["retrieval-snapshots-build"] = {
    "task": "retrieval.snapshots_build",
    "schedule": 60.0,
    "options": {"expires": 60.0},
}
# Provider usage metered by every process, added to each workspace's day (the cost page).
CELERY_BEAT_SCHEDULE["retrieval-flush-provider-usage"] = {
    "task": "retrieval.flush_provider_usage",
    "schedule": 60.0,
    "options": {"expires": 60.0},
}
# The interactive lane also sweeps on a timer, in case a wake-up was lost with a broker.
CELERY_BEAT_SCHEDULE["curation-project-urgent"] = {
    "task": "curation.process_urgent_outbox",
    "schedule": 30.0,
    "options": {"expires": 30.0},
}

# --- Sources: what a tenant-configured source may reach --------------------------------
# Sources are a trust boundary: a workspace admin configures them, the worker runs them
# with this server's environment, network and disk. Checked on save and on every run.
# token_env may only name variables starting with this prefix (never DATABASE_URL & co).
VERA_SOURCES__TOKEN_ENV_PREFIX = env_str("VERA_SOURCES__TOKEN_ENV_PREFIX", "VERA_SOURCE_SECRET__")
# Hosts HTTP connectors may reach: names, `*.example.com` patterns, CIDR ranges. A name
# resolving into loopback/private/link-local/... space also needs that range listed.
VERA_SOURCES__ALLOWED_HOSTS = env_list("VERA_SOURCES__ALLOWED_HOSTS", default=[])
# Absolute folders file connectors (markdown root, cmdb path) may read below.
VERA_SOURCES__FILE_ROOTS = env_list("VERA_SOURCES__FILE_ROOTS", default=[])
# Paths no source reads even below an allowed root, on top of those always refused
# (the checkout's `.devservices/` state and secrets, `.env`, `.git`, and the local
# object store; see curation.services.sources.denied_paths).
VERA_SOURCES__DENIED_PATHS = env_list("VERA_SOURCES__DENIED_PATHS", default=[])
# Which scopes may use which source secret: `NAME=group,group;NAME2=group` (a group id
# reaches its subtree: an organisation's secret serves its workspaces). A token_env not
# granted to the source's scope is refused on save and on every run.
VERA_SOURCES__SECRET_SCOPES = {
    renamed_secret(name): groups
    for name, groups in env_list_map("VERA_SOURCES__SECRET_SCOPES").items()
}
# A run asked for (by the schedule or "run now") that has not ended after this long is
# asked for again: its message was lost or its worker died. A copy that finds the run
# going, or already answered, does nothing; so this bounds a lost run's delay only.
VERA_SOURCES__RUN_RESEND_AFTER_S = env_int("VERA_SOURCES__RUN_RESEND_AFTER_S", default=1800)

# --- Auth -------------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
# Accounts are provisioned by admins or SSO, never by self sign-up.
ACCOUNT_ADAPTER = "tenants.adapters.allauth.InviteOnlyAccountAdapter"

# --- Email (invitations) ---------------------------------------------------------------
# The console backend prints mail to the log; production names an SMTP server. The
# inviter is shown the link too, so a missing mail server loses no invitation.
EMAIL_BACKEND = env_str("VERA_EMAIL__BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("VERA_EMAIL__HOST", "localhost")
EMAIL_PORT = env_int("VERA_EMAIL__PORT", default=587)
EMAIL_HOST_USER = env_str("VERA_EMAIL__USER", "")
EMAIL_HOST_PASSWORD = env_str("VERA_EMAIL__PASSWORD", "")
EMAIL_USE_TLS = env_bool("VERA_EMAIL__USE_TLS", default=True)
EMAIL_TIMEOUT = env_int("VERA_EMAIL__TIMEOUT_S", default=10)
DEFAULT_FROM_EMAIL = env_str("VERA_EMAIL__FROM", "VERA <vera@localhost>")
LOGIN_REDIRECT_URL = "/"
LOGIN_URL = "/accounts/login/"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "VERA"

# --- Single sign-on (OpenID Connect), enabled by OIDC_RP_CLIENT_ID ----------------------
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
# A PEM public key instead of a live JWKS, for providers that publish a fixed key.
OIDC_RP_IDP_SIGN_KEY = env_str("OIDC_RP_IDP_SIGN_KEY", "") or None
OIDC_RP_SCOPES = "openid email profile"
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", default=5)
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"
# Bearer access tokens for the REST API: issuer and audience they must carry.
VERA_OIDC__ISSUER = env_str("VERA_OIDC__ISSUER", "")
VERA_OIDC__AUDIENCE = env_str("VERA_OIDC__AUDIENCE", "")
# Just-in-time provisioning: new SSO users join this organisation (group id) as viewers.
VERA_OIDC__ORGANISATION = env_str("VERA_OIDC__ORGANISATION", "")
VERA_OIDC__DEFAULT_ROLE = env_str("VERA_OIDC__DEFAULT_ROLE", "viewer")
# Provider groups to roles per scope: `idp-group=<group id>:<role>, ...`; the groups are
# read from the claim VERA_OIDC__GROUPS_CLAIM of each sign-in (absent: nothing changes).
VERA_OIDC__GROUPS_CLAIM = env_str("VERA_OIDC__GROUPS_CLAIM", "groups")
VERA_OIDC__GROUP_ROLES = env_str("VERA_OIDC__GROUP_ROLES", "")
if VERA_OIDC__DEFAULT_ROLE not in {"viewer", "contributor"}:
    # Single sign-on proves who someone is, not that they may review or administer.
    raise ImproperlyConfigured("VERA_OIDC__DEFAULT_ROLE must be viewer or contributor.")
try:  # a bad mapping stops the start, rather than granting or revoking by surprise
    from tenants.domain.idp import parse_group_roles

    parse_group_roles(VERA_OIDC__GROUP_ROLES)
except ValueError as error:
    raise ImproperlyConfigured(f"VERA_OIDC__GROUP_ROLES: {error}") from None
if OIDC_RP_CLIENT_ID:
    AUTHENTICATION_BACKENDS.append("tenants.adapters.oidc.VeraOIDCBackend")

# --- The MCP server (vera/mcp), an OAuth 2.1 resource server --------------------------
# Its public URL: the resource a token must be issued for (RFC 8707: an OIDC access
# token's `aud`) and where its protected-resource metadata (RFC 9728) points.
VERA_MCP__RESOURCE_URL = env_str("VERA_MCP__RESOURCE_URL", "http://127.0.0.1:8001/mcp").rstrip("/")
# The authorization servers its metadata names (default: VERA_OIDC__ISSUER, when set).
# Tokens are verified against VERA_OIDC__ISSUER and the provider's JWKS (OIDC_OP_JWKS_ENDPOINT).
VERA_MCP__AUTHORIZATION_SERVERS = env_list(
    "VERA_MCP__AUTHORIZATION_SERVERS", default=[VERA_OIDC__ISSUER] if VERA_OIDC__ISSUER else []
)
# Host and Origin headers it answers (others: 421 / 403, against DNS rebinding); by
# default the resource URL's host and origin. `host:*` allows any port.
VERA_MCP__ALLOWED_HOSTS = env_list("VERA_MCP__ALLOWED_HOSTS", default=[])
VERA_MCP__ALLOWED_ORIGINS = env_list("VERA_MCP__ALLOWED_ORIGINS", default=[])

# Failed API authentications per client before 429, and the window they count in.
VERA_AUTH_FAILURE__LIMIT = env_int("VERA_AUTH_FAILURE__LIMIT", default=10)
VERA_AUTH_FAILURE__WINDOW_S = env_int("VERA_AUTH_FAILURE__WINDOW_S", default=300)

# Rate limits of the REST API, per sliding window of VERA_RATE_LIMIT__WINDOW_S seconds:
# searches (each embeds a query, may call a reranker) and writes, for each principal (an
# API key, a user) and for each workspace (all its principals together). A workspace
# admin's scope may override each in the admin (Scopes). Plain reads are not limited.
VERA_RATE_LIMIT__WINDOW_S = env_int("VERA_RATE_LIMIT__WINDOW_S", default=60)
VERA_RATE_LIMIT__PRINCIPAL_SEARCH = env_int("VERA_RATE_LIMIT__PRINCIPAL_SEARCH", default=600)
VERA_RATE_LIMIT__PRINCIPAL_WRITE = env_int("VERA_RATE_LIMIT__PRINCIPAL_WRITE", default=300)
VERA_RATE_LIMIT__WORKSPACE_SEARCH = env_int("VERA_RATE_LIMIT__WORKSPACE_SEARCH", default=3000)
VERA_RATE_LIMIT__WORKSPACE_WRITE = env_int("VERA_RATE_LIMIT__WORKSPACE_WRITE", default=1200)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "vera.schema.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tenants.api.authentication.ApiKeyAuthentication",
        "tenants.api.oidc.OIDCBearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies only, and so only JSON in the schema: form encodings read blanks and
    # booleans their own way, so the same body would validate differently by encoding.
    "DEFAULT_PARSER_CLASSES": ["vera.parsers.BoundedJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["vera.throttling.RateLimitThrottle"],
    "DEFAULT_PAGINATION_CLASS": "vera.api.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "vera.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "VERA API",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get components of their own, with what only input has: required
    # text is not blank (minLength 1), read-only fields are absent.
    "COMPONENT_SPLIT_REQUEST": True,
    # One component per choice set that several fields share.
    "ENUM_NAME_OVERRIDES": {
        "RoleEnum": "tenants.api.serializers.ROLE_NAMES",
        "OpenedScopeKindEnum": ["workspace", "project"],
        "KindEnum": ["markdown", "cmdb", "confluence", "jira", "slack"],  # ConnectorKind
    },
}

# --- i18n, static -------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# None (local, test) serves from the finders; there is no collectstatic output.
STATIC_ROOT: str | None = env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("VERA_LOG__LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
