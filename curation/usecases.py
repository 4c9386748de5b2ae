"""curation's use cases with their adapters bound: what every entrypoint calls.

Views, the REST API, the admin, tasks, commands, the MCP server and the benchmarks call
these functions; none of them looks up a provider. Each takes domain arguments only
and gets the adapters it needs (connector, extractors, stores, graph, judges) from the
composition root's providers (`curation.bootstrap`), in this one module. A task is a
thin wrapper around one of them, so a benchmark or a command runs exactly what a
worker runs.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone
from opentelemetry import trace

from curation import bootstrap, selectors
from curation.domain.extraction.base import extraction_version
from curation.domain.outbox import Consumer, Priority
from curation.domain.params import RelatedQuery
from curation.domain.sources import AGENT_KIND
from curation.models import Claim, Entity, Episode, Reprocessing, Source
from curation.selectors import DocumentCard, RelatedPath, outbox_due_groups
from curation.services import proposals, reprocess
from curation.services.backpressure import ingest_pressure
from curation.services.ingest import IngestReport, source_ingest, source_run_finished
from curation.services.outbox import BATCH_WRITE, outbox_process
from curation.services.projection import graph_rebuild, graph_rebuild_live
from tenants import rls
from tenants.domain.access import Principal
from tenants.selectors import principal_system

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer(__name__)

# A bulk run hands the worker back after this long, so the other consumer's run (queued
# behind it on the projection lane) gets its turn; beat sends the next one.
OUTBOX_RUN_BUDGET_S = 60.0

# --- ingestion ---------------------------------------------------------------------------


def ingest_now(
    *,
    source_id: int,
    group_id: str,
    on_progress: Callable[[IngestReport], None] | None = None,
) -> IngestReport:
    """Run one source's ingestion in this process (the task's body, the `ingest` command's
    and the benchmarks'): its connector from the cursor, page by page."""
    with _tracer.start_as_current_span(
        "vera.ingest.source",
        attributes={"vera.ingest.source_id": source_id, "vera.group_id": group_id},
    ):
        return _ingest(source_id=source_id, group_id=group_id, on_progress=on_progress)


def _ingest(
    *, source_id: int, group_id: str, on_progress: Callable[[IngestReport], None] | None
) -> IngestReport:
    principal = principal_system("ingest", group_ids=[group_id])
    with rls.tenant_context(principal):
        source = Source.objects.get(pk=source_id)
    if source.kind == AGENT_KIND:  # nothing to fetch: agents' proposals arrive by the API
        return IngestReport(source_id=source_id, error="the agents' source has no connector to run")
    try:
        adapters = bootstrap.providers().ingest_adapters_for(source)
    except ValueError as error:  # unknown kind, missing secret, bad config
        report = IngestReport(source_id=source_id, error=str(error))
        with rls.tenant_context(principal):
            source_run_finished(source_id=source_id, report=report)
        return report
    return source_ingest(
        source_id=source_id, actor=principal, adapters=adapters, on_progress=_paced(on_progress)
    )


def _paced(
    on_progress: Callable[[IngestReport], None] | None,
) -> Callable[[IngestReport], None] | None:
    """With VERA_BACKPRESSURE__INGEST=slow, a page callback that also pauses the run while
    the projection lane is degraded (one lane query a page), so the outbox can catch up."""
    if settings.VERA_BACKPRESSURE__INGEST != "slow":
        return on_progress

    def paced(report: IngestReport) -> None:
        if on_progress is not None:
            on_progress(report)
        if reason := ingest_pressure(now=timezone.now()):
            pause = settings.VERA_BACKPRESSURE__INGEST_PAUSE_S
            logger.info("ingestion of source %s pauses %d s: %s", report.source_id, pause, reason)
            time.sleep(pause)

    return paced


# --- reprocessing ------------------------------------------------------------------------


def reprocess_begin(
    *, actor: Principal, source: Source, everything: bool = False, reason: str = ""
) -> Reprocessing:
    """`reprocess_start` with the source's extractors of today (call in a tenant context)."""
    return reprocess.reprocess_start(
        actor=actor, source_id=source.pk, adapters=bootstrap.providers().read_adapters_for(source),
        everything=everything, reason=reason,
    )  # fmt: skip


def reprocess_now(
    *,
    run_id: int,
    group_id: str,
    on_batch: reprocess.BatchCallback | None = None,
    batch: int = reprocess.BATCH,
) -> Reprocessing:
    """Work one reprocessing run to its end in this process (the task's body, the
    `reprocess` command's and the benchmark's), reading through today's extractors."""
    principal = principal_system("reprocess", group_ids=[group_id])
    with rls.tenant_context(principal):
        run = Reprocessing.objects.select_related("source").get(pk=run_id)
        adapters = bootstrap.providers().read_adapters_for(run.source)
    # Outside the context: each batch commits in a tenant context of its own.
    return reprocess.reprocess_run(
        run_id=run_id, actor=principal, adapters=adapters, batch=batch, on_batch=on_batch
    )


def reprocess_outdated() -> list[Source]:
    """Sources with a document an older extraction version read (call in a context that
    sees them): what `reprocess --outdated` runs."""
    providers = bootstrap.providers()
    return list(
        reprocess.reprocess_due(
            version_of=lambda s: extraction_version(providers.read_adapters_for(s).extractors)
        )
    )


# --- the outbox and the graph ------------------------------------------------------------


def outbox_drain(
    consumer: Consumer, *, max_priority: Priority, batches: int, limit: int
) -> dict[str, int]:
    """Run up to `batches` batches of the consumer's due jobs (of `max_priority` or more
    urgent), each in a tenant context of only the groups that own its jobs; counts by
    outcome. A consumer whose backend is down leaves its jobs waiting, no attempt spent."""
    providers = bootstrap.providers()
    down = providers.outbox_available(consumer)
    if down:
        logger.warning("outbox consumer %s waits: its backend is down (%s)", consumer, down)
        return {"waiting": 1}
    handlers, prepare = providers.outbox_handlers(consumer), providers.outbox_prepare(consumer)
    batch = providers.outbox_batch(consumer)
    # The graph's batch holds no lock in Postgres (it reads claims, writes the graph,
    # marks its jobs done) and its statements cost mostly per call: it takes more at once.
    write_group = settings.VERA_OUTBOX__GRAPH_BATCH if consumer is Consumer.GRAPH else BATCH_WRITE
    totals: dict[str, int] = {}
    deadline = time.monotonic() + OUTBOX_RUN_BUDGET_S
    for _ in range(batches):
        # Each batch runs in a tenant context of only the groups that own its jobs (at
        # most `limit`), found by one query across every group: an idle tick costs that
        # query alone, whatever the number of workspaces, and a handler never sees a
        # group it has no job of. The same jobs as a claim over all groups, in the same
        # order (see `outbox_due_groups`); a batch that another worker's lease got to
        # first comes up short and the next batch takes what follows.
        groups = outbox_due_groups(
            consumer=consumer, max_priority=max_priority, now=timezone.now(), limit=limit
        )
        if not groups:
            break
        counts = outbox_process(
            consumer=consumer,
            handlers=handlers,
            prepare=prepare,
            batch=batch,
            max_priority=max_priority,
            limit=limit,
            principal=principal_system("outbox", group_ids=groups),
            lease=dt.timedelta(seconds=settings.VERA_OUTBOX__LEASE_S),
            group=write_group,
        )
        for outcome, count in counts.items():
            totals[outcome] = totals.get(outcome, 0) + count
        if not counts or time.monotonic() > deadline:
            break
    return totals


def graph_replay(
    *, group_ids: Sequence[str], on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Rebuild the graph from Postgres: these groups while the system runs (their graph
    jobs paused meanwhile), or, with none, the whole graph. Returns the claims projected."""
    graph = bootstrap.providers().graph()
    principal = principal_system("graph-rebuild", group_ids=list(group_ids) or None)
    if group_ids:  # each step its own transaction: the workers must see the pause
        return graph_rebuild_live(
            graph=graph, group_ids=group_ids, principal=principal, on_progress=on_progress
        )
    with rls.tenant_context(principal):
        return graph_rebuild(graph=graph, on_progress=on_progress)


def entity_related[C](
    *,
    entity: Entity,
    principal: Principal,
    query: RelatedQuery,
    read: Callable[[QuerySet[Claim]], Mapping[int, C]],
) -> list[RelatedPath[C]]:
    """The entity's neighbourhood from the graph, each path's claims checked in Postgres
    (`selectors.entity_related` with the configured graph)."""
    return selectors.entity_related(
        entity=entity, graph=bootstrap.providers().graph(), principal=principal, query=query,
        read=read,
    )  # fmt: skip


# --- stored bytes ------------------------------------------------------------------------


def review_documents(
    *, principal: Principal, episode_ids: list[int], filters: dict[str, str]
) -> list[DocumentCard]:
    """The review-by-document cards, each document's text read from the object store."""
    return selectors.review_documents(
        principal=principal, episode_ids=episode_ids, filters=filters,
        store=bootstrap.providers().object_store(),
    )  # fmt: skip


def artifact_bytes(episode: Episode) -> bytes:
    """The raw bytes an episode stored: KeyError when erased, ObjectStoreError when the
    store cannot be reached."""
    return bootstrap.providers().object_store().get(episode.object_key)


def proposal_record(
    *,
    actor: Principal,
    subject: str,
    predicate: str,
    object: str,
    evidence: str,
    source_url: str = "",
    group_id: str | None = None,
) -> proposals.Proposed:
    """Record an agent's proposal (REST and MCP), its evidence kept as an episode's bytes."""
    return proposals.proposal_record(
        actor=actor, store=bootstrap.providers().object_store(), subject=subject,
        predicate=predicate, object=object, evidence=evidence, source_url=source_url,
        group_id=group_id,
    )  # fmt: skip
