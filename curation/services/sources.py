"""Source use cases: create, update and widen; secrets stay in the environment.

Who may do what (sources are a trust boundary, see README):
- a workspace admin may create and update a source of any kind in a scope they
  administer, but only within the operator's allow-lists (secret-name prefix, hosts,
  file roots), checked here and again when the source runs;
- only an operator, through `manage.py source_reach` (a system principal), may widen
  one source's reach beyond those lists; no tenant-facing form or API can.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from curation.domain.source_policy import (
    SourcePolicy,
    reach_changed,
    source_refusal,
    token_env_refusal,
)
from curation.domain.tiers import Tier
from curation.models import CONNECTOR_KINDS, Source
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record
from tenants.services.scopes import PermissionDenied

_SECRET_LIKE = re.compile(r"token|secret|password|passwd|api[_-]?key|credential|auth", re.I)
UPDATABLE = frozenset({"name", "config", "token_env", "trust_tier", "schedule_seconds", "enabled"})


def source_policy(*, reach: Mapping[str, Any] | None = None) -> SourcePolicy:
    """The operator's policy (VERA_SOURCES__*), widened by one source's reach if given."""
    try:
        policy = SourcePolicy(
            token_env_prefix=settings.VERA_SOURCES__TOKEN_ENV_PREFIX,
            allowed_hosts=tuple(settings.VERA_SOURCES__ALLOWED_HOSTS),
            file_roots=tuple(settings.VERA_SOURCES__FILE_ROOTS),
        )
    except ValueError as error:
        raise ImproperlyConfigured(f"VERA_SOURCES__*: {error}") from None
    return policy.widened(reach) if reach else policy


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
    policy: SourcePolicy | None = None,
) -> None:
    """Raise ValueError with a clear message for anything a source must not be or reach."""
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
    policy = policy or source_policy()
    if reason := token_env_refusal(token_env, prefix=policy.token_env_prefix):
        raise ValueError(reason)
    # realpath: a symlink or `..` that leaves the allowed roots is judged by where it lands.
    if reason := source_refusal(kind, config, policy, resolve=os.path.realpath):
        raise ValueError(reason)


def _require_admin(actor: Principal, group_id: str) -> None:
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("only an admin of the scope can add or change its sources")


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
    source_validate(kind=kind, config=config, token_env=token_env, trust_tier=trust_tier)
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
    for field, value in changes.items():
        setattr(source, field, value)
    source_validate(
        kind=source.kind,
        config=source.config,
        token_env=source.token_env,
        trust_tier=source.trust_tier,
        # What an operator granted this source still holds after a tenant's edit.
        policy=source_policy(reach=source.reach),
    )
    source.save(update_fields=[*changes])
    audit_record(
        actor=actor,
        group_id=source.group_id,
        action="source.update",
        target=("source", source.pk),
        data={"changed": sorted(changes)},
    )
    return source


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
