"""curation's use cases with their adapters bound: what every entrypoint calls.

Views, the REST API, the admin, tasks, commands, the MCP server and the benchmarks call
these functions; none of them looks up a provider or imports a service. Each takes domain
arguments only and gets the adapters it needs (connector, extractors, stores, graph,
judges) from the composition root's providers (`curation.bootstrap`), in this one module.
An action that needs no adapter is here too, delegating to its service, and so are the
refusals and results the entrypoints catch or render (`ReprocessRefused`, `Conflict`,
`IngestReport` ...). A task is a thin wrapper around one of them, so a benchmark or a
command runs exactly what a worker runs.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone
from opentelemetry import trace

from curation import bootstrap, selectors
from curation.domain.backpressure import Threshold
from curation.domain.extraction.base import extraction_version
from curation.domain.ontology import Ontology, PredicateSense
from curation.domain.outbox import Consumer, Lane, Priority
from curation.domain.params import RelatedQuery
from curation.domain.proposals import ProposalRefused as ProposalRefused
from curation.domain.sources import AGENT_KIND
from curation.models import Claim, Entity, Episode, MergeCandidate, Reprocessing, Source
from curation.ports import Embedder, Extractor, GraphProjection
from curation.selectors import DocumentCard, RelatedPath, outbox_due_groups
from curation.services import (
    backpressure,
    entities,
    lifecycle,
    ontology,
    outbox,
    proposals,
    reprocess,
    retraction,
    review,
    sources,
)
from curation.services.entities import FUZZY_CANDIDATE as FUZZY_CANDIDATE
from curation.services.entities import FUZZY_LINK as FUZZY_LINK
from curation.services.entities import SEMANTIC_CANDIDATE as SEMANTIC_CANDIDATE
from curation.services.entities import SEMANTIC_LINK as SEMANTIC_LINK
from curation.services.entities import Resolution as Resolution
from curation.services.ingest import IngestReport as IngestReport
from curation.services.ingest import (
    ReadAdapters,
    source_ingest,
    source_run_finished,
    source_run_lock,
)
from curation.services.lifecycle import RETRACTABLE as RETRACTABLE
from curation.services.outbox import BATCH_WRITE, outbox_process
from curation.services.projection import PROJECTED as PROJECTED
from curation.services.projection import graph_rebuild, graph_rebuild_live
from curation.services.proposals import PROPOSERS_ONLY as PROPOSERS_ONLY
from curation.services.reprocess import ReprocessRefused as ReprocessRefused
from curation.services.retraction import Reinstatement as Reinstatement
from curation.services.retraction import Retraction as Retraction
from curation.services.retraction import RetractionRefused as RetractionRefused
from curation.services.review import BulkOutcome as BulkOutcome
from curation.services.review import Conflict as Conflict
from curation.services.review import Edit as Edit
from curation.services.sources import SOURCE_ADMINS_ONLY as SOURCE_ADMINS_ONLY
from curation.services.sources import SOURCE_RUNNERS_ONLY as SOURCE_RUNNERS_ONLY
from curation.services.sources import RunRefused as RunRefused
from curation.services.sources import RunRequest as RunRequest
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
    requested_at: dt.datetime | None = None,
) -> IngestReport:
    """Run one source's ingestion in this process (the task's body, the `ingest` command's
    and the benchmarks'): its connector from the cursor, page by page.

    One run of a source at a time (`source_run_lock`): while another is going this one
    is skipped, and the source left as it is. A run sent for a request (`requested_at`,
    from the schedule or "run now") is skipped too when a run has ended since that
    request, or the source was disabled meanwhile.
    """
    with _tracer.start_as_current_span(
        "vera.ingest.source",
        attributes={"vera.ingest.source_id": source_id, "vera.group_id": group_id},
    ), source_run_lock(source_id) as held:  # fmt: skip
        if not held:
            return IngestReport(source_id=source_id, skipped="a run of this source is going")
        return _ingest(
            source_id=source_id, group_id=group_id, on_progress=on_progress,
            requested_at=requested_at,
        )  # fmt: skip


def _answered(source: Source, requested_at: dt.datetime | None) -> str:
    """Why a run sent for a request is no longer wanted ("" when it is)."""
    if requested_at is None:
        return ""
    if not source.enabled:
        return "the source was disabled after this run was asked for"
    if source.last_run_at is not None and source.last_run_at >= requested_at:
        return f"a run that ended at {source.last_run_at.isoformat()} answered this request"
    return ""


def _ingest(
    *,
    source_id: int,
    group_id: str,
    on_progress: Callable[[IngestReport], None] | None,
    requested_at: dt.datetime | None,
) -> IngestReport:
    principal = principal_system("ingest", group_ids=[group_id])
    with rls.tenant_context(principal):
        source = Source.objects.get(pk=source_id)
    if reason := _answered(source, requested_at):
        return IngestReport(source_id=source_id, skipped=reason)
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


def ingest_pressure(*, now: dt.datetime) -> str | None:
    """Why ingestion should hold back now (the projection lane is degraded), else None;
    the scheduler, the `ingest` command and a paced run ask it."""
    return backpressure.ingest_pressure(now=now)


def lane_thresholds() -> dict[Lane, Threshold]:
    """Each outbox lane's backlog and age thresholds, as configured; what health reports
    a lane against."""
    return backpressure.lane_thresholds()


# --- sources -----------------------------------------------------------------------------


def source_create(
    *,
    actor: Principal,
    group_id: str,
    name: str,
    kind: str,
    config: dict[str, Any],
    trust_tier: int,
    token_env: str = "",
    schedule_seconds: int | None = None,
    origin_group_id: str | None = None,
) -> Source:
    """Create a source in a scope, within the allow-lists; only an admin of the scope may.
    Audited."""
    return sources.source_create(
        actor=actor, group_id=group_id, name=name, kind=kind, config=config,
        trust_tier=trust_tier, token_env=token_env, schedule_seconds=schedule_seconds,
        origin_group_id=origin_group_id,
    )  # fmt: skip


def source_update(*, actor: Principal, source_id: int, **changes: Any) -> Source:
    """Change a source's settings (not its kind, scope or reach) within its policy; only an
    admin of its scope may. Audited."""
    return sources.source_update(actor=actor, source_id=source_id, **changes)


def source_run_request(*, actor: Principal, source_id: int) -> RunRequest:
    """Ask for a run of a source now (its scope's admins; audited): refused with why for
    a disabled source, the agents' source and one whose run is going; a request still
    waiting is answered instead of asking again. The caller sends a `sent` request to a
    worker once its transaction commits (`curation.tasks.ingest_enqueue`)."""
    return sources.source_run_request(actor=actor, source_id=source_id, now=timezone.now())


def source_run_held(source_id: int) -> bool:
    """Whether a run of the source is going now (a session holds its run lock)."""
    return sources.source_run_held(source_id)


def source_run_scheduled(*, source_id: int, now: dt.datetime) -> bool:
    """Mark a due source as asked for by the schedule; False if it no longer is due."""
    return sources.source_run_scheduled(
        source_id=source_id, now=now, resend_before=run_resend_before(now)
    )


def run_resend_before(now: dt.datetime) -> dt.datetime:
    """A run asked for before this and not ended is asked for again."""
    return now - dt.timedelta(seconds=settings.VERA_SOURCES__RUN_RESEND_AFTER_S)


def source_reach_change(
    *,
    actor: Principal,
    source_id: int,
    hosts: Sequence[str] = (),
    file_roots: Sequence[str] = (),
    remove: bool = False,
) -> Source:
    """Widen (or, with `remove`, narrow) what one source may reach beyond the allow-lists;
    only the operator may. Audited."""
    return sources.source_reach_change(
        actor=actor, source_id=source_id, hosts=hosts, file_roots=file_roots, remove=remove
    )


# --- reprocessing ------------------------------------------------------------------------


def reprocess_begin(
    *,
    actor: Principal,
    source: Source,
    everything: bool = False,
    reason: str = "",
    extractors: Sequence[Extractor] | None = None,
) -> Reprocessing:
    """`reprocess_start` with the source's extractors of today, or the `extractors` given
    (a benchmark's changed rules), call in a tenant context."""
    # The agents' source has no extractors: the service refuses it, after its role check.
    adapters = _read_adapters(source, extractors)
    return reprocess.reprocess_start(
        actor=actor, source_id=source.pk, adapters=adapters, everything=everything, reason=reason
    )


def reprocess_now(
    *,
    run_id: int,
    group_id: str,
    on_batch: reprocess.BatchCallback | None = None,
    batch: int = reprocess.BATCH,
    extractors: Sequence[Extractor] | None = None,
) -> Reprocessing:
    """Work one reprocessing run to its end in this process (the task's body, the
    `reprocess` command's and the benchmark's), reading through today's extractors (or
    the `extractors` given, as `reprocess_begin`)."""
    principal = principal_system("reprocess", group_ids=[group_id])
    with rls.tenant_context(principal):
        run = Reprocessing.objects.select_related("source").get(pk=run_id)
        adapters = _read_adapters(run.source, extractors)
    # Outside the context: each batch commits in a tenant context of its own.
    return reprocess.reprocess_run(
        run_id=run_id, actor=principal, adapters=adapters, batch=batch, on_batch=on_batch
    )


def _read_adapters(source: Source, extractors: Sequence[Extractor] | None) -> ReadAdapters:
    """The source's read adapters of today, with other extractors when some are given."""
    adapters = bootstrap.providers().read_adapters_for(source)
    return adapters if extractors is None else replace(adapters, extractors=list(extractors))


def reprocess_outdated() -> list[Source]:
    """Sources with a document an older extraction version read (call in a context that
    sees them): what `reprocess --outdated` runs."""
    providers = bootstrap.providers()
    return list(
        reprocess.reprocess_due(
            version_of=lambda s: extraction_version(providers.read_adapters_for(s).extractors)
        )
    )


def reprocess_reclaim(*, run_id: int, before: dt.datetime) -> bool:
    """Take over a running run nobody advanced since `before` (its worker is gone), so one
    sweep sends it again; the system's resume sweep calls it in the run's group context."""
    return reprocess.reprocess_reclaim(run_id=run_id, before=before)


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


def outbox_retry(*, job_ids: list[int]) -> int:
    """Give the named dead outbox jobs another round; the admin's retry action (staff) calls
    it. Returns how many were dead and are pending again."""
    return outbox.outbox_retry(job_ids=job_ids)


def outbox_backlog() -> dict[str, outbox.LaneBacklog]:
    """Per consumer: its pending jobs (all, and urgent), the oldest one's time and its dead
    letters, as the admin shows them."""
    return outbox.outbox_backlog()


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


def graph_projection() -> GraphProjection:
    """The configured graph projection, for what reads or resets it whole: a check's count,
    a benchmark's dump or clean slate. Every change of what it holds goes through the
    actions here (the outbox, `graph_replay`)."""
    return bootstrap.providers().graph()


def claims_load(claims: list[Claim]) -> list[Claim]:
    """Insert claims whose lifecycle was decided elsewhere, as they are (a history loaded
    in bulk: a benchmark's corpus); nothing is queued, the caller indexes and projects
    them. The system does it, in a tenant context of their workspace."""
    return lifecycle.claims_load(claims)


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


# --- review ------------------------------------------------------------------------------


def review_approve(
    *, actor: Principal, claim_id: int, version: int, edit: Edit | None = None
) -> review.Outcome:
    """Approve a tier-3 claim at the version the reviewer saw (optionally edited first): it
    is published, human-verified. Reviewers of the claim's scope may; audited."""
    return review.review_approve(actor=actor, claim_id=claim_id, version=version, edit=edit)


def review_reject(*, actor: Principal, claim_id: int, version: int, reason: str) -> Claim:
    """Reject a tier-3 claim at the version the reviewer saw, with the required reason.
    Reviewers of the claim's scope may; audited."""
    return review.review_reject(actor=actor, claim_id=claim_id, version=version, reason=reason)


def review_bulk(
    *, actor: Principal, items: Iterable[tuple[int, int]], approve: bool, reason: str = ""
) -> BulkOutcome:
    """Approve or reject a selection of `(claim id, version)`, each committing or
    conflicting on its own (a rejection needs a reason). Reviewers of the claims' scopes may."""
    return review.review_bulk(actor=actor, items=items, approve=approve, reason=reason)


def proposal_accept(*, actor: Principal, claim_id: int, version: int) -> review.Outcome:
    """Accept a tier-4 proposal: it is published exactly as an approval publishes.
    Reviewers of its scope may; audited."""
    return review.proposal_accept(actor=actor, claim_id=claim_id, version=version)


def proposal_decline(*, actor: Principal, claim_id: int, version: int, reason: str = "") -> Claim:
    """Decline a tier-4 proposal at the version the reviewer saw. Reviewers of its scope
    may; audited."""
    return review.proposal_decline(actor=actor, claim_id=claim_id, version=version, reason=reason)


def recheck_keep(*, actor: Principal, claim_id: int, version: int) -> Claim:
    """Keep a published claim that reprocessing no longer found: its re-check request is
    cleared. Reviewers of its scope may; audited."""
    return review.recheck_keep(actor=actor, claim_id=claim_id, version=version)


def recheck_retract(*, actor: Principal, claim_id: int, version: int, reason: str) -> Retraction:
    """Retract a published claim that reprocessing no longer found, with the reviewer's
    reason, and clear its re-check request. Reviewers of its scope may; audited."""
    return review.recheck_retract(actor=actor, claim_id=claim_id, version=version, reason=reason)


def candidate_decide(*, actor: Principal, candidate_id: int, merge: bool) -> MergeCandidate:
    """Merge two possibly duplicate entities, or record that they are different things.
    Reviewers of their scope may; audited."""
    return review.candidate_decide(actor=actor, candidate_id=candidate_id, merge=merge)


# --- retraction --------------------------------------------------------------------------


def claim_retract(*, actor: Principal, claim_id: int, reason: str) -> Retraction:
    """Withdraw a claim (its validity closed now), with the required reason. Reviewers and
    admins of its scope may; audited."""
    return retraction.claim_retract(actor=actor, claim_id=claim_id, reason=reason)


def episode_retract(*, actor: Principal, episode_id: int, reason: str) -> Retraction:
    """Withdraw a fetched document and the claims only it supports, with the required
    reason. Reviewers and admins of its scope may; audited."""
    return retraction.episode_retract(actor=actor, episode_id=episode_id, reason=reason)


def source_retract(*, actor: Principal, source_id: int, reason: str) -> Retraction:
    """Withdraw a source (its schedule stops), its documents and the claims only they
    support, with the required reason. Reviewers and admins of its scope may; audited."""
    return retraction.source_retract(actor=actor, source_id=source_id, reason=reason)


def claim_reinstate(*, actor: Principal, claim_id: int, reason: str) -> Reinstatement:
    """Undo a retraction: the claim's value is published again as a new claim valid from
    now, with the required reason. Reviewers and admins of its scope may; audited."""
    return retraction.claim_reinstate(actor=actor, claim_id=claim_id, reason=reason)


# --- entities ----------------------------------------------------------------------------


def entity_unmerge(
    *, actor: Principal, entity_id: int, priority: Priority = Priority.INTERACTIVE
) -> Entity:
    """Undo an entity's merge; its published claims are projected again. Reviewers of its
    scope may; audited."""
    return entities.entity_unmerge(actor=actor, entity_id=entity_id, priority=priority)


def alias_unlink(*, actor: Principal, alias_id: int) -> entities.Unlinked:
    """Detach an automatically linked alias into an entity of its own, naming the claims a
    reviewer should check. Reviewers of its scope may; audited."""
    return entities.alias_unlink(actor=actor, alias_id=alias_id)


def entity_resolve(
    *, group_id: str, name: str, entity_type: str = "thing", embedder: Embedder | None = None
) -> Resolution:
    """The entity a name denotes in the workspace, registered when nothing matches, by
    name and alias (and, with an `embedder`, by meaning), as ingestion resolves each
    subject and object; the system does it, in a tenant context of the workspace."""
    return entities.entity_resolve(
        group_id=group_id, name=name, entity_type=entity_type, embedder=embedder
    )


# --- the ontology ------------------------------------------------------------------------


def ontology_predicate_set(*, actor: Principal, group_id: str, sense: PredicateSense) -> Ontology:
    """Create or replace a workspace's own sense of a predicate; the ontology after it.
    Admins of the workspace may; audited as a new version."""
    return ontology.ontology_predicate_set(actor=actor, group_id=group_id, sense=sense)


def ontology_predicate_reset(*, actor: Principal, group_id: str, name: str) -> Ontology:
    """Drop a workspace's own sense of a predicate, so the default applies again; the
    ontology after it. Admins of the workspace may; audited as a new version."""
    return ontology.ontology_predicate_reset(actor=actor, group_id=group_id, name=name)
