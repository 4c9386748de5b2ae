"""Source use cases: create, update and widen; secrets stay in the environment.

Who may do what (sources are a trust boundary, see docs/sources.md):
- a workspace admin may create and update a source of any kind in a scope they
  administer, but only within the operator's allow-lists (secret-name prefix, hosts,
  file roots), checked here and again when the source runs;
- only an operator, through `manage.py source_reach` (a system principal), may widen
  one source's reach beyond those lists; no tenant-facing form or API can.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import F, Q

from common.errors import PermissionDenied
from curation.domain.connector_config import config_refusal, kind_rules
from curation.domain.source_policy import (
    SourcePolicy,
    reach_changed,
    secret_grant_refusal,
    source_refusal,
    token_env_refusal,
)
from curation.domain.sources import AGENT_KIND
from curation.domain.tiers import Tier
from curation.models import CONNECTOR_KINDS, Source
from kernel.names import checked_name
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope
from tenants.services.audit import audit_record

_SECRET_LIKE = re.compile(r"token|secret|password|passwd|api[_-]?key|credential|auth", re.I)
MAX_SCOPE_DEPTH = 8  # organisation > workspace > project: deeper means a cycle
UPDATABLE = frozenset({"name", "config", "token_env", "trust_tier", "schedule_seconds", "enabled"})
AGENT_UPDATABLE = frozenset({"name", "enabled"})


def source_policy(*, reach: Mapping[str, Any] | None = None) -> SourcePolicy:
    """The operator's policy (VERA_SOURCES__*), widened by one source's reach if given."""
    try:
        policy = SourcePolicy(
            token_env_prefix=settings.VERA_SOURCES__TOKEN_ENV_PREFIX,
            allowed_hosts=tuple(settings.VERA_SOURCES__ALLOWED_HOSTS),
            file_roots=tuple(settings.VERA_SOURCES__FILE_ROOTS),
            secret_scopes={
                name: tuple(groups) for name, groups in settings.VERA_SOURCES__SECRET_SCOPES.items()
            },
            denied_paths=denied_paths(),
            denied_endpoints=denied_endpoints(),
        )
    except ValueError as error:
        raise ImproperlyConfigured(f"VERA_SOURCES__*: {error}") from None
    return policy.widened(reach) if reach else policy


def denied_paths() -> tuple[str, ...]:
    """What no source reads, whatever the roots: the checkout's service state and secrets
    (`.devservices/` holds every profile's data and role passwords), `.env`, `.git`, the
    local object store, and what the operator adds (VERA_SOURCES__DENIED_PATHS)."""
    base = Path(settings.BASE_DIR)
    built_in = [base / ".devservices", base / ".env", base / ".git"]
    if settings.VERA_OBJECT_STORE__BACKEND == "local":
        built_in.append(Path(settings.VERA_OBJECT_STORE__ROOT))
    paths = [str(path.absolute()) for path in built_in]
    return tuple(dict.fromkeys([*paths, *settings.VERA_SOURCES__DENIED_PATHS]))


_SERVICE_URLS = (
    "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "VERA_MEMORY__FALKORDB_URL",
    "VERA_NEO4J__URI", "VERA_OBJECT_STORE__ENDPOINT_URL", "VERA_RERANKER__BASE_URL",
    "VERA_EXTRACTOR__LLM_BASE_URL", "VERA_JUDGE__LLM_BASE_URL",
)  # fmt: skip
_DEFAULT_PORTS = {"redis": 6379, "rediss": 6379, "neo4j": 7687, "bolt": 7687, "http": 80,
                  "https": 443, "postgres": 5432, "postgresql": 5432}  # fmt: skip


def denied_endpoints() -> tuple[tuple[str, int], ...]:
    """(host, port) of every service this server talks to: its database, broker, cache,
    graph, object store and model endpoints. No source connects to them."""
    urls = [str(getattr(settings, name, "") or "") for name in _SERVICE_URLS]
    urls += [str(cache.get("LOCATION", "")) for cache in settings.CACHES.values()]
    found = [
        (str(db.get("HOST") or "127.0.0.1"), int(db.get("PORT") or 5432))
        for db in settings.DATABASES.values()
    ]
    for url in urls:
        try:
            parts = urlsplit(url)
            port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            continue
        if parts.hostname and port:
            found.append((parts.hostname, port))
    return tuple(dict.fromkeys(found))


def source_scope_lineage(group_id: str) -> list[str]:
    """The scope's group id, then its ancestors' (the scope registry is not under RLS)."""
    lineage: list[str] = []
    scope = Scope.objects.filter(group_id=group_id).select_related("parent__parent").first()
    while scope is not None and len(lineage) < MAX_SCOPE_DEPTH:
        lineage.append(scope.group_id)
        scope = scope.parent
    return lineage or [group_id]


def source_secret_refusal(*, token_env: str, group_id: str, policy: SourcePolicy) -> str:
    """Why a source of `group_id` may not use the secret `token_env` ("" if it may): its
    name must fit the operator's prefix and the operator must have given it to the scope
    or an ancestor. Checked on save and again by every run."""
    if reason := token_env_refusal(token_env, prefix=policy.token_env_prefix):
        return reason
    if not token_env:
        return ""
    return secret_grant_refusal(token_env, source_scope_lineage(group_id), policy)


def _secret_keys(config: Any, path: str = "") -> list[str]:
    if isinstance(config, dict):
        found = []
        for key, value in config.items():
            where = f"{path}.{key}" if path else str(key)
            if _SECRET_LIKE.search(str(key)):
                found.append(where)
            found += _secret_keys(value, where)
        return found
    return []


def source_validate(
    *,
    kind: str,
    config: dict[str, Any],
    token_env: str,
    trust_tier: int,
    group_id: str,
    policy: SourcePolicy | None = None,
) -> None:
    """Raise ValueError with a clear message for anything a source must not be or reach."""
    if kind == AGENT_KIND:
        raise ValueError(
            "the agents' source is kept by VERA, not configured: its proposals wait in the "
            "review queue (retract the source to withdraw them all)"
        )
    if kind not in CONNECTOR_KINDS:
        raise ValueError(
            f"unknown connector kind {kind!r}; choose one of {', '.join(CONNECTOR_KINDS)}"
        )
    if trust_tier not in {t.value for t in Tier}:
        raise ValueError("trust_tier must be 1, 2, 3 or 4")
    if not isinstance(config, dict):
        raise ValueError("config must be a JSON object")
    if secret := _secret_keys(config):
        raise ValueError(
            f"config key {secret[0]!r} looks like a secret: put the secret in an environment "
            "variable and give its name in token_env"
        )
    # The rules the run checks (build_connector), so a bad config is refused here, not later.
    if reason := config_refusal(kind, config):
        raise ValueError(reason)
    rules = kind_rules(kind)
    if rules is not None and rules.needs_token and not token_env:
        raise ValueError(
            f"the {kind} connector needs a token: put it in an environment variable the "
            "operator gave this scope and name that variable in token_env"
        )
    policy = policy or source_policy()
    if reason := source_secret_refusal(token_env=token_env, group_id=group_id, policy=policy):
        raise ValueError(reason)
    # realpath: a symlink or `..` that leaves the allowed roots is judged by where it lands.
    if reason := source_refusal(kind, config, policy, resolve=os.path.realpath):
        raise ValueError(reason)


SOURCE_ADMINS_ONLY = "only an admin of the scope can add or change its sources"


def _require_admin(actor: Principal, group_id: str) -> None:
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied(SOURCE_ADMINS_ONLY)


@transaction.atomic
def source_create(
    *,
    actor: Principal,
    group_id: str,
    name: str,
    kind: str,
    config: dict[str, Any],
    trust_tier: int,
    token_env: str = "",
    schedule_seconds: int | None = None,
    origin_group_id: str | None = None,
) -> Source:
    """Create a source in a scope the actor administers, within the allow-lists; audited."""
    _require_admin(actor, group_id)
    checked_name(name)
    source_validate(
        kind=kind, config=config, token_env=token_env, trust_tier=trust_tier, group_id=group_id
    )
    source = Source.objects.create(
        group_id=group_id,
        origin_group_id=origin_group_id or group_id,
        name=name,
        kind=kind,
        config=config,
        token_env=token_env,
        trust_tier=trust_tier,
        schedule_seconds=schedule_seconds,
    )
    audit_record(
        actor=actor,
        group_id=group_id,
        action="source.create",
        target=("source", source.pk),
        data={"kind": kind, "tier": trust_tier, "name": name},
    )
    return source


@transaction.atomic
def source_update(*, actor: Principal, source_id: int, **changes: Any) -> Source:
    """Change a source's settings (not its kind, scope or reach), within its policy; audited."""
    if unknown := sorted(set(changes) - UPDATABLE):
        raise ValueError(
            f"cannot change {', '.join(unknown)} of a source; only {', '.join(sorted(UPDATABLE))}"
        )
    source = Source.objects.select_for_update().get(pk=source_id)
    _require_admin(actor, source.group_id)
    if "name" in changes:
        checked_name(str(changes["name"]))
    for field, value in changes.items():
        setattr(source, field, value)
    if source.kind == AGENT_KIND:
        # No connector to check: its name, and whether agents may propose (enabled).
        if fixed := sorted(set(changes) - AGENT_UPDATABLE):
            raise ValueError(f"the agents' source has no {', '.join(fixed)} to change")
    else:
        _validated(source)
    source.save(update_fields=[*changes])
    audit_record(
        actor=actor,
        group_id=source.group_id,
        action="source.update",
        target=("source", source.pk),
        data={"changed": sorted(changes)},
    )
    return source


def _validated(source: Source) -> None:
    """The source as changed, checked as at creation (its reach included)."""
    source_validate(
        kind=source.kind,
        config=source.config,
        token_env=source.token_env,
        trust_tier=source.trust_tier,
        group_id=source.group_id,
        # What an operator granted this source still holds after a tenant's edit.
        policy=source_policy(reach=source.reach),
    )


def is_operator(actor: Principal) -> bool:
    """Whether the actor is the operator (a system principal), never a user or an API key."""
    return actor.user_id is None and actor.api_key_id is None and actor.label.startswith("system:")


@transaction.atomic
def source_reach_change(
    *,
    actor: Principal,
    source_id: int,
    hosts: Sequence[str] = (),
    file_roots: Sequence[str] = (),
    remove: bool = False,
) -> Source:
    """Widen (or, with `remove`, narrow) one source's reach; operator only, audited."""
    if not is_operator(actor):
        raise PermissionDenied("only the operator (manage.py source_reach) can change a reach")
    source = Source.objects.select_for_update().get(pk=source_id)
    _require_admin(actor, source.group_id)
    before = source.reach
    source.reach = reach_changed(before, hosts=hosts, file_roots=file_roots, remove=remove)
    source.save(update_fields=["reach"])
    audit_record(
        actor=actor,
        group_id=source.group_id,
        action="source.reach.narrow" if remove else "source.reach.widen",
        target=("source", source.pk),
        data={"hosts": list(hosts), "file_roots": list(file_roots), "reach": source.reach},
    )
    return source


# --- running a source now ------------------------------------------------------------------

SOURCE_RUNNERS_ONLY = "running a source needs the admin role in its scope"


class RunRefused(Exception):
    """Why a source cannot be run now. `going` when a run of it is already under way:
    the caller waits for that run (HTTP 409), it is not an error in the request."""

    def __init__(self, reason: str, *, going: bool = False) -> None:
        super().__init__(reason)
        self.going = going


@dataclass(frozen=True)
class RunRequest:
    """A run asked for: `sent` when this call asked for it (the caller sends it to a
    worker), else the run asked for at `requested_at` is still waiting for one."""

    source: Source
    requested_at: dt.datetime
    sent: bool


def run_lock_key(source_id: int) -> str:
    """The name of a source's run lock (a PostgreSQL advisory lock on its 64-bit hash):
    held by the session running the source, for the whole run (`source_run_lock`)."""
    return f"vera.ingest:{source_id}"


def source_run_going(source_id: int) -> bool:
    """Whether a session holds the source's run lock now. A probe: it takes the lock for
    the caller's transaction when free, so no run starts before that transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", [run_lock_key(source_id)]
        )
        row = cursor.fetchone()
    return not (row and row[0])


def source_run_held(source_id: int) -> bool:
    """Whether a session holds the source's run lock now, read from `pg_locks` without
    taking it (a page showing a run; the primary's locks, whatever the page reads)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND objsubid = 1 AND classid::bigint = (k.key >> 32) & 4294967295"
            " AND objid::bigint = k.key & 4294967295)"
            " FROM (SELECT hashtextextended(%s, 0) AS key) k",
            [run_lock_key(source_id)],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def run_waiting(source: Source, *, now: dt.datetime) -> bool:
    """Whether a run asked for has not ended yet and is not so old it is asked for again
    (VERA_SOURCES__RUN_RESEND_AFTER_S: its message lost, its worker gone)."""
    asked = source.run_requested_at
    if asked is None or (source.last_run_at is not None and asked <= source.last_run_at):
        return False
    return asked >= now - dt.timedelta(seconds=settings.VERA_SOURCES__RUN_RESEND_AFTER_S)


def _started_and_gone(source: Source) -> bool:
    """Whether the run sent for the source's request started and, no run being going
    now (probed first), died before it ended: the request is not waiting any more."""
    progress, asked = source.progress or {}, source.run_requested_at
    try:
        started = dt.datetime.fromisoformat(str(progress.get("started_at")))
    except ValueError:
        return False
    return progress.get("state") == "running" and asked is not None and started >= asked


@transaction.atomic
def source_run_request(*, actor: Principal, source_id: int, now: dt.datetime) -> RunRequest:
    """Ask for a run of the source now, from its cursor (its scope's admins; audited).

    Refused, with why, for the agents' source (nothing to fetch), a disabled source and
    a source whose run is going. A run asked for earlier and not yet ended is answered
    instead of asking again, so a second click sends nothing; the scheduler does not
    send a source that is asked for either.
    """
    source = Source.objects.select_for_update().get(pk=source_id)
    if not actor.can(Role.ADMIN, source.group_id):
        raise PermissionDenied(SOURCE_RUNNERS_ONLY)
    if source.kind == AGENT_KIND:
        raise RunRefused(
            "the agents' source has no connector to run: its proposals arrive through the API"
        )
    if not source.enabled:
        raise RunRefused("the source is disabled: enable it before running it")
    if source_run_going(source.pk):
        progress = source.progress or {}
        raise RunRefused(
            f"a run of this source is going (started {progress.get('started_at', 'earlier')}, "
            f"{progress.get('records', 0)} records read so far); it ends by itself",
            going=True,
        )
    if run_waiting(source, now=now) and not _started_and_gone(source):
        assert source.run_requested_at is not None  # noqa: S101 - run_waiting checked it
        return RunRequest(source=source, requested_at=source.run_requested_at, sent=False)
    source.run_requested_at = now
    source.save(update_fields=["run_requested_at"])
    audit_record(
        actor=actor,
        group_id=source.group_id,
        action="source.run",
        target=("source", source.pk),
        data={"requested_at": now.isoformat()},
    )
    return RunRequest(source=source, requested_at=now, sent=True)


def source_run_scheduled(*, source_id: int, now: dt.datetime, resend_before: dt.datetime) -> bool:
    """Mark a due source as asked for by the schedule (in its group's context); False when
    it is no longer due (asked for meanwhile by an admin or another scheduler)."""
    due = Source.objects.filter(pk=source_id, enabled=True).filter(
        Q(run_requested_at__isnull=True)
        | Q(last_run_at__isnull=False, run_requested_at__lte=F("last_run_at"))
        | Q(run_requested_at__lt=resend_before)
    )
    return due.update(run_requested_at=now) == 1
