"""Provider groups to roles per scope, alone: parsing the operator's mapping and the role
each scope gets from a person's groups."""

from __future__ import annotations

import pytest

from tenants.domain.idp import GroupRole, parse_group_roles, wanted_roles
from tenants.domain.scopes import Role

W = "w:" + "a" * 32
O = "o:" + "b" * 32  # noqa: E741 - an organisation's id


def test_the_mapping_reads_entries_split_by_commas_or_lines() -> None:
    mapping = parse_group_roles(f" ops=admin-x={W}:admin ,\nall staff={O}:viewer,, ")
    assert mapping == (
        GroupRole("ops=admin-x", W, Role.ADMIN),
        GroupRole("all staff", O, Role.VIEWER),
    )
    assert parse_group_roles("") == ()


@pytest.mark.parametrize(
    "bad",
    ["ops", f"ops={W}", f"={W}:admin", "ops=w:short:admin", f"ops={W}:emperor",
     "ops=u:" + "c" * 32 + ":owner"],
)  # fmt: skip
def test_a_bad_entry_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match="is not"):
        parse_group_roles(bad)


def test_each_scope_gets_the_highest_role_its_groups_give() -> None:
    mapping = parse_group_roles(f"a={W}:viewer,b={W}:admin,c={O}:reviewer")
    assert wanted_roles(mapping, ["a", "b", "z"]) == {W: Role.ADMIN}
    assert wanted_roles(mapping, ["c"]) == {O: Role.REVIEWER}
    assert wanted_roles(mapping, []) == {}
