"""Scope kinds, opaque group ids and totally ordered roles (pure Python)."""

from __future__ import annotations

import enum
import secrets


class ScopeKind(enum.StrEnum):
    """What a scope is; the value is its group id prefix."""

    ORGANISATION = "o"
    WORKSPACE = "w"
    PROJECT = "p"
    PERSONAL = "u"


# Which kind of scope each kind must sit under (None: a root).
PARENT_KIND: dict[ScopeKind, ScopeKind | None] = {
    ScopeKind.ORGANISATION: None,
    ScopeKind.WORKSPACE: ScopeKind.ORGANISATION,
    ScopeKind.PROJECT: ScopeKind.WORKSPACE,
    ScopeKind.PERSONAL: None,
}


class Role(enum.IntEnum):
    """Membership roles, totally ordered: a higher role can do all a lower one can."""

    VIEWER = 10
    CONTRIBUTOR = 20
    REVIEWER = 30
    ADMIN = 40
    OWNER = 50


def new_group_id(kind: ScopeKind) -> str:
    """An opaque group id assigned by VERA: kind prefix + 128 random bits."""
    return f"{kind.value}:{secrets.token_hex(16)}"


def check_parent(kind: ScopeKind, parent_kind: ScopeKind | None) -> None:
    """Raise ValueError unless a scope of `kind` may sit under a scope of `parent_kind`."""
    expected = PARENT_KIND[kind]
    if parent_kind != expected:
        wanted = f"an {expected.name.lower()}" if expected else "no parent"
        raise ValueError(f"a {kind.name.lower()} scope needs {wanted}")
