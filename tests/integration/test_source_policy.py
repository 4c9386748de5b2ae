"""Sources are a trust boundary: secret names, hosts, addresses and file roots they may reach.

Pure rules first (no database, hypothesis for the matching), then the attacks through
the real entrypoints: the REST API, a forged row run by the ingest task, redirects and
DNS answers against real loopback servers, symlinks and `..` on a real disk.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from common.errors import PermissionDenied
from curation.adapters.connectors.http import GuardedBackend, ResilientHttp, RetryPolicy
from curation.domain.errors import ConnectorError
from curation.domain.source_policy import (
    SourcePolicy,
    address_refusal,
    file_refusal,
    host_allowed,
    parse_hosts,
    path_within,
    reach_changed,
    token_env_refusal,
    url_refusal,
)
from curation.models import Episode, EpisodeStatus, Source
from curation.services.sources import source_create, source_reach_change, source_update
from curation.usecases import ingest_now
from tenants import rls
from tenants.domain.scopes import Role
from tenants.models import AuditEvent
from tests.support.recorder import Recorder
from tests.support.tenancy import Tenant

PREFIX = "VERA_SOURCE_SECRET__"
SEARCH = "/wiki/rest/api/content/search"
LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
SEGMENT = st.from_regex(r"[a-z0-9_.-]{1,8}", fullmatch=True).filter(lambda s: s not in {".", ".."})


# --- pure rules -----------------------------------------------------------------------


@given(suffix=st.from_regex(r"[A-Z0-9_]{1,20}", fullmatch=True))
def test_token_env_is_accepted_when_it_has_the_prefix(suffix: str) -> None:
    assert token_env_refusal(PREFIX + suffix, prefix=PREFIX) == ""


@given(name=st.from_regex(r"[A-Z_][A-Z0-9_]{0,30}", fullmatch=True))
def test_token_env_is_refused_naming_the_prefix_when_it_lacks_it(name: str) -> None:
    reason = token_env_refusal(name, prefix=PREFIX)
    assert (reason == "") == (name.startswith(PREFIX) and name != PREFIX)
    if reason:
        assert PREFIX in reason


@given(labels=st.lists(LABEL, min_size=1, max_size=3))
def test_pattern_matches_subdomains_when_wildcarded(labels: list[str]) -> None:
    rules = parse_hosts(["*.atlassian.net"])
    assert host_allowed(".".join(labels) + ".atlassian.net", rules)
    assert host_allowed(".".join(labels).upper() + ".ATLASSIAN.NET.", rules)


@pytest.mark.parametrize(
    "host", ["atlassian.net", "evilatlassian.net", "atlassian.net.evil.example", "127.0.0.1", ""]
)
def test_lookalike_host_is_refused_when_only_a_pattern_is_listed(host: str) -> None:
    assert not host_allowed(host, parse_hosts(["*.atlassian.net"]))


@pytest.mark.parametrize(
    ("host", "listed", "allowed"),
    [
        ("127.0.0.1", ["localhost"], False),
        ("127.0.0.1", ["127.0.0.0/8"], True),
        ("[::1]", ["::1"], True),
        ("10.1.2.3", ["10.0.0.0/16"], False),
        ("localhost", ["127.0.0.0/8"], False),
    ],
)
def test_ip_literal_needs_a_listed_range_when_used_as_host(
    host: str, listed: list[str], allowed: bool
) -> None:
    assert host_allowed(host, parse_hosts(listed)) is allowed


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("10.0.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "unique-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address under test, not a bind
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "non-global"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local"),
    ],
)
def test_special_address_is_refused_naming_its_space_when_not_listed(
    address: str, category: str
) -> None:
    reason = address_refusal("wiki.example", address, parse_hosts(["wiki.example"]))
    assert f"a {category} address" in reason
    assert "'wiki.example' resolves to" in reason


@given(host=st.integers(min_value=0, max_value=2**24 - 1))
def test_private_address_is_allowed_when_its_range_is_listed(host: int) -> None:
    address = f"10.{host >> 16}.{(host >> 8) & 255}.{host & 255}"
    assert address_refusal("h", address, parse_hosts(["h"])) != ""
    assert address_refusal("h", address, parse_hosts(["h", "10.0.0.0/8"])) == ""


def test_public_address_is_allowed_when_its_name_was() -> None:
    assert address_refusal("h", "8.8.8.8", parse_hosts(["h"])) == ""


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://wiki.example/", "http:// or https://"),
        ("http://user:pw@wiki.example/", "credentials"),
        ("http://wiki.example\\@evil.example/", "backslashes"),
        ("http://wiki.example /", "spaces"),
        ("http://wiki.example:99999/", "not valid"),
        ("http://evil.example/", "not on the operator's allow-list"),
    ],
)
def test_url_is_refused_when_it_is_not_a_plain_allowed_url(url: str, reason: str) -> None:
    assert reason in url_refusal(url, parse_hosts(["wiki.example"]))


@given(segments=st.lists(SEGMENT, max_size=5), root=st.lists(SEGMENT, min_size=1, max_size=3))
def test_path_stays_within_when_built_without_dotdot(segments: list[str], root: list[str]) -> None:
    base = "/" + "/".join(root)
    assert path_within("/".join([base, *segments]), base)


@given(root=st.lists(SEGMENT, min_size=1, max_size=3), extra=st.integers(0, 2))
def test_dotdot_leaves_the_root_when_it_climbs_above_it(root: list[str], extra: int) -> None:
    base = "/" + "/".join(root)
    climbed = base + "/.." * (len(root) + extra) + "/zz-outside"
    assert not path_within(climbed, base)
    assert "outside the folders" in file_refusal(climbed, [base])


def test_sibling_with_the_same_prefix_is_outside_when_checked() -> None:
    assert not path_within("/srv/docs-evil/x.md", "/srv/docs")


def test_root_is_judged_where_its_symlinks_land_when_resolved() -> None:
    links = {"/srv/docs/link": "/etc", "/srv/docs": "/srv/docs"}
    assert file_refusal("/srv/docs/link", ["/srv/docs"], resolve=lambda p: links.get(p, p))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"token_env_prefix": ""}, "VERA_SOURCES__TOKEN_ENV_PREFIX"),
        ({"allowed_hosts": ("10.0.0.0/33",)}, "CIDR"),
        ({"allowed_hosts": ("*.",)}, "not a host name"),
        ({"allowed_hosts": ("bücher.example",)}, "xn--"),
        ({"file_roots": ("srv/docs",)}, "not an absolute path"),
    ],
)
def test_policy_refuses_a_bad_operator_entry_when_built(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SourcePolicy(**{"token_env_prefix": PREFIX, **fields})


@given(hosts=st.lists(LABEL.map(lambda label: f"{label}.example"), min_size=1, max_size=4))
def test_reach_is_empty_again_when_what_was_added_is_removed(hosts: list[str]) -> None:
    widened = reach_changed({}, hosts=hosts, file_roots=["/srv/x/../y"])
    assert widened == {"hosts": list(dict.fromkeys(hosts)), "file_roots": ["/srv/y"]}
    assert reach_changed(widened, hosts=hosts, file_roots=["/srv/y"], remove=True) == {}


@pytest.mark.parametrize("reach", [{"hosts": "a.example"}, {"hosts": [1]}, {"admin": True}])
def test_malformed_reach_is_refused_when_widening(reach: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="reach"):
        SourcePolicy(PREFIX).widened(reach)


@pytest.fixture
def wiki_granted(settings: Any, tenant_a: Tenant) -> str:
    """The operator gave the secret `<PREFIX>WIKI` to tenant A's workspace."""
    settings.VERA_SOURCES__SECRET_SCOPES = {f"{PREFIX}WIKI": [tenant_a.workspace.group_id]}
    return f"{PREFIX}WIKI"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


@pytest.fixture
def second_loopback() -> str:
    """127.0.0.2: Linux answers the whole 127/8; elsewhere the redirect tests are skipped."""
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 is not a usable loopback address here")
    return "127.0.0.2"


def _http(*allowed: str) -> ResilientHttp:
    """A ResilientHttp under a policy allowing `allowed`; one attempt, no waiting."""
    return ResilientHttp(
        connect_timeout_s=1.0,
        read_timeout_s=2.0,
        policy=RetryPolicy(max_attempts=1),
        source_policy=SourcePolicy(PREFIX, allowed_hosts=allowed),
    )


# --- hosts, redirects and DNS against real servers ---------------------------------------


def test_redirect_to_loopback_is_refused_when_its_range_is_not_allowed(
    second_loopback: str, recorder: Recorder
) -> None:
    with (
        Recorder(second_loopback, redirect_to=recorder.url) as origin,
        _http(f"{second_loopback}/32") as http,
        pytest.raises(
            ConnectorError, match=r"'127\.0\.0\.1' is not on the operator's allow"
        ) as refused,
    ):
        http.get_json(origin.url + "/start?token=private-words")
    assert "private-words" not in str(refused.value)
    assert [seen.path for seen in origin.seen] == ["/start"]
    assert recorder.seen == []


def test_redirect_to_loopback_is_followed_when_its_range_is_allowed(
    second_loopback: str, recorder: Recorder
) -> None:
    with (
        Recorder(second_loopback, redirect_to=recorder.url) as origin,
        _http("127.0.0.0/8") as http,
    ):
        assert http.get_json(origin.url + "/start")["ok"] is True
    assert [seen.path for seen in recorder.seen] == ["/start"]


def test_redirect_to_an_unlisted_name_is_refused_when_followed(recorder: Recorder) -> None:
    with (
        Recorder(redirect_to=f"http://localhost:{recorder.port}") as origin,
        _http("127.0.0.0/8", "::1") as http,
        pytest.raises(ConnectorError, match="'localhost' is not on the operator's allow-list"),
    ):
        http.get_json(origin.url + "/start")
    assert recorder.seen == []


def test_name_resolving_to_loopback_is_refused_when_only_the_name_is_allowed(
    recorder: Recorder,
) -> None:
    with (
        _http("localhost") as http,
        pytest.raises(ConnectorError, match=r"'localhost' resolves to .*, a loopback address"),
    ):
        http.get_json(f"http://localhost:{recorder.port}/echo")
    assert recorder.seen == []


def test_name_resolving_to_loopback_reaches_the_server_when_its_range_is_allowed(
    recorder: Recorder,
) -> None:
    with _http("localhost", "127.0.0.0/8", "::1") as http:
        http.get_json(f"http://localhost:{recorder.port}/echo")
    assert [seen.path for seen in recorder.seen] == ["/echo"]


class FixedAnswers:
    """A resolver that answers every name with the given addresses (a fake DNS)."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = list(addresses)
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.addresses


@pytest.mark.parametrize("answers", [("169.254.169.254",), ("93.184.215.14", "10.0.0.7")])
def test_dns_answer_in_a_refused_range_fails_before_connecting_when_resolved(
    answers: tuple[str, ...],
) -> None:
    backend = GuardedBackend(parse_hosts(["wiki.example"]), resolve=FixedAnswers(*answers))
    with pytest.raises(ConnectorError, match=f"resolves to {answers[-1]}"):
        backend.connect_tcp("wiki.example", 80, timeout=0.01)


def test_unlisted_name_is_not_even_resolved_when_connecting() -> None:
    dns = FixedAnswers("93.184.215.14")
    backend = GuardedBackend(parse_hosts(["wiki.example"]), resolve=dns)
    with pytest.raises(ConnectorError, match="not on the operator's allow-list"):
        backend.connect_tcp("evil.example", 80, timeout=0.01)
    assert dns.asked == []


# --- through the entrypoints: REST, forged rows, the ingest task ---------------------------


def _confluence_body(tenant: Tenant, base_url: str, **overrides: Any) -> dict[str, Any]:
    return {
        "scope": tenant.workspace.group_id,
        "name": "wiki",
        "kind": "confluence",
        "config": {"base_url": base_url},
        "token_env": f"{PREFIX}WIKI",
        "trust_tier": 2,
        **overrides,
    }


def _post(client: Client, tenant: Tenant, body: dict[str, Any]) -> Any:
    key = tenant.issue_key(owner=tenant.admin, role=Role.ADMIN).plaintext
    return client.post(
        "/api/v1/sources",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )


def _forge(tenant: Tenant, *, kind: str, config: dict[str, Any], token_env: str = "") -> Source:
    """A row written straight into the table, around every service check."""
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Source.objects.create(
            group_id=tenant.workspace.group_id,
            origin_group_id=tenant.workspace.group_id,
            name=f"forged-{kind}",
            kind=kind,
            config=config,
            token_env=token_env,
            trust_tier=2,
        )


def _last_error(tenant: Tenant, source: Source) -> str:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        source.refresh_from_db()
    return source.last_error


@pytest.mark.django_db
def test_rest_refuses_a_secret_outside_the_prefix_when_creating(
    client: Client, tenant_a: Tenant, recorder: Recorder
) -> None:
    response = _post(
        client, tenant_a, _confluence_body(tenant_a, recorder.url, token_env="DATABASE_URL")
    )
    assert response.status_code == 400
    assert f"starts with {PREFIX}" in response.json()["detail"]
    assert recorder.seen == []


@pytest.mark.django_db
def test_rest_refuses_a_reach_when_a_tenant_sends_one(
    client: Client, tenant_a: Tenant, recorder: Recorder, wiki_granted: str
) -> None:
    body = _confluence_body(tenant_a, recorder.url, reach={"hosts": ["169.254.169.254/32"]})
    response = _post(client, tenant_a, body)
    assert response.status_code == 400
    assert "reach is set by the operator" in json.dumps(response.json())


@pytest.mark.django_db
def test_rest_refuses_a_host_off_the_allow_list_when_creating(
    client: Client, tenant_a: Tenant, settings: Any, wiki_granted: str
) -> None:
    settings.VERA_SOURCES__ALLOWED_HOSTS = ["*.atlassian.net"]
    response = _post(client, tenant_a, _confluence_body(tenant_a, "http://169.254.169.254"))
    assert response.status_code == 400
    assert "'169.254.169.254' is not on the operator's allow-list" in response.json()["detail"]


@pytest.mark.django_db
def test_forged_foreign_secret_fails_the_run_and_reaches_nothing_when_ingested(
    tenant_a: Tenant, recorder: Recorder
) -> None:
    source = _forge(
        tenant_a, kind="confluence", config={"base_url": recorder.url}, token_env="DATABASE_URL"
    )
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.status == "failed"
    assert "token_env 'DATABASE_URL' is refused" in report.error
    assert _last_error(tenant_a, source) == report.error
    assert recorder.seen == []


@pytest.mark.django_db
def test_prefixed_secret_reaches_the_server_when_ingested(
    tenant_a: Tenant, recorder: Recorder, monkeypatch: pytest.MonkeyPatch, wiki_granted: str
) -> None:
    monkeypatch.setenv(f"{PREFIX}WIKI", "wiki-token")
    source = _forge(
        tenant_a, kind="confluence", config={"base_url": recorder.url}, token_env=f"{PREFIX}WIKI"
    )
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert report.error == ""
    assert [seen.headers["authorization"] for seen in recorder.seen] == ["Bearer wiki-token"]


@pytest.mark.django_db
def test_run_fails_with_the_reason_when_dns_lands_in_a_refused_range(
    tenant_a: Tenant,
    recorder: Recorder,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    wiki_granted: str,
) -> None:
    monkeypatch.setenv(f"{PREFIX}WIKI", "wiki-token")
    settings.VERA_SOURCES__ALLOWED_HOSTS = ["localhost"]
    principal = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(principal):
        body = _confluence_body(tenant_a, f"http://localhost:{recorder.port}")
        source = source_create(actor=principal, group_id=body.pop("scope"), **body)
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert "'localhost' resolves to" in report.error
    assert "a loopback address" in report.error
    assert recorder.seen == []


# --- files ------------------------------------------------------------------------------


def _markdown(tenant: Tenant, root: str) -> Source:
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):
        return source_create(
            actor=principal,
            group_id=tenant.workspace.group_id,
            name="docs",
            kind="markdown",
            config={"root": root},
            trust_tier=1,
        )


@pytest.mark.django_db
def test_symlink_out_of_the_folder_fails_its_episode_naming_the_path_when_ingested(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    docs, secret = tmp_path / "docs", tmp_path / "secret"
    docs.mkdir()
    secret.mkdir()
    (secret / "notes.md").write_text("# Private\n\nThe vault code is 1234.\n")
    (docs / "peek.md").symlink_to(secret / "notes.md")
    (docs / "fine.md").write_text("# Fine\n\nThe billing-api runs on k8s-prod-1.\n")
    source = _markdown(tenant_a, str(docs))
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert (report.new, report.failed) == (1, 1)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        failed = Episode.objects.get(source=source, external_id="peek.md")
    assert failed.status == EpisodeStatus.FAILED
    assert failed.failure_reason == f"symlink points outside the folder: {docs / 'peek.md'}"


@pytest.mark.django_db
def test_dotdot_root_leaving_the_allowed_roots_is_refused_when_creating(
    tenant_a: Tenant, tmp_path: Path, settings: Any
) -> None:
    (tmp_path / "allowed").mkdir()
    settings.VERA_SOURCES__FILE_ROOTS = [str(tmp_path / "allowed")]
    with pytest.raises(ValueError, match="outside the folders the operator allows"):
        _markdown(tenant_a, f"{tmp_path}/allowed/../../..")


@pytest.mark.django_db
def test_symlinked_root_leaving_the_allowed_roots_is_refused_when_creating(
    tenant_a: Tenant, tmp_path: Path, settings: Any
) -> None:
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "etc").symlink_to("/etc")
    settings.VERA_SOURCES__FILE_ROOTS = [str(tmp_path / "allowed")]
    with pytest.raises(ValueError, match="outside the folders the operator allows"):
        _markdown(tenant_a, str(tmp_path / "allowed" / "etc"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "key", "target"), [("markdown", "root", "/etc"), ("cmdb", "path", "/etc/passwd.csv")]
)
def test_forged_path_outside_the_roots_fails_the_run_when_ingested(
    tenant_a: Tenant, kind: str, key: str, target: str
) -> None:
    source = _forge(tenant_a, kind=kind, config={key: target})
    report = ingest_now(source_id=source.pk, group_id=source.group_id)
    assert f"{key}: the path '{target}' is outside the folders" in report.error
    assert _last_error(tenant_a, source) == report.error


# --- the operator's per-source reach, and updates -----------------------------------------


@pytest.mark.django_db
def test_operator_widens_one_source_when_running_source_reach(
    tenant_a: Tenant,
    recorder: Recorder,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    wiki_granted: str,
) -> None:
    monkeypatch.setenv(f"{PREFIX}WIKI", "wiki-token")
    settings.VERA_SOURCES__ALLOWED_HOSTS = []
    source = _forge(
        tenant_a, kind="confluence", config={"base_url": recorder.url}, token_env=f"{PREFIX}WIKI"
    )
    assert (
        "not on the operator's allow-list"
        in ingest_now(source_id=source.pk, group_id=source.group_id).error
    )
    call_command("source_reach", str(source.pk), "--host", "127.0.0.1/32")
    assert ingest_now(source_id=source.pk, group_id=source.group_id).error == ""
    assert len(recorder.seen) == 1
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="source.reach.widen")
    assert (event.actor_label, event.target_id) == ("system:source_reach", str(source.pk))
    assert event.data["reach"] == {"hosts": ["127.0.0.1/32"]}


@pytest.mark.django_db
def test_operator_narrows_a_source_back_when_removing(tenant_a: Tenant, tmp_path: Path) -> None:
    source = _markdown(tenant_a, str(tmp_path))
    call_command("source_reach", str(source.pk), "--file-root", "/srv/extra")
    call_command("source_reach", str(source.pk), "--file-root", "/srv/extra", "--remove")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source.refresh_from_db()
        actions = list(
            AuditEvent.objects.filter(target_id=str(source.pk))
            .values_list("action", flat=True)
            .order_by("pk")
        )
    assert source.reach == {}
    assert actions == ["source.create", "source.reach.widen", "source.reach.narrow"]


@pytest.mark.django_db
def test_workspace_admin_cannot_change_a_reach_when_calling_the_service(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    source = _markdown(tenant_a, str(tmp_path))
    principal = tenant_a.principal(tenant_a.admin)
    with pytest.raises(PermissionDenied, match="operator"), rls.tenant_context(principal):
        source_reach_change(actor=principal, source_id=source.pk, file_roots=["/"])


@pytest.mark.django_db
def test_update_honours_the_reach_when_moving_a_source_within_it(
    tenant_a: Tenant, tmp_path: Path, settings: Any
) -> None:
    settings.VERA_SOURCES__FILE_ROOTS = [str(tmp_path / "a")]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = _markdown(tenant_a, str(tmp_path / "a"))
    principal = tenant_a.principal(tenant_a.admin)
    with pytest.raises(ValueError, match="outside"), rls.tenant_context(principal):
        source_update(actor=principal, source_id=source.pk, config={"root": str(tmp_path / "b")})
    call_command("source_reach", str(source.pk), "--file-root", str(tmp_path / "b"))
    with rls.tenant_context(principal):
        updated = source_update(
            actor=principal, source_id=source.pk, config={"root": str(tmp_path / "b")}
        )
        assert AuditEvent.objects.filter(action="source.update").count() == 1
    assert updated.config == {"root": str(tmp_path / "b")}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"reach": {"hosts": ["*"]}}, "cannot change reach"),
        ({"kind": "cmdb"}, "cannot change kind"),
        ({"token_env": "DATABASE_URL"}, f"starts with {PREFIX}"),
    ],
)
def test_update_is_refused_when_it_leaves_the_policy(
    tenant_a: Tenant, tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    source = _markdown(tenant_a, str(tmp_path))
    principal = tenant_a.principal(tenant_a.admin)
    with pytest.raises(ValueError, match=message), rls.tenant_context(principal):
        source_update(actor=principal, source_id=source.pk, **changes)


@pytest.mark.django_db
def test_add_source_command_applies_the_prefix_rule_when_run(tenant_a: Tenant) -> None:
    config = json.dumps({"base_url": "http://127.0.0.1:9"})
    with pytest.raises(CommandError, match=f"starts with {PREFIX}"):
        call_command(
            "add_source", "--group", tenant_a.workspace.group_id, "--name", "wiki",
            "--kind", "confluence", "--tier", "2", "--config", config,
            "--token-env", "DATABASE_URL",
        )  # fmt: skip
