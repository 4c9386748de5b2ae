"""The rules on scopes and members, alone: who may open, grant and revoke what."""

from __future__ import annotations

import pytest

from tenants.domain.members import grant_refusal, manage_refusal, revoke_refusal, scope_name
from tenants.domain.scopes import Role, ScopeKind

V, C, R, A, OW = Role.VIEWER, Role.CONTRIBUTOR, Role.REVIEWER, Role.ADMIN, Role.OWNER


@pytest.mark.parametrize(
    ("kind", "role", "allowed"),
    [
        (ScopeKind.WORKSPACE, OW, True), (ScopeKind.WORKSPACE, A, True),
        (ScopeKind.WORKSPACE, R, False), (ScopeKind.WORKSPACE, None, False),
        (ScopeKind.PROJECT, A, True), (ScopeKind.PROJECT, V, False),
        (ScopeKind.ORGANISATION, OW, False), (ScopeKind.PERSONAL, OW, False),
    ],
)  # fmt: skip
def test_who_manages_scopes(kind: ScopeKind, role: Role | None, allowed: bool) -> None:
    assert (manage_refusal(kind, role_on_parent=role) is None) is allowed


@pytest.mark.parametrize(
    ("actor", "held", "new", "owners_left", "refused"),
    [
        (A, None, C, 1, None),
        (A, V, A, 1, None),  # up to one's own role
        (A, V, OW, 1, "above their own role"),
        (R, V, C, 1, "needs admin"),
        (None, None, V, 1, "needs admin"),
        (A, OW, V, 1, "role above yours"),
        (OW, OW, A, 0, "last owner"),
        (OW, OW, A, 1, None),
        (OW, A, OW, 1, None),
    ],
)  # fmt: skip
def test_granting(
    actor: Role | None, held: Role | None, new: Role, owners_left: int, refused: str | None
) -> None:
    why = grant_refusal(actor=actor, held=held, new=new, owners_left=owners_left)
    assert (why is None) if refused is None else (why is not None and refused in why)


@pytest.mark.parametrize(
    ("actor", "held", "owners_left", "leaving", "refused"),
    [
        (A, C, 1, False, None),
        (A, OW, 1, False, "role above yours"),
        (R, V, 1, False, "needs admin"),
        (V, V, 1, True, None),  # anyone may leave
        (OW, OW, 0, True, "last owner"),
        (OW, OW, 0, False, "last owner"),
        (OW, OW, 1, True, None),
    ],
)  # fmt: skip
def test_revoking(
    actor: Role, held: Role, owners_left: int, leaving: bool, refused: str | None
) -> None:
    why = revoke_refusal(actor=actor, held=held, owners_left=owners_left, leaving=leaving)
    assert (why is None) if refused is None else (why is not None and refused in why)


def test_scope_names_are_trimmed_and_bounded() -> None:
    assert scope_name("  Platform   team ") == "Platform team"
    # A tab or a line break is a control character: the name rule refuses it, as typed.
    for bad in ("", "   ", None, 3, "x" * 201, "Platform \t team", "Platform\nteam"):
        with pytest.raises(ValueError, match=r"name|characters"):
            scope_name(bad)
