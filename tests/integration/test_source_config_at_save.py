"""A source's config is refused at save, with the rules its run uses, through each entrypoint.

Before, an unbounded `max_bytes`, a negative `page_size` or a zone that does not exist was
stored and failed only when the worker built the connector. Now POST /api/v1/sources
answers 400 naming the key and stores nothing; an edit in the admin (the way a source is
changed: the API has no PATCH for sources) shows the refusal and keeps the stored config;
`manage.py add_source` fails with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from curation.models import Source
from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import AuditEvent
from tests.support.tenancy import Tenant, admin_site_login, markdown_source

pytestmark = pytest.mark.django_db

LOOPBACK = "http://127.0.0.1:9"  # allowed by the test profile; never reached at save
SECRET = "VERA_SOURCE_SECRET__TEST_JIRA"


def _post(
    client: Client, tenant: Tenant, kind: str, config: dict[str, Any], token_env: str = ""
) -> Any:
    key = tenant.issue_key(owner=tenant.admin, role=Role.ADMIN).plaintext
    body = {
        "scope": tenant.workspace.group_id,
        "name": "refused",
        "kind": kind,
        "config": config,
        "token_env": token_env,
        "trust_tier": 2,
    }
    return client.post(
        "/api/v1/sources", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


def _sources(tenant: Tenant) -> int:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.count()


# (kind, config, what the message must say); a file kind's path is below the test's folder.
REFUSED = [
    pytest.param("markdown", {"root": ".", "max_bytes": 10**12}, "max_bytes must be at", id="max"),
    pytest.param("cmdb", {"path": "cmdb.csv", "page_size": -5}, "page_size must be at", id="neg"),
    pytest.param(
        "jira", {"base_url": LOOPBACK, "timezone": "Mars/Olympus"}, "timezone names an", id="tz"
    ),
    pytest.param("jira", {"base_url": LOOPBACK, "jqll": "x"}, "config key(s): jqll", id="key"),
    pytest.param(
        "slack", {"channel": "C0OPS", "page_size": True}, "'page_size' has the wrong", id="bool"
    ),
    pytest.param(
        "conversation", {"root": ".", "timezone": "Mars/Olympus"}, "timezone names an", id="chat"
    ),
]


def _below(folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with its file path (root, path) made absolute below `folder`."""
    return {
        key: str(folder / value) if key in {"root", "path"} else value
        for key, value in config.items()
    }


@pytest.mark.parametrize(("kind", "config", "message"), REFUSED)
def test_rest_answers_400_naming_the_key_when_the_config_breaks_a_rule(
    client: Client, tenant_a: Tenant, tmp_path: Path, kind: str, config: dict[str, Any],
    message: str,
) -> None:  # fmt: skip
    response = _post(client, tenant_a, kind, _below(tmp_path, config))
    assert response.status_code == 400
    assert message in response.json()["detail"]


@pytest.mark.parametrize(("kind", "config", "message"), REFUSED)
def test_rest_stores_no_source_when_the_config_breaks_a_rule(
    client: Client, tenant_a: Tenant, tmp_path: Path, kind: str, config: dict[str, Any],
    message: str,
) -> None:  # fmt: skip
    _post(client, tenant_a, kind, _below(tmp_path, config))
    assert _sources(tenant_a) == 0


def test_rest_creates_the_source_when_the_config_keeps_the_rules(
    client: Client, tenant_a: Tenant, settings: Any
) -> None:
    settings.VERA_SOURCES__SECRET_SCOPES = {SECRET: [tenant_a.workspace.group_id]}
    config = {"base_url": LOOPBACK, "timezone": "Europe/Paris", "page_size": 100}
    response = _post(client, tenant_a, "jira", config, token_env=SECRET)
    assert response.status_code == 201, response.content
    assert response.json()["config"] == config
    assert _sources(tenant_a) == 1


def _admin_edit(client: Client, tenant: Tenant, source_id: int, config: dict[str, Any]) -> Any:
    """The admin's change form posted as a browser would, with a new config."""
    admin_site_login(client, tenant.admin)
    form = {
        "name": "docs", "config": json.dumps(config), "token_env": "", "trust_tier": "1",
        "schedule_seconds": "", "enabled": "on", "_save": "Save",
    }  # fmt: skip
    return client.post(f"/admin/curation/source/{source_id}/change/", form)


def test_admin_edit_shows_the_refusal_and_keeps_the_config_when_a_value_is_bad(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id = markdown_source(tenant_a, tmp_path, tier=1)
    response = _admin_edit(client, tenant_a, source_id, {"root": str(tmp_path), "page_size": -5})
    assert response.status_code == 200
    assert "page_size must be at least 1" in response.content.decode()
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Source.objects.get(pk=source_id).config == {"root": str(tmp_path)}
        assert not AuditEvent.objects.filter(action="source.update").exists()


def test_admin_edit_saves_when_the_new_config_keeps_the_rules(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    source_id = markdown_source(tenant_a, tmp_path, tier=1)
    config = {"root": str(tmp_path), "page_size": 50}
    response = _admin_edit(client, tenant_a, source_id, config)
    assert response.status_code == 302
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Source.objects.get(pk=source_id).config == config


def test_add_source_command_fails_naming_the_key_when_the_config_breaks_a_rule(
    tenant_a: Tenant,
) -> None:
    config = json.dumps({"base_url": LOOPBACK, "timezone": "Mars/Olympus"})
    with pytest.raises(CommandError, match="timezone names an unknown time zone"):
        call_command(
            "add_source", "--group", tenant_a.workspace.group_id, "--name", "jira",
            "--kind", "jira", "--tier", "2", "--config", config,
        )  # fmt: skip


def test_rest_answers_400_when_a_kind_that_needs_a_token_names_none(
    client: Client, tenant_a: Tenant
) -> None:
    response = _post(client, tenant_a, "jira", {"base_url": LOOPBACK})
    assert response.status_code == 400
    assert "the jira connector needs a token" in response.json()["detail"]
    assert _sources(tenant_a) == 0
