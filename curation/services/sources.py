"""Source use cases: create and validate; secrets stay in the environment."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from curation.domain.tiers import Tier
from curation.models import CONNECTOR_KINDS, Source
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.audit import audit_record
from tenants.services.scopes import PermissionDenied

_SECRET_LIKE = re.compile(r"token|secret|password|passwd|api[_-]?key|credential|auth", re.I)
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


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


def source_validate(*, kind: str, config: dict[str, Any], token_env: str, trust_tier: int) -> None:
    """Raise ValueError with a clear message for anything a source must not be."""
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
    if token_env and not _ENV_NAME.match(token_env):
        raise ValueError(f"token_env {token_env!r} is not an environment variable name")


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
    """Create a source in a scope the actor administers; audited."""
    if not actor.can(Role.ADMIN, group_id):
        raise PermissionDenied("only an admin of the scope can add sources to it")
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
        principal=actor,
        group_id=group_id,
        action="source.create",
        target=("source", source.pk),
        data={"kind": kind, "tier": trust_tier, "name": name},
    )
    return source
