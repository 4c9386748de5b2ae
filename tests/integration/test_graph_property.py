"""Property: whatever sequence of changes reached the graph through the outbox, it equals a
rebuild of the group from Postgres.

Hypothesis draws sequences of publications (a new document), supersessions (a document
rewritten with another value of a functional predicate), merges and unmerges, run
through the real services on a fresh workspace per example, with the outbox drained
between some of them (so edges are written, then moved or closed). The outbox is drained, the
group's canonical dump taken, the group rebuilt, and the dumps compared. (Retraction
comes with the retraction use case; it removes edges, which the contract suite covers.)
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation import bootstrap
from curation.models import Entity
from curation.services.entities import canonical, entity_merge, entity_unmerge
from curation.services.projection import graph_rebuild
from curation.tasks import ingest_now, process_outbox
from tenants import rls
from tenants.domain.scopes import ScopeKind
from tenants.selectors import principal_system
from tenants.services.scopes import scope_create

pytestmark = pytest.mark.django_db
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
steps = st.lists(st.one_of(write, write, merge, unmerge, drain), min_size=1, max_size=10)
_numbers = itertools.count()


def _apply(step: tuple, *, root: Path, source_id: int, group_id: str, day: int) -> None:
    actor = principal_system("property", group_ids=[group_id])
    if step[0] == "drain":
        while process_outbox():
            pass
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


@settings(
    max_examples=15, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(sequence=steps)
def test_the_projected_graph_equals_a_rebuild_after_any_sequence(
    sequence: list[tuple], tenant_a
) -> None:
    number = next(_numbers)
    workspace = scope_create(
        kind=ScopeKind.WORKSPACE, name=f"property {number}", parent_id=tenant_a.org.pk
    )
    group_id = workspace.group_id
    root = Path(tempfile.mkdtemp(prefix="vera-graph-property-"))
    actor = principal_system("property", group_ids=[group_id])
    from curation.services.sources import source_create

    with rls.tenant_context(actor):
        source = source_create(
            actor=actor, group_id=group_id, name="docs", kind="markdown",
            config={"root": str(root)}, trust_tier=1,
        )  # fmt: skip
    for day, step in enumerate(sequence, start=1):
        _apply(step, root=root, source_id=source.pk, group_id=group_id, day=day)
    while process_outbox():
        pass
    graph = bootstrap.providers().graph()
    projected = graph.dump(group_id)

    with rls.tenant_context(actor):
        graph_rebuild(graph=graph, group_ids=[group_id])

    assert graph.dump(group_id) == projected
