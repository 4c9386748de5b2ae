"""Outbox handlers that keep the graph a projection of the claims that are or were valid.

A published claim is an open edge; a superseded one stays, closed at its `valid_to`,
so the graph answers "as of" as Postgres does; any other status (retracted, rejected,
pending) is no edge. Each job re-reads its claim, so a handler projects what the
record says now, whatever order the jobs come in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from django.db import transaction
from django.utils import timezone

from curation.domain.graph import GraphEdge, GraphNode, epoch_ms
from curation.domain.outbox import Consumer
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Evidence, OutboxJob
from curation.ports import GraphProjection
from curation.services.entities import canonical
from curation.services.outbox import outbox_paused
from tenants import rls
from tenants.domain.access import Principal

PROJECTED = (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)


def graph_edge(claim: Claim, episode_ids: Sequence[int] | None = None) -> GraphEdge:
    """A claim as a graph edge between its entity nodes (after merges).

    `episode_ids` are the claim's evidence episodes when the caller read them in bulk.

    Merges only point an entity at its survivor, so the edge follows the pointers: a
    merge re-projects the claims it touches and their edges meet at the survivor.
    """
    if episode_ids is None:
        episodes: Sequence[int] = list(claim.evidence.values_list("episode_id", flat=True))
    else:
        episodes = episode_ids
    about = canonical(claim.subject)
    subject = GraphNode(f"e:{about.pk}", about.canonical_name, about.entity_type)
    if claim.object_entity is not None:
        target = canonical(claim.object_entity)
        obj = GraphNode(f"e:{target.pk}", target.canonical_name, target.entity_type)
    else:
        obj = GraphNode(f"v:{claim.pk}", (claim.object_literal or "")[:500], "value")
    return GraphEdge(
        claim_id=claim.pk,
        group_id=claim.group_id,
        subject=subject,
        object=obj,
        predicate=claim.predicate,
        fact=claim.fact_text[:2000],
        valid_from=epoch_ms(claim.valid_from),
        valid_to=epoch_ms(claim.valid_to) if claim.valid_to is not None else None,
        status=claim.status,
        tier=claim.tier,
        episode_ids=tuple(sorted(set(episodes))),
    )


def _claims(ids: Sequence[int]) -> dict[int, Claim]:
    rows = Claim.objects.select_related("subject", "object_entity").filter(pk__in=ids)
    return {claim.pk: claim for claim in rows}


def project_claims(claim_ids: Sequence[int], *, graph: GraphProjection) -> None:
    """Project these claims as the record says now: upserted edges, or none."""
    ids = sorted(set(claim_ids))
    claims = _claims(ids)
    keep = [claims[i] for i in ids if i in claims and claims[i].status in PROJECTED]
    graph.remove_claims([i for i in ids if i not in {claim.pk for claim in keep}])
    episodes: dict[int, list[int]] = {claim.pk: [] for claim in keep}
    for claim_id, episode_id in Evidence.objects.filter(claim_id__in=list(episodes)).values_list(
        "claim_id", "episode_id"
    ):
        episodes[claim_id].append(episode_id)
    graph.upsert_claims([graph_edge(claim, episodes[claim.pk]) for claim in keep])


def project_claim(job: OutboxJob, *, graph: GraphProjection) -> None:
    """Outbox handler: project the job's claim."""
    project_claims([int(job.payload["claim_id"])], graph=graph)


def project_jobs(jobs: list[OutboxJob], *, graph: GraphProjection) -> None:
    """Outbox batch handler: `project_claim` for each job, in a few batched statements."""
    project_claims([int(job.payload["claim_id"]) for job in jobs], graph=graph)


def graph_rebuild(
    *,
    graph: GraphProjection,
    group_ids: Sequence[str] | None = None,
    batch: int = 500,
    on_progress: Callable[[int, int], None] | None = None,
) -> int:
    """Replay the claims visible to the tenant context into the graph; returns how many.

    With `group_ids`, only those groups are cleared and replayed: other groups' nodes
    and edges are not touched. Without, the whole graph is cleared first.
    """
    claims = Claim.objects.filter(status__in=PROJECTED)
    if group_ids is None:
        graph.clear()
    else:
        claims = claims.filter(group_id__in=group_ids)
        for group_id in group_ids:
            graph.clear_group(group_id)
    ids = list(claims.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        project_claims(chunk, graph=graph)
        if on_progress is not None:
            on_progress(start + len(chunk), len(ids))
    return len(ids)


def graph_rebuild_live(
    *,
    graph: GraphProjection,
    group_ids: Sequence[str],
    principal: Principal | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> int:
    """`graph_rebuild` of these groups while the system runs: their graph jobs are paused
    (they wait, and catch up after), and a job a worker had leased before the pause and
    finished during the rebuild is projected again at its end, so the rebuild's older
    read cannot overwrite it. Other groups' projection goes on.

    With `principal` each step is a transaction of its own under it (the pause must be
    committed for the workers to see it); without, savepoints in the caller's.
    """
    paused = outbox_paused(
        consumer=Consumer.GRAPH, group_ids=group_ids, reason="graph rebuild", principal=principal
    )
    with paused:
        started = timezone.now()
        with _steps(principal):
            count = graph_rebuild(graph=graph, group_ids=group_ids, on_progress=on_progress)
        with _steps(principal):
            late = OutboxJob.objects.filter(
                consumer=Consumer.GRAPH, group_id__in=list(group_ids),
                status=OutboxJob.Status.DONE, done_at__gte=started,
            ).values_list("payload__claim_id", flat=True)  # fmt: skip
            project_claims([int(claim) for claim in late if claim is not None], graph=graph)
    return count


def _steps(principal: Principal | None) -> AbstractContextManager[object]:
    return rls.tenant_context(principal) if principal is not None else transaction.atomic()
