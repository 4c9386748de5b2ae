"""Every tenant table is under forced row-level security: found in the catalog, not a list.

A tenant table is any table with a text `group_id` column, read from pg_catalog (which,
unlike information_schema, also shows tables the application role was never granted).
Django's auth tables also have a `group_id`, but theirs is a foreign key to `auth_group`
and names no tenant; EXEMPT names, with its reason, the one table that holds group ids
without belonging to a tenant. For every other table, as the application role: RLS is
enabled and forced, nothing is visible without the tenant setting, another tenant's rows
are invisible, and inserting, updating or deleting across tenants is refused.

One tenant's world is written through the real services (keys, a source, ingestion, the
outbox, a search and a vote), so every table holds rows to attack; a new tenant table
that the world leaves empty fails `test_the_world_writes_rows_into_every_tenant_table`
until `_fill` writes one, and a new one without RLS fails the catalog check at once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pgtrigger
import pytest
from django.db import DatabaseError, connection, transaction
from django.test import override_settings
from django.utils import timezone

from curation import bootstrap as curation_bootstrap
from curation.domain.ontology import PredicateSense
from curation.domain.outbox import Consumer
from curation.models import Episode, OutboxPause
from curation.services.entities import entity_resolve
from curation.services.ontology import ontology_predicate_set
from curation.services.reprocess import reprocess_start
from curation.services.sources import source_create
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.adapters.embedders.cached import CachedEmbedder
from retrieval.adapters.hashing_embedder import HashingEmbedder
from retrieval.services.calibration import calibration_run
from retrieval.services.context import context_pack
from retrieval.services.embedding import embedding_companion
from retrieval.services.erasure import erase
from retrieval.services.evaluation import evaluation_run, golden_import_jsonl
from retrieval.services.index import index_catch_up
from retrieval.services.search import Query, feedback_record, search
from retrieval.services.snapshots import Pinning, snapshot_copy, snapshot_take
from retrieval.services.weights import weight_set_activate
from retrieval.services.word_learning import question_words_learn
from retrieval.tasks import flush_provider_usage
from tenants import rls
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.services.invitations import invitation_send
from tests.support.tenancy import Tenant, make_tenant, markdown_source
from vera import wiring

pytestmark = pytest.mark.django_db

EXEMPT = {
    # The registry of scopes: it maps a scope to its group id and is read to turn a user's
    # memberships into a principal, before any tenant setting can exist. It holds scope
    # names and the hierarchy, no knowledge; memberships decide who reaches what.
    "tenants_scope": "the registry of group ids, read before a principal exists",
}
RLS_REFUSAL = "row-level security"

TENANT_TABLES_SQL = """
    SELECT c.relname
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid
    WHERE n.nspname = current_schema()
      AND c.relkind IN ('r', 'p')
      AND a.attname = 'group_id' AND NOT a.attisdropped AND a.attnum > 0
      AND a.atttypid IN ('text'::regtype, 'varchar'::regtype)
      AND NOT EXISTS (
          SELECT 1 FROM pg_constraint f
          WHERE f.contype = 'f' AND f.conrelid = c.oid AND a.attnum = ANY (f.conkey)
            AND f.confrelid = 'auth_group'::regclass
      )
    ORDER BY c.relname
"""


@dataclass(frozen=True)
class World:
    """Tenant A owns rows in every tenant table; tenant B is the one trying to reach them."""

    a: Tenant
    b: Tenant
    tables: tuple[str, ...]

    @property
    def a_principal(self) -> Principal:
        return self.a.principal(self.a.admin)

    @property
    def b_principal(self) -> Principal:
        return self.b.principal(self.b.admin)

    @property
    def a_groups(self) -> list[str]:
        return sorted(self.a_principal.group_ids)

    @property
    def b_groups(self) -> list[str]:
        return sorted(self.b_principal.group_ids)


def _fill(tenant: Tenant, root: Path) -> None:
    """Rows of `tenant` in every tenant table, each written by the service that owns it."""
    tenant.issue_key(owner=tenant.viewer)  # api key and its audit event
    admin = tenant.principal(tenant.admin)
    with rls.tenant_context(admin):  # an invitation (a link nobody follows)
        invitation_send(
            actor=admin, group_id=tenant.workspace.group_id,
            email=f"invitee@{tenant.org.group_id[2:10]}.example.org", role=Role.VIEWER,
        )  # fmt: skip
    (root / "billing.md").write_text("# Billing\n\nThe billing-api runs on k8s-prod-1.\n")
    (root / "gone.md").write_text("# Gone\n\nThe gone-api runs on k8s-gone-1.\n")
    source_id = markdown_source(tenant, root, tier=1)
    report = ingest_now(source_id=source_id, group_id=tenant.workspace.group_id)
    assert not report.error, report.error  # episodes, entities, aliases, claims, outbox
    (root / "cmdb.csv").write_text("id,name,host\nCI001,billing-db,k8s-prod-1\n")
    with rls.tenant_context(tenant.principal(tenant.admin)):
        cmdb = source_create(
            actor=tenant.principal(tenant.admin), group_id=tenant.workspace.group_id,
            name="cmdb", kind="cmdb", config={"path": str(root / "cmdb.csv")}, trust_tier=1,
        )  # fmt: skip
    report = ingest_now(source_id=cmdb.pk, group_id=cmdb.group_id)
    assert not report.error, report.error  # a structured item: its entity identity
    # The item read again by today's extractors: a reprocessing run.
    with rls.tenant_context(tenant.principal(tenant.admin)):
        reprocess_start(
            actor=tenant.principal(tenant.admin), source_id=cmdb.pk,
            adapters=curation_bootstrap.providers().read_adapters_for(cmdb), everything=True,
        )  # fmt: skip
    process_outbox()  # search documents, lexical postings and statistics, embedding pin
    principal = tenant.principal(tenant.admin)
    with rls.tenant_context(principal):  # provider usage, charged to the workspace
        CachedEmbedder(HashingEmbedder(), meter=wiring.provider_meter()).embed(["cost"])
    flush_provider_usage()
    providers = retrieval_bootstrap.providers()
    with rls.tenant_context(principal):
        for name in ("Kubernetes cluster prod-eu-1", "Kubernetes cluster prod-eu-3"):
            # Look-alike identifiers never merge: they meet as an open merge candidate.
            entity_resolve(
                group_id=tenant.workspace.group_id, name=name, embedder=HashingEmbedder()
            )
        result = search(
            query=Query(text="where does the billing-api run"),
            embedder=providers.embedder(),
            now=timezone.now(),
            user_id=tenant.admin.pk,
        )
        assert result.hits[0].hit_id is not None
        feedback_record(hit_id=result.hits[0].hit_id, helpful=True, user_id=tenant.admin.pk)
        # A question word learnt from a vote, waiting for an admin.
        asked = search(
            query=Query(text="which iron carries billing-api"), embedder=providers.embedder(),
            now=timezone.now(), user_id=tenant.admin.pk,
        )  # fmt: skip
        feedback_record(hit_id=asked.hits[0].hit_id, helpful=True, user_id=tenant.admin.pk)
        since = timezone.now() - dt.timedelta(days=1)
        group_id = tenant.workspace.group_id
        assert question_words_learn(group_id=group_id, since=since, min_support=1) > 0
        # The learning loop: a golden query, a calibration (its candidate weight set),
        # its activation, and an evaluation with its per-query result.
        group_id = tenant.workspace.group_id
        golden_import_jsonl(
            group_id=group_id,
            lines=['{"key": "b", "query": "billing-api", "expected_texts": ["k8s-prod-1"]}'],
        )
        assert len(result.hits) > 1
        feedback_record(hit_id=result.hits[-1].hit_id, helpful=False, user_id=tenant.admin.pk)
        run = calibration_run(
            actor=principal, group_id=group_id, now=timezone.now(), trigger="test",
            min_samples_per_class=1,
        )  # fmt: skip
        assert run.candidate is not None, run.message
        weight_set_activate(actor=principal, weight_set_id=run.candidate.pk, confirm=True)
        evaluation_run(
            actor=principal, group_id=group_id, search=retrieval_bootstrap.search(),
            embedder_model="hashing", now=timezone.now(), trigger="test",
        )  # fmt: skip
        # What `outbox_paused` holds while a graph rebuild of the group runs.
        OutboxPause.objects.create(group_id=group_id, consumer=Consumer.GRAPH, reason="rebuild")
        # A second model the workspace is searched with: a companion vector per document.
        with override_settings(VERA_EMBEDDER__CHOICES=["e5"]):
            catalog = providers.embedders()
            embedding_companion(
                actor=principal, group_id=group_id, provider="e5", catalog=catalog, reason="t"
            )
            assert index_catch_up(group_id=group_id, catalog=catalog) > 0
        # The workspace's own sense of a predicate, and the version of the ontology it made.
        ontology_predicate_set(
            actor=principal, group_id=group_id,
            sense=PredicateSense(name="RUNS_ON", label="is served from", words=("served",)),
        )  # fmt: skip
        # A knowledge snapshot: its documents and postings (copied in this transaction,
        # which the worker's build makes a repeatable-read one of its own).
        snapshot = snapshot_take(actor=principal, group_id=group_id, name="t")
        pinning = Pinning(catalog=providers.embedders(), reranking=None, fusion={})
        assert snapshot_copy(snapshot.pk, pinning) is not None
        # An erased episode: its tombstone (and its cleanup job in the outbox); the
        # snapshot is re-sealed without it.
        erase(
            actor=principal, kind="episode",
            target_id=Episode.objects.get(external_id="gone.md").pk, reason="t", confirm=True,
            catalog=providers.embedders(),
        )  # fmt: skip
        # A context pack served, and kept for feedback.
        served = context_pack(
            query=Query(text="billing-api"), token_budget=500, user_id=tenant.admin.pk,
            now=timezone.now(), packing=retrieval_bootstrap.packing(),
        )  # fmt: skip
        assert served.pack_id is not None


def _tenant_tables() -> tuple[str, ...]:
    with connection.cursor() as cursor:
        cursor.execute(TENANT_TABLES_SQL)
        return tuple(name for (name,) in cursor.fetchall() if name not in EXEMPT)


@pytest.fixture(scope="module")
def world(
    django_db_setup: None,
    django_db_blocker: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    """Built once for the module inside a transaction that is rolled back at its end.

    Each test runs in a savepoint of its own within it, so the world is never undone by
    hand and every refused write leaves nothing behind.
    """
    with django_db_blocker.unblock(), transaction.atomic():  # type: ignore[attr-defined]
        a, b = make_tenant("Acme"), make_tenant("Globex")
        _fill(a, tmp_path_factory.mktemp("acme-docs"))
        yield World(a=a, b=b, tables=_tenant_tables())
        transaction.set_rollback(True)


def _ident(table: str) -> str:
    return '"' + table.replace('"', '""') + '"'


def _count(table: str, where: str = "TRUE", params: list[object] | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {_ident(table)} WHERE {where}", params or [])  # noqa: S608 - catalog names
        return int(cursor.fetchone()[0])


def _refusal(statement: str, params: list[object]) -> str:
    """What Postgres says to `statement` ("" when it runs), in a savepoint rolled back on error."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, params)
    except DatabaseError as error:
        return str(error)
    return ""


def _rowcount(statement: str, params: list[object]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def _triggers(table: str) -> list[str]:
    """pgtrigger URIs of the table's triggers (append-only, immutable columns...)."""
    return [
        trigger.get_uri(model)
        for model, trigger in pgtrigger.registered()
        if model._meta.db_table == table
    ]


# --- the catalog -----------------------------------------------------------------------


def test_the_catalog_finds_tenant_tables_in_every_app(world: World) -> None:
    apps = {table.split("_", 1)[0] for table in world.tables}
    assert {"tenants", "curation", "retrieval"} <= apps
    assert not set(EXEMPT) & set(world.tables)


def test_rls_is_enabled_and_forced_on_every_tenant_table(world: World) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relname = ANY (%s) AND relkind IN ('r', 'p') "
            "AND NOT (relrowsecurity AND relforcerowsecurity) ORDER BY relname",
            [list(world.tables)],
        )
        unprotected = [name for (name,) in cursor.fetchall()]
    assert unprotected == [], "tenant tables without forced RLS (use rls.enable_rls)"


def test_the_world_writes_rows_into_every_tenant_table(world: World) -> None:
    with rls.tenant_context(world.a_principal):
        empty = [t for t in world.tables if not _count(t, "group_id = ANY (%s)", [world.a_groups])]
    assert empty == [], "tenant tables the world leaves empty: make _fill write a row"


# --- reads -----------------------------------------------------------------------------


def test_no_rows_are_visible_when_no_tenant_is_set(world: World) -> None:
    with transaction.atomic():
        assert rls.current_group_ids() == []
        visible = [table for table in world.tables if _count(table)]
    assert visible == []


def test_no_row_of_another_tenant_is_visible(world: World) -> None:
    with rls.tenant_context(world.b_principal):
        foreign = [
            table
            for table in world.tables
            if _count(table, "NOT (group_id = ANY (%s))", [world.b_groups])
        ]
    assert foreign == []


# --- writes ----------------------------------------------------------------------------


def test_inserting_a_row_for_another_tenant_is_refused(world: World) -> None:
    # Postgres checks the policy before NOT NULL and the other constraints, so a row that
    # names only its tenant is enough: anything but the policy's refusal is a finding.
    victim = world.a.workspace.group_id
    with rls.tenant_context(world.b_principal):
        answers = {
            table: _refusal(f"INSERT INTO {_ident(table)} (group_id) VALUES (%s)", [victim])  # noqa: S608
            for table in world.tables
        }
    not_refused = {table: answer for table, answer in answers.items() if RLS_REFUSAL not in answer}
    assert not_refused == {}


def test_updating_another_tenants_rows_changes_none(world: World) -> None:
    with rls.tenant_context(world.b_principal):
        touched = {
            table: _rowcount(
                f"UPDATE {_ident(table)} SET group_id = group_id WHERE group_id = ANY (%s)",  # noqa: S608
                [world.a_groups],
            )
            for table in world.tables
        }
    assert {table: rows for table, rows in touched.items() if rows} == {}


def test_moving_own_rows_into_another_tenant_is_refused(world: World) -> None:
    # Triggers that refuse any update (append-only tables) are set aside, so that the
    # refusal observed is the policy's WITH CHECK and not the trigger's.
    target = world.b.workspace.group_id
    answers = {}
    with rls.tenant_context(world.a_principal):
        for table in world.tables:
            with pgtrigger.ignore(*_triggers(table)):
                answers[table] = _refusal(
                    f"UPDATE {_ident(table)} SET group_id = %s WHERE group_id = ANY (%s)",  # noqa: S608
                    [target, world.a_groups],
                )
    not_refused = {table: answer for table, answer in answers.items() if RLS_REFUSAL not in answer}
    assert not_refused == {}


def test_deleting_another_tenants_rows_removes_none(world: World) -> None:
    mine = "group_id = ANY (%s)"
    with rls.tenant_context(world.a_principal):
        before = {table: _count(table, mine, [world.a_groups]) for table in world.tables}
    with rls.tenant_context(world.b_principal):
        deleted = {
            table: _rowcount(f"DELETE FROM {_ident(table)} WHERE {mine}", [world.a_groups])  # noqa: S608
            for table in world.tables
        }
    with rls.tenant_context(world.a_principal):
        after = {table: _count(table, mine, [world.a_groups]) for table in world.tables}
    assert {table: rows for table, rows in deleted.items() if rows} == {}
    assert after == before
