"""One name rule on every entrypoint that names something: a name that would change how
what follows it reads (a bidi override, a bell) is a 400 naming the rule and the
character, and nothing is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.models import Source
from retrieval.models import Snapshot
from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import ApiKey, Scope
from tenants.services.scopes import membership_grant
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

SPOOF = "\u202eevil\x07"


def _post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, content_type="application/json")


def _refused(response: Any) -> None:
    assert response.status_code == 400, response.content
    assert "may not contain control, format or bidirectional-override" in response.content.decode()
    assert "U+202E at 1" in response.content.decode()


def test_a_spoofing_scope_name_is_refused_opening_and_renaming(
    client: Client, tenant_a: Tenant
) -> None:
    membership_grant(user_id=tenant_a.admin.pk, scope_id=tenant_a.org.pk, role=Role.ADMIN)
    client.force_login(tenant_a.admin)
    body = {"kind": "project", "name": SPOOF, "parent": tenant_a.workspace.group_id}
    _refused(_post(client, "/api/v1/scopes", body))
    assert not Scope.objects.filter(parent=tenant_a.workspace).exists()
    url = f"/api/v1/scopes/{tenant_a.workspace.group_id}"
    _refused(client.patch(url, {"name": SPOOF}, content_type="application/json"))
    tenant_a.workspace.refresh_from_db()
    assert tenant_a.workspace.name == "Acme WS"


def test_a_spoofing_source_key_snapshot_or_label_name_is_refused(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    client.force_login(tenant_a.admin)
    group = tenant_a.workspace.group_id
    source = {"scope": group, "name": SPOOF, "kind": "markdown", "trust_tier": 1,
              "config": {"root": str(tmp_path)}}  # fmt: skip
    _refused(_post(client, "/api/v1/sources", source))
    _refused(_post(client, "/api/v1/keys", {"name": SPOOF, "scope": group, "role_ceiling": "viewer",
                                             "owner": tenant_a.viewer.get_username()}))  # fmt: skip
    _refused(_post(client, "/api/v1/snapshots", {"scope": group, "name": SPOOF}))
    label = client.put(
        "/api/v1/ontology/RUNS_ON?scope=" + group,
        {"label": SPOOF, "words": ["runs on"], "questions": ["where does X run"]},
        content_type="application/json",
    )
    assert label.status_code == 400, label.content
    assert "U+202E" in label.content.decode()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Source.objects.exists()
        assert not ApiKey.objects.exists()
        assert not Snapshot.objects.exists()


def test_a_name_in_another_script_is_kept_as_typed(client: Client, tenant_a: Tenant) -> None:
    client.force_login(tenant_a.admin)
    name = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u00e9quipe"
    body = {"kind": "project", "name": name, "parent": tenant_a.workspace.group_id}
    response = _post(client, "/api/v1/scopes", body)
    assert response.status_code == 201, response.content
    assert response.json()["name"] == name


# Characters that change how a name reads: C0/C1 controls, bidi overrides and isolates,
# invisible marks, separators.
SPOOFERS = ["\x07", "\x1b", "\n", "\x85", "\u200b", "\u200e", "\u202a", "\u202e", "\u2066",
            "\u2069", "\u2028", "\ufeff"]  # fmt: skip
names = st.text(st.characters(codec="utf-8", categories=["L", "N", "Zs", "P"]), min_size=1,
                max_size=40).filter(str.strip)  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=names, spoofer=st.sampled_from(SPOOFERS), at=st.integers(0, 40))
def test_fuzzed_names_with_a_control_or_bidi_character_are_refused_everywhere(
    client: Client, tenant_a: Tenant, tmp_path: Path, name: str, spoofer: str, at: int
) -> None:
    # Inside the name: leading and trailing whitespace (a line break too) is trimmed from
    # every text field before it is read, so only what is kept is judged.
    name = name.strip()
    spoofed = name[:at] + spoofer + name[at:] + "x"
    if at == 0:
        spoofed = "x" + spoofed
    client.force_login(tenant_a.admin)
    group = tenant_a.workspace.group_id
    bodies = {
        "/api/v1/scopes": {"kind": "project", "name": spoofed, "parent": group},
        "/api/v1/sources": {"scope": group, "name": spoofed, "kind": "markdown",
                            "trust_tier": 1, "config": {"root": str(tmp_path)}},
        "/api/v1/keys": {"name": spoofed, "scope": group, "role_ceiling": "viewer",
                         "owner": tenant_a.viewer.get_username()},
        "/api/v1/snapshots": {"scope": group, "name": spoofed},
    }  # fmt: skip
    for url, body in bodies.items():
        response = _post(client, url, body)
        assert response.status_code == 400, (url, repr(spoofed), response.content)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Source.objects.exists()
        assert not ApiKey.objects.exists()
        assert not Snapshot.objects.exists()
    assert not Scope.objects.filter(parent=tenant_a.workspace).exists()
