"""Roles from an identity provider's groups (pure): which provider group gives which role
on which scope, as an operator configures it (VERA_OIDC__GROUP_ROLES)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tenants.domain.scopes import Role

_GROUP_ID = re.compile(r"^[owp]:[0-9a-f]{32}$")


@dataclass(frozen=True)
class GroupRole:
    """Members of the provider's `idp_group` hold `role` on the scope `group_id`."""

    idp_group: str
    group_id: str
    role: Role


def parse_group_roles(text: str) -> tuple[GroupRole, ...]:
    """`idp-group=<scope group id>:<role>` entries, separated by commas or new lines;
    ValueError naming the first bad one."""
    found = []
    for entry in re.split(r"[,\n]", text):
        entry = entry.strip()
        if not entry:
            continue
        idp_group, equals, target = entry.rpartition("=")
        group_id, colon, role = target.rpartition(":")
        if not (equals and colon and idp_group.strip()):
            raise ValueError(f"{entry!r} is not idp-group=<group id>:<role>")
        if not _GROUP_ID.match(group_id):
            raise ValueError(f"{entry!r}: {group_id!r} is not an o:, w: or p: group id")
        if role.upper() not in Role.__members__:
            raise ValueError(f"{entry!r}: {role!r} is not a role")
        found.append(GroupRole(idp_group.strip(), group_id, Role[role.upper()]))
    return tuple(found)


def wanted_roles(mapping: Iterable[GroupRole], groups: Iterable[str]) -> dict[str, Role]:
    """The role on each mapped scope that the person's provider groups give (the highest
    when several do); a mapped scope absent from the result is one they lose."""
    held = set(groups)
    wanted: dict[str, Role] = {}
    for rule in mapping:
        if rule.idp_group in held and wanted.get(rule.group_id, Role.VIEWER - 1) < rule.role:
            wanted[rule.group_id] = rule.role
    return wanted
