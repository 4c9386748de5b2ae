"""Small, explicit readers for 12-factor settings: every value comes from os.environ."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    """The variable's value, or `default`; a missing variable with no default is an error."""
    value = os.environ.get(name)
    if value is not None:
        return value
    if default is None:
        raise ImproperlyConfigured(f"Set the environment variable {name}.")
    return default


def env_bool(name: str, *, default: bool) -> bool:
    """`1/true/yes/on` or `0/false/no/off`; anything else is a configuration error."""
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true or false).")


def env_int(name: str, *, default: int) -> int:
    """An integer variable."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None


def env_list(name: str, *, default: list[str] | None = None) -> list[str]:
    """A comma-separated list; blanks are dropped."""
    value = os.environ.get(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def env_int_map(name: str, *, default: dict[str, int] | None = None) -> dict[str, int]:
    """`key=integer` pairs, comma-separated (e.g. `interactive=200,projection=50000`)."""
    value = os.environ.get(name)
    if value is None:
        return dict(default or {})
    pairs: dict[str, int] = {}
    for item in (part.strip() for part in value.split(",")):
        key, sep, number = item.partition("=")
        if not item:
            continue
        if not sep or not number.strip().lstrip("-").isdigit():
            raise ImproperlyConfigured(f"{name}: {item!r} is not key=integer.")
        pairs[key.strip()] = int(number)
    return pairs


def env_list_map(name: str) -> dict[str, list[str]]:
    """`key=item,item` entries separated by `;` (e.g. `SECRET_A=w:1,w:2;SECRET_B=o:3`)."""
    value = os.environ.get(name, "")
    found: dict[str, list[str]] = {}
    for entry in (part.strip() for part in value.split(";")):
        if not entry:
            continue
        key, sep, items = entry.partition("=")
        values = [item.strip() for item in items.split(",") if item.strip()]
        if not sep or not key.strip() or not values:
            raise ImproperlyConfigured(f"{name}: {entry!r} is not key=item,item.")
        found.setdefault(key.strip(), []).extend(values)
    return found


# --- Names from before every VERA_ variable took the `VERA_<AREA>__<KEY>` form ----------

# Old name -> new name, for what an operator sets on a deployment. The development,
# test and benchmark variables were renamed outright (their only readers are here).
RENAMED: dict[str, str] = {
    "VERA_CACHE_URL": "VERA_CACHE__URL",
    "VERA_LOG_LEVEL": "VERA_LOG__LEVEL",
    "VERA_DB_APP_ROLE": "VERA_DB__APP_ROLE",
    "VERA_NEO4J_URI": "VERA_NEO4J__URI",
    "VERA_NEO4J_USER": "VERA_NEO4J__USER",
    "VERA_NEO4J_PASSWORD": "VERA_NEO4J__PASSWORD",
    "VERA_NEO4J_DATABASE": "VERA_NEO4J__DATABASE",
    "VERA_OIDC_ISSUER": "VERA_OIDC__ISSUER",
    "VERA_OIDC_AUDIENCE": "VERA_OIDC__AUDIENCE",
    "VERA_OIDC_ORGANISATION": "VERA_OIDC__ORGANISATION",
    "VERA_OIDC_DEFAULT_ROLE": "VERA_OIDC__DEFAULT_ROLE",
    "VERA_OIDC_GROUPS_CLAIM": "VERA_OIDC__GROUPS_CLAIM",
    "VERA_OIDC_GROUP_ROLES": "VERA_OIDC__GROUP_ROLES",
    "VERA_AUTH_FAILURE_LIMIT": "VERA_AUTH_FAILURE__LIMIT",
    "VERA_AUTH_FAILURE_WINDOW_S": "VERA_AUTH_FAILURE__WINDOW_S",
    "VERA_WORKER_WARM_EMBEDDER": "VERA_WORKER__WARM_EMBEDDER",
    "VERA_FUNCTIONAL_PREDICATES": "VERA_ONTOLOGY__FUNCTIONAL_PREDICATES",
    "VERA_DEMO_ADMIN_PASSWORD": "VERA_DEMO__ADMIN_PASSWORD",
    "VERA_DEMO_REVIEWER_PASSWORD": "VERA_DEMO__REVIEWER_PASSWORD",
}
# A source's secret: VERA_SOURCE_SECRET_<NAME> became VERA_SOURCE_SECRET__<NAME>.
SECRET_PREFIX = "VERA_SOURCE_SECRET__"  # noqa: S105 (a name, not a secret)
LEGACY_SECRET_PREFIX = "VERA_SOURCE_SECRET_"  # noqa: S105


def renamed_secret(name: str) -> str:
    """A source secret's current name: `VERA_SOURCE_SECRET_X` is `VERA_SOURCE_SECRET__X`."""
    if name.startswith(LEGACY_SECRET_PREFIX) and not name.startswith(SECRET_PREFIX):
        return SECRET_PREFIX + name.removeprefix(LEGACY_SECRET_PREFIX)
    return name


def adopt_renamed(environ: MutableMapping[str, str]) -> list[str]:
    """Carry each old name's value over to its new name; say what to rename.

    Called before any setting is read, so an old deployment keeps its values for a
    release: the new name wins when both are set, and every old name seen is named in
    the returned notes (the `vera.W001` system check shows them at every start).
    """
    notes: list[str] = []
    pairs = [(old, RENAMED[old]) for old in RENAMED if old in environ]
    pairs += [(name, renamed_secret(name)) for name in environ if renamed_secret(name) != name]
    for old, new in sorted(pairs):
        if new in environ and environ[new] != environ[old]:
            notes.append(f"{old} is ignored: {new} is set; remove {old}")
            continue
        environ[new] = environ[old]
        notes.append(f"{old} is an old name: rename it {new}")
    return notes
