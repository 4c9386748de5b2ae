"""Property: whatever sequence of changes reached the graph through the outbox, it equals a
rebuild of the group from Postgres.

Hypothesis draws sequences of publications (a new document), supersessions (a document
rewritten with another value of a functional predicate), merges and unmerges, run
through the real services on a fresh workspace per example. The graph's outbox jobs are
drained by a real Celery worker on the projection lane (its own process, as the app
role, committed data), between some steps (so edges are written, then moved or closed)
and at the end. Then the group's canonical dump is taken, the group rebuilt, and the
dumps compared. (Retraction comes with the retraction use case; it removes edges, which
the contract suite covers.)
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import tempfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curation import bootstrap
from curation.domain.outbox import Consumer
from curation.models import Entity, OutboxJob
from curation.services.entities import canonical, entity_merge, entity_unmerge
from curation.services.projection import graph_rebuild
from curation.tasks import process_outbox
from curation.usecases import ingest_now
from tenants import rls
from tenants.domain.scopes import ScopeKind
from tenants.selectors import principal_system
from tenants.services.scopes import scope_create
from tests.support.tenancy import Tenant
from tests.support.workers import celery_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SERVICES = ("billing-api", "ledger-db", "checkout-web")
CLUSTERS = ("k8s-prod-1", "k8s-prod-2", "k8s-prod-3")
TEAMS = ("payments-team", "core-team")

write = st.tuples(
    st.just("write"), st.integers(0, 3), st.sampled_from(SERVICES),
    st.sampled_from(("runs on", "is owned by")), st.integers(0, 2),
)  # fmt: skip
merge = st.tuples(st.just("merge"), st.integers(0, 5), st.integers(0, 5))
unmerge = st.tuples(st.just("unmerge"), st.integers(0, 5))
drain = st.tuples(st.just("drain"))  # the consumer catches up between changes
# A few documents projected first, so that later merges, unmerges and rewrites move and
# close edges the graph already holds; then any mix.
steps = st.tuples(
    st.lists(write, min_size=1, max_size=3),
    st.lists(st.one_of(write, merge, merge, unmerge, drain), min_size=1, max_size=8),
).map(lambda parts: [*parts[0], ("drain",), *parts[1]])
_numbers = itertools.count()


def _drain(group_id: str) -> None:
    """The index's jobs here; the graph's by the worker, until none of the group's waits."""
    while process_outbox(consumer="index"):
        pass
    with rls.tenant_context(principal_system("property", group_ids=[group_id])):
        waiting = OutboxJob.objects.filter(consumer=Consumer.GRAPH, status=OutboxJob.Status.PENDING)
        for _ in range(50):
            if not waiting.exists():
                return
            process_outbox.apply_async(kwargs={"consumer": "graph"}, queue="projection").get(
                timeout=60
            )
    pytest.fail("the projection worker did not drain the graph's jobs")


def _apply(step: tuple, *, root: Path, source_id: int, group_id: str, day: int) -> None:
    actor = principal_system("property", group_ids=[group_id])
    if step[0] == "drain":
        _drain(group_id)
        return
    if step[0] == "write":
        _, doc, service, verb, value = step
        target = CLUSTERS[value] if verb == "runs on" else TEAMS[value % len(TEAMS)]
        path = root / f"doc{doc}.md"
        path.write_text(f"# Doc {doc}\n\nThe {service} {verb} {target}.\n", encoding="utf-8")
        at = (T0 + dt.timedelta(days=day)).timestamp()
        os.utime(path, (at, at))
        ingest_now(source_id=source_id, group_id=group_id)
        return
    with rls.tenant_context(actor):
        entities = list(Entity.objects.exclude(entity_type="document").order_by("pk"))
        if step[0] == "merge":
            _, a, b = step
            if len(entities) < 2:
                return
            one, other = entities[a % len(entities)], entities[b % len(entities)]
            if canonical(one).pk != canonical(other).pk and one.merged_into_id is None:
                entity_merge(actor=actor, entity_id=one.pk, into_id=other.pk)
        else:
            merged = [entity for entity in entities if entity.merged_into_id is not None]
            if merged:
                entity_unmerge(actor=actor, entity_id=merged[step[1] % len(merged)].pk)


def test_the_projected_graph_equals_a_rebuild_after_any_sequence(
    tenant_a: Tenant, tmp_path: Path, app_database_url: str
) -> None:
    with celery_worker(
        database_url=app_database_url, log_path=tmp_path / "worker.log", queue="projection",
        extra_env={"VERA_WORKER__WARM_EMBEDDER": "false"},
    ):  # fmt: skip

        @settings(
            max_examples=15, deadline=None, derandomize=True, database=None,
            suppress_health_check=[HealthCheck.too_slow],
        )  # fmt: skip
        @given(sequence=steps)
        @example(  # a merge re-points projected edges, an unmerge points them back
            sequence=[("write", 0, "billing-api", "runs on", 0), ("drain",), ("merge", 0, 1),
                      ("drain",), ("write", 0, "billing-api", "runs on", 1), ("unmerge", 0)]
        )  # fmt: skip
        def run(sequence: list[tuple]) -> None:
            _check(sequence, tenant_a)

        run()


def _check(sequence: list[tuple], tenant_a: Tenant) -> None:
    number = next(_numbers)
    workspace = scope_create(
        kind=ScopeKind.WORKSPACE, name=f"property {number}", parent_id=tenant_a.org.pk
    )
    group_id = workspace.group_id
    root = Path(
        tempfile.mkdtemp(prefix="vera-graph-property-", dir=django_settings.TEST_SOURCES_DIR)
    )
    actor = principal_system("property", group_ids=[group_id])
    from curation.services.sources import source_create

    with rls.tenant_context(actor):
        source = source_create(
            actor=actor, group_id=group_id, name="docs", kind="markdown",
            config={"root": str(root)}, trust_tier=1,
        )  # fmt: skip
    for day, step in enumerate(sequence, start=1):
        _apply(step, root=root, source_id=source.pk, group_id=group_id, day=day)
    _drain(group_id)
    graph = bootstrap.providers().graph()
    projected = graph.dump(group_id)

    with rls.tenant_context(actor):
        graph_rebuild(graph=graph, group_ids=[group_id])

    assert graph.dump(group_id) == projected
