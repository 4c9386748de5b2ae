"""Sources reach only what the operator gave them: secrets per scope, never the servers'
own state, secrets or ports, whatever the allow-lists say.

Each test is an attack a tester made through the real entrypoints (the REST API, a
forged row run by the ingest task), against the real test servers and a loopback
recorder that proves nothing reached it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from curation.models import Episode, Source
from curation.services.sources import source_create
from curation.usecases import ingest_now
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.recorder import Recorder
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db
SECRET = "VERA_SOURCE_SECRET__ACME_WIKI"
NOT_GIVEN = f"token_env {SECRET!r} is not given to"
OWN_STATE = "is where this server keeps its own state or secrets"
OWN_SERVICE = "one of this server's own services"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


@pytest.fixture
def acme_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(SECRET, "acme-wiki-token")
    return SECRET


def _grant(settings: Any, *group_ids: str) -> None:
    settings.VERA_SOURCES__SECRET_SCOPES = {SECRET: list(group_ids)}


def _post(client: Client, tenant: Tenant, body: dict[str, Any]) -> Any:
    key = tenant.issue_key(owner=tenant.admin, role=Role.ADMIN).plaintext
    return client.post(
        "/api/v1/sources", body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )  # fmt: skip


def _wiki(tenant: Tenant, base_url: str) -> dict[str, Any]:
    return {
        "scope": tenant.workspace.group_id, "name": "wiki", "kind": "confluence",
        "config": {"base_url": base_url}, "token_env": SECRET, "trust_tier": 2,
    }  # fmt: skip


def _forge(tenant: Tenant, **fields: Any) -> Source:
    """A row written straight into the table, around every service check."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.create(
            group_id=tenant.workspace.group_id, origin_group_id=tenant.workspace.group_id,
            name="forged", trust_tier=2, **fields,
        )  # fmt: skip


def _sources(tenant: Tenant) -> int:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.count()


# --- secrets are bound to the scopes the operator gave them to ------------------------------


def test_another_workspaces_secret_is_refused_when_creating_a_source(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, settings: Any, recorder: Recorder
) -> None:
    _grant(settings, tenant_a.workspace.group_id)
    response = _post(client, tenant_b, _wiki(tenant_b, recorder.url))
    assert response.status_code == 400
    assert f"{NOT_GIVEN} {tenant_b.workspace.group_id}" in response.json()["detail"]
    assert _sources(tenant_b) == 0
    assert recorder.seen == []


def test_a_secret_given_to_nobody_is_refused_when_creating_a_source(
    client: Client, tenant_a: Tenant, recorder: Recorder
) -> None:
    response = _post(client, tenant_a, _wiki(tenant_a, recorder.url))
    assert response.status_code == 400
    assert NOT_GIVEN in response.json()["detail"]
    assert _sources(tenant_a) == 0


def test_a_forged_row_naming_another_workspaces_secret_fails_its_run_and_sends_nothing(
    tenant_a: Tenant, tenant_b: Tenant, settings: Any, recorder: Recorder, acme_secret: str
) -> None:
    _grant(settings, tenant_a.workspace.group_id)
    source = _forge(tenant_b, kind="confluence", config={"base_url": recorder.url},
                    token_env=acme_secret)  # fmt: skip
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.status == "failed"
    assert NOT_GIVEN in report.error
    assert recorder.seen == []


def test_a_run_fails_when_the_grant_was_withdrawn_after_the_source_was_saved(
    tenant_a: Tenant, settings: Any, recorder: Recorder, acme_secret: str
) -> None:
    _grant(settings, tenant_a.workspace.group_id)
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        body = _wiki(tenant_a, recorder.url)
        source = source_create(actor=principal, group_id=body.pop("scope"), **body)
    _grant(settings, "w:someone-else")
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert NOT_GIVEN in report.error
    assert recorder.seen == []


def test_a_secret_given_to_the_organisation_serves_its_workspace_when_run(
    tenant_a: Tenant, settings: Any, recorder: Recorder, acme_secret: str
) -> None:
    _grant(settings, tenant_a.org.group_id)
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        body = _wiki(tenant_a, recorder.url)
        source = source_create(actor=principal, group_id=body.pop("scope"), **body)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.error == ""
    assert [seen.headers["authorization"] for seen in recorder.seen] == ["Bearer acme-wiki-token"]


# --- the servers' state and the checkout's secrets, even below an allowed root -----------


@pytest.mark.parametrize("below", [".devservices", ".devservices/test", ".git", ".env"])
def test_the_services_state_is_refused_when_below_an_allowed_root(
    client: Client, tenant_a: Tenant, settings: Any, below: str
) -> None:
    settings.VERA_SOURCES__FILE_ROOTS = [str(django_settings.BASE_DIR)]  # the whole checkout
    root = str(Path(django_settings.BASE_DIR) / below)
    body = {
        "scope": tenant_a.workspace.group_id, "name": "state", "kind": "markdown",
        "config": {"root": root, "patterns": ["*.json"]}, "trust_tier": 1,
    }  # fmt: skip
    response = _post(client, tenant_a, body)
    assert response.status_code == 400
    assert OWN_STATE in response.json()["detail"]
    assert _sources(tenant_a) == 0


def test_the_object_store_is_refused_when_below_an_allowed_root(
    client: Client, tenant_a: Tenant, settings: Any
) -> None:
    store = Path(django_settings.VERA_OBJECT_STORE__ROOT)
    settings.VERA_SOURCES__FILE_ROOTS = [str(store.parent)]
    body = {
        "scope": tenant_a.workspace.group_id, "name": "raw", "kind": "cmdb",
        "config": {"path": str(store / "any.json")}, "trust_tier": 1,
    }  # fmt: skip
    response = _post(client, tenant_a, body)
    assert response.status_code == 400
    assert OWN_STATE in response.json()["detail"]


def test_a_forged_root_in_the_services_state_fails_its_run_when_ingested(
    tenant_a: Tenant, settings: Any
) -> None:
    settings.VERA_SOURCES__FILE_ROOTS = [str(django_settings.BASE_DIR)]
    state = Path(django_settings.BASE_DIR) / ".devservices" / "test"
    source = _forge(tenant_a, kind="markdown", config={"root": str(state),
                                                       "patterns": ["*.json"]})  # fmt: skip
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.status == "failed"
    assert OWN_STATE in report.error
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not Episode.objects.filter(source=source).exists()


def test_a_root_over_a_denied_folder_never_lists_nor_reads_it_when_ingested(
    tenant_a: Tenant, settings: Any, tmp_path: Path
) -> None:
    (tmp_path / "runbook.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    state = tmp_path / "state"
    state.mkdir()
    (state / "secrets.md").write_text("# Roles\n\nThe vera_owner password is hunter2.\n")
    (tmp_path / "peek.md").symlink_to(state / "secrets.md")  # a way around the listing
    settings.VERA_SOURCES__DENIED_PATHS = [str(state)]
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        source = source_create(
            actor=principal, group_id=tenant_a.workspace.group_id, name="docs",
            kind="markdown", config={"root": str(tmp_path)}, trust_tier=1,
        )  # fmt: skip
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    with rls.tenant_context(principal):
        episodes = {e.external_id: e for e in Episode.objects.filter(source=source)}
        texts = json.dumps(list(Episode.objects.values_list("failure_reason", flat=True)))
    assert set(episodes) == {"runbook.md"}  # peek.md is not listed: it lands in the state
    assert report.new == 1
    assert "hunter2" not in texts


# --- never the ports of the servers themselves ----------------------------------------------


def _port_of(url: str) -> int:
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    assert port is not None
    return port


@pytest.mark.parametrize("service", ["postgres", "redis"])
def test_a_source_pointed_at_a_servers_own_port_fails_its_run_when_ingested(
    tenant_a: Tenant, settings: Any, acme_secret: str, service: str
) -> None:
    _grant(settings, tenant_a.workspace.group_id)
    port = (
        int(django_settings.DATABASES["default"]["PORT"])
        if service == "postgres"
        else _port_of(django_settings.REDIS_URL)
    )
    config = {"base_url": f"http://127.0.0.1:{port}"}
    source = _forge(tenant_a, kind="confluence", config=config, token_env=acme_secret)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.status == "failed"
    assert f"port {port} of 127.0.0.1 is {OWN_SERVICE}" in report.error


def test_a_redirect_to_the_database_port_fails_the_run_when_followed(
    tenant_a: Tenant, settings: Any, acme_secret: str
) -> None:
    _grant(settings, tenant_a.workspace.group_id)
    port = int(django_settings.DATABASES["default"]["PORT"])
    with Recorder(redirect_to=f"http://localhost:{port}") as bouncer:
        source = _forge(tenant_a, kind="confluence", config={"base_url": bouncer.url},
                        token_env=acme_secret)  # fmt: skip
        report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert len(bouncer.seen) == 1  # the first hop was allowed; the second never left
    assert report.status == "failed"
    assert OWN_SERVICE in report.error
