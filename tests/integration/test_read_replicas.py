"""Reads on a hot standby: the test profile's streaming replica of the test primary.

`bin/vera services start --profile test` runs a second embedded PostgreSQL as a
streaming standby of the first (pg_basebackup, primary_conninfo) and exports its URL as
VERA_TEST__STANDBY_URL. These tests point a `replica_1` alias at it, on the test
database (replicated with everything else), and prove on the real servers:

- row-level security holds on the standby as on the primary (the introspective checks,
  against a world written through the real services and replayed there);
- a search reads the standby: with its replay paused, a fact published on the primary
  since is absent from a reader's results, and present once the standby has replayed;
- a stopped standby falls back to the primary without an error, and health says so;
- a standby further behind than the bound falls back, and health says so;
- read-your-writes after a review decision: the reviewer's next GET reads its decision
  (the primary), while another reader's GET is served by the paused standby.

Committed data only (a standby sees nothing of an open transaction), so every test here
is transactional.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dj_database_url
import psycopg
import pytest
from django.db import connections
from django.test import Client
from prometheus_client import REGISTRY

from common.reads import read_alias
from curation.models import Claim
from devtools.common import Profile
from devtools.standby import Standby
from retrieval import usecases
from retrieval.domain.context import ContextRequest
from retrieval.domain.query import Query
from tenants import replicas, rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.usecases import membership_grant
from tests.integration.test_rls_introspection import EXEMPT, TENANT_TABLES_SQL, _fill
from tests.support.ingest import ingest_folder, ingest_markdown
from tests.support.tenancy import Tenant, make_tenant

ALIAS = "replica_1"
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
BILLING = {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1.\n"}
LEDGER = {"ledger.md": "# Ledger\n\nThe ledger-api runs on k8s-prod-2.\n"}


def _standby_admin() -> psycopg.Connection:
    """The standby's superuser (pausing and resuming its replay is a superuser's)."""
    url = dj_database_url.parse(os.environ["VERA_TEST__STANDBY_URL"])
    password = Profile.named("test").secrets()["postgres"]
    return psycopg.connect(
        host=url["HOST"], port=url["PORT"], user="postgres", password=password,
        dbname="postgres", autocommit=True, connect_timeout=5,
    )  # fmt: skip


def _primary_lsn() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        return replicas.lsn(cursor.fetchone()[0])


def wait_replayed(timeout: float = 30.0) -> None:
    """Until the standby has replayed everything the primary has written so far."""
    target = _primary_lsn()
    deadline = time.monotonic() + timeout
    with _standby_admin() as admin:
        while True:
            row = admin.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
            if row and replicas.lsn(row[0]) >= target:
                return
            assert time.monotonic() < deadline, "the standby did not replay in time"
            time.sleep(0.05)


@contextmanager
def replay_paused() -> Iterator[None]:
    with _standby_admin() as admin:
        admin.execute("SELECT pg_wal_replay_pause()")
        try:
            yield
        finally:
            admin.execute("SELECT pg_wal_replay_resume()")


@pytest.fixture
def standby(settings: object) -> Iterator[str]:
    """Reads served by the test profile's standby, on the test database, checked afresh
    on every choice; the bound on lag is wide unless a test narrows it."""
    url = os.environ.get("VERA_TEST__STANDBY_URL")
    assert url, "the test profile's standby is not running: run `make test`"
    assert ALIAS in connections.settings, "vera.settings.test did not declare the standby"
    standby_at = dj_database_url.parse(url)
    mirrored = connections[ALIAS].settings_dict  # the primary's test database, as a mirror
    connections[ALIAS].close()
    connections[ALIAS].settings_dict = {
        **mirrored, "HOST": standby_at["HOST"], "PORT": standby_at["PORT"], "CONN_MAX_AGE": 0,
        "OPTIONS": {"connect_timeout": 2},
    }  # fmt: skip
    settings.VERA_DB__REPLICAS = [ALIAS]  # type: ignore[attr-defined]
    settings.VERA_DB__REPLICA_MAX_LAG_S = 3600  # type: ignore[attr-defined]
    settings.VERA_DB__REPLICA_CHECK_S = 0  # type: ignore[attr-defined]
    settings.VERA_DB__REPLICA_RETRY_S = 0  # type: ignore[attr-defined]
    replicas.forget()
    yield ALIAS
    connections[ALIAS].close()
    connections[ALIAS].settings_dict = mirrored
    replicas.forget()


@pytest.fixture
def tenant(transactional_db: None) -> Tenant:
    return make_tenant("Acme")


def _served_by(alias: str) -> float:
    return REGISTRY.get_sample_value("vera_read_blocks_total", {"database": alias}) or 0.0


def _hit_texts(principal: Principal, text: str) -> str:
    served = usecases.search(principal, Query(text=text, k=10))
    return " ".join(hit.fact for hit in served.result.hits).lower()


# --- row-level security on the standby ------------------------------------------------


def _count(alias: str, table: str, where: str = "TRUE", params: list[object] | None = None) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{table}" WHERE {where}', params or [])  # noqa: S608 - catalog names
        return int(cursor.fetchone()[0])


def test_row_level_security_holds_on_the_standby(standby: str, tmp_path: Path) -> None:
    a, b = make_tenant("Acme"), make_tenant("Globex")
    _fill(a, tmp_path)
    wait_replayed()
    with connections[standby].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        assert cursor.fetchone()[0] is True, "replica_1 is not a standby"
        cursor.execute(TENANT_TABLES_SQL)
        tables = [name for (name,) in cursor.fetchall() if name not in EXEMPT]
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relname = ANY (%s) AND relkind IN ('r', 'p') "
            "AND NOT (relrowsecurity AND relforcerowsecurity)",
            [tables],
        )
        assert cursor.fetchall() == [], "tenant tables without forced RLS on the standby"
    assert {"tenants", "curation", "retrieval"} <= {table.split("_", 1)[0] for table in tables}
    a_principal, b_principal = a.principal(a.admin), b.principal(b.admin)
    a_groups, b_groups = sorted(a_principal.group_ids), sorted(b_principal.group_ids)
    with rls.standby_context(Principal(label="nobody"), using=standby):
        assert [table for table in tables if _count(standby, table)] == []
    with rls.standby_context(a_principal, using=standby):  # the world is there to attack
        empty = [t for t in tables if not _count(standby, t, "group_id = ANY (%s)", [a_groups])]
        assert empty == []
    with rls.standby_context(b_principal, using=standby):
        foreign = [t for t in tables if _count(standby, t, "NOT (group_id = ANY (%s))", [b_groups])]
        assert foreign == []
        with (
            pytest.raises(Exception, match="read-only transaction"),
            connections[standby].cursor() as cursor,
        ):
            cursor.execute("DELETE FROM curation_claim")


# --- a search reads the standby --------------------------------------------------------


def test_a_search_reads_the_standby(standby: str, tenant: Tenant, tmp_path: Path) -> None:
    viewer = tenant.principal(tenant.viewer)
    ingest_markdown(tenant, tmp_path / "one", BILLING)
    wait_replayed()
    with replay_paused():
        ingest_markdown(tenant, tmp_path / "two", LEDGER, name="more")
        with rls.tenant_context(viewer):  # the primary has it
            assert Claim.objects.filter(fact_text__icontains="ledger-api").exists()
        assert replicas.choose(viewer) == (standby, "standby")
        served_before = _served_by(standby)
        assert "billing-api" in _hit_texts(viewer, "where does billing-api run")
        assert _served_by(standby) == served_before + 1  # vera_read_blocks_total
        assert "ledger-api" not in _hit_texts(viewer, "where does ledger-api run")
        pack = usecases.context_pack(
            viewer, ContextRequest(query=Query(text="ledger-api"), token_budget=500)
        )
        assert "ledger-api" not in json.dumps(usecases.pack_payload(pack)).lower()
    wait_replayed()
    assert "ledger-api" in _hit_texts(viewer, "where does ledger-api run")


def test_a_scope_narrows_the_standbys_reads_as_the_primarys(
    standby: str, tenant: Tenant, tmp_path: Path
) -> None:
    other = make_tenant("Globex")
    membership_grant(user_id=tenant.viewer.pk, scope_id=other.workspace.pk, role=Role.VIEWER)
    ingest_markdown(tenant, tmp_path / "acme", BILLING)
    ingest_markdown(other, tmp_path / "globex", LEDGER)
    wait_replayed()
    client = Client()
    client.force_login(tenant.viewer)
    served_before = _served_by(standby)
    both = client.get("/api/v1/claims").json()["results"]
    assert {claim["group_id"] for claim in both} == {
        tenant.workspace.group_id,
        other.workspace.group_id,
    }
    narrowed = client.get(f"/api/v1/claims?scope={other.workspace.group_id}").json()["results"]
    assert narrowed
    assert {claim["group_id"] for claim in narrowed} == {other.workspace.group_id}
    assert _served_by(standby) == served_before + 2  # both lists were read on the standby


# --- falling back ---------------------------------------------------------------------


def _healthz(client: Client) -> dict[str, object]:
    return json.loads(client.get("/healthz").content)


def test_a_stopped_standby_falls_back_without_an_error(
    standby: str, tenant: Tenant, tmp_path: Path, client: Client
) -> None:
    viewer = tenant.principal(tenant.viewer)
    ingest_markdown(tenant, tmp_path, BILLING)
    wait_replayed()
    assert "billing-api" in _hit_texts(viewer, "billing-api")  # connects to the standby
    server = Standby(Profile.named("test"))
    server.stop()
    try:
        alias, why = replicas.choose(viewer)
        assert alias == "default"
        assert why.startswith(f"{standby}: ")
        assert "billing-api" in _hit_texts(viewer, "billing-api")
        key = tenant.issue_key(owner=tenant.viewer)
        listed = client.get("/api/v1/claims", HTTP_AUTHORIZATION=f"Bearer {key.plaintext}")
        assert listed.status_code == 200
        assert any("billing-api" in json.dumps(claim) for claim in listed.json()["results"])
        health = _healthz(client)
        assert health["status"] == "degraded"
        assert any(f"{standby} unavailable" in reason for reason in health["degraded"])  # type: ignore[union-attr]
        assert health["replicas"][0]["up"] is False  # type: ignore[index]
    finally:
        server.start(Profile.named("test").secrets())
    replicas.forget()
    assert replicas.choose(viewer)[0] == standby


def test_a_standby_lost_mid_read_is_read_again_on_the_primary(
    standby: str, tenant: Tenant, tmp_path: Path, settings: object
) -> None:
    viewer = tenant.principal(tenant.viewer)
    settings.VERA_DB__REPLICA_RETRY_S = 60  # type: ignore[attr-defined]
    ingest_markdown(tenant, tmp_path, BILLING)
    wait_replayed()
    read_from: list[str] = []

    def work() -> int:
        read_from.append(read_alias())
        if len(read_from) == 1:  # the standby's backend dies under the read
            pid = connections[standby].connection.info.backend_pid
            with _standby_admin() as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        return Claim.objects.count()

    with rls.tenant_context(viewer):
        counted = replicas.read_only(viewer, work)
        assert counted == Claim.objects.count() > 0
    assert read_from == [standby, "default"]
    assert replicas.state(standby).up is False  # skipped until its retry interval passes
    replicas.forget()
    assert replicas.choose(viewer)[0] == standby


def test_a_standby_beyond_the_lag_bound_falls_back(
    standby: str, tenant: Tenant, tmp_path: Path, client: Client, settings: object
) -> None:
    viewer = tenant.principal(tenant.viewer)
    settings.VERA_DB__REPLICA_MAX_LAG_S = 1  # type: ignore[attr-defined]
    ingest_markdown(tenant, tmp_path / "one", BILLING)
    wait_replayed()
    assert replicas.choose(viewer)[0] == standby
    with replay_paused():
        ingest_markdown(tenant, tmp_path / "two", LEDGER, name="more")
        time.sleep(1.5)
        found = replicas.state(standby, fresh=True)
        assert found.up
        assert (found.lag_s or 0) > 1
        alias, why = replicas.choose(viewer)
        assert alias == "default"
        assert "behind" in why
        assert "ledger-api" in _hit_texts(viewer, "where does ledger-api run")
        health = _healthz(client)
        assert health["status"] == "degraded"
        assert any("behind the primary (bound 1 s)" in r for r in health["degraded"])  # type: ignore[union-attr]
    wait_replayed()
    assert replicas.choose(viewer)[0] == standby
    assert _healthz(client)["replicas"][0]["serves_reads"] is True  # type: ignore[index]


# --- read-your-writes -----------------------------------------------------------------


def _status_listed(client: Client, claim_id: int, **headers: str) -> str:
    response = client.get("/api/v1/claims?status=pending_review", **headers)
    assert response.status_code == 200
    pending = {claim["id"] for claim in response.json()["results"]}
    return "pending" if claim_id in pending else "decided"


def test_read_your_writes_after_a_review_decision(
    standby: str, tenant: Tenant, tmp_path: Path
) -> None:
    ingest_folder(tenant, tmp_path, BILLING, tier=3)
    with rls.tenant_context(tenant.principal(tenant.admin)):
        claim = Claim.objects.get(predicate="RUNS_ON")
    key = tenant.issue_key(owner=tenant.viewer)
    as_viewer = {"HTTP_AUTHORIZATION": f"Bearer {key.plaintext}"}
    reviewer, viewer = Client(), Client()
    reviewer.force_login(tenant.reviewer)
    wait_replayed()
    assert _status_listed(reviewer, claim.pk) == "pending"
    with replay_paused():
        decided = reviewer.post(f"/review/claims/{claim.pk}/approve", {"version": claim.version})
        assert decided.status_code in (200, 302)
        # The reviewer reads its decision (its write is past what the standby replayed)...
        assert _status_listed(reviewer, claim.pk) == "decided"
        reviewer_principal = tenant.principal(tenant.reviewer)
        assert replicas.choose(reviewer_principal)[0] == "default"
        # ...while another reader is served by the standby, which has not replayed it.
        assert _status_listed(viewer, claim.pk, **as_viewer) == "pending"
    wait_replayed()
    assert replicas.choose(tenant.principal(tenant.reviewer))[0] == standby
    assert _status_listed(viewer, claim.pk, **as_viewer) == "decided"
