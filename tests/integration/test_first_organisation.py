"""A deployment's first organisation: an operator's command or a superuser's portal page
opens it with its owner, who can then invite colleagues; audited; refusals say why."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import AuditEvent, Membership, Scope
from tests.support.tenancy import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice():
    return get_user_model().objects.create_user(
        username="alice", email="alice@example.org", password=PASSWORD
    )


def _organisation(name: str) -> Scope:
    return Scope.objects.get(kind=ScopeKind.ORGANISATION, name=name)


def test_the_command_opens_an_organisation_whose_owner_invites_colleagues(
    client: Client, alice
) -> None:
    out = StringIO()
    call_command("create_organisation", "--name", "Acme Corp", "--owner", "alice@example.org",
                 stdout=out)  # fmt: skip
    organisation = _organisation("Acme Corp")
    assert out.getvalue().startswith(organisation.group_id)
    membership = Membership.objects.get(scope=organisation, user=alice)
    assert membership.role == Role.OWNER
    with rls.tenant_context(Principal(label="t", roles={organisation.group_id: Role.OWNER})):
        actions = list(
            AuditEvent.objects.filter(group_id=organisation.group_id)
            .order_by("pk")
            .values_list("action", "actor_label")
        )
    assert actions == [("scope.open", "operator:command:create_organisation"),
                       ("role.grant", "operator:command:create_organisation")]  # fmt: skip
    client.force_login(alice)
    opened = client.post(
        "/api/v1/scopes",
        {"kind": "workspace", "name": "Platform", "parent": organisation.group_id},
        content_type="application/json",
    )
    assert opened.status_code == 201, opened.content
    invited = client.post(
        f"/api/v1/scopes/{opened.json()['group_id']}/invitations",
        {"email": "bob@example.org", "role": "admin"},
        content_type="application/json",
    )
    assert invited.status_code == 201, invited.content


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "Acme", "--owner", "nobody"], "no single active user"),
        (["--name", "   ", "--owner", "alice"], "a scope needs a name"),
        (["--name", "\u202eAcme", "--owner", "alice"], r"U\+202E at 1"),
    ],
)
def test_the_command_refuses_with_the_reason_and_opens_nothing(
    alice, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("create_organisation", *args)
    assert not Scope.objects.filter(kind=ScopeKind.ORGANISATION).exists()


def test_two_organisations_are_not_named_alike(alice) -> None:
    call_command("create_organisation", "--name", "Acme", "--owner", "alice", stdout=StringIO())
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_organisation", "--name", "ACME", "--owner", "alice")


def test_a_deactivated_user_is_named_no_owner(alice) -> None:
    alice.is_active = False
    alice.save()
    with pytest.raises(CommandError):
        call_command("create_organisation", "--name", "Acme", "--owner", "alice")


def test_only_a_superuser_opens_organisations_in_the_portal(client: Client, alice) -> None:
    client.force_login(alice)
    assert client.get("/scopes/organisations/").status_code == 404
    assert client.post("/scopes/organisations/", {"name": "X", "owner": "alice"}).status_code == 404
    assert not Scope.objects.filter(kind=ScopeKind.ORGANISATION).exists()
    root = get_user_model().objects.create_superuser(
        username="root", email="root@example.org", password=PASSWORD
    )
    client.force_login(root)
    page = client.get("/scopes/")
    assert "/scopes/organisations/" in page.content.decode()
    done = client.post("/scopes/organisations/", {"name": "Acme", "owner": "alice"}, follow=True)
    assert done.status_code == 200
    assert "Opened Acme" in done.content.decode()
    organisation = _organisation("Acme")
    assert Membership.objects.get(scope=organisation, user=alice).role == Role.OWNER
    refused = client.post("/scopes/organisations/", {"name": "Beta", "owner": "ghost"})
    assert refused.status_code == 200
    assert "Not opened: no single active user" in refused.content.decode()
