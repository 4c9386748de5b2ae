"""Small, explicit readers for 12-factor settings: every value comes from os.environ."""

from __future__ import annotations

import os

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
