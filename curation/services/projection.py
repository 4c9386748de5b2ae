"""Outbox handlers that keep the graph a projection of the claims that are or were valid.

A published claim is an open edge; a superseded one stays, closed at its `valid_to`,
so the graph answers "as of" as Postgres does; any other status (retracted, rejected,
pending) is no edge. Each job re-reads its claim, so a handler projects what the
record says now, whatever order the jobs come in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from django.db import transaction
from django.utils import timezone

from curation.domain.graph import GraphEdge, GraphNode, epoch_ms
from curation.domain.outbox import Consumer
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, Evidence, OutboxJob
from curation.ports import GraphProjection
from curation.services.entities import canonical
from curation.services.outbox import outbox_paused
from tenants import rls
from tenants.domain.access import Principal

PROJECTED = (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)


_COLUMNS = ("id", "group_id", "status", "predicate", "fact_text", "valid_from", "valid_to",
            "tier", "object_literal", "subject_id", "subject__canonical_name",
            "subject__entity_type", "subject__merged_into_id", "object_entity_id",
            "object_entity__canonical_name", "object_entity__entity_type",
            "object_entity__merged_into_id")  # fmt: skip


def _node(row: dict[str, Any], side: str, survivors: dict[int, Entity]) -> GraphNode:
    """A claim's end as a node: its entity's survivor after merges, or the literal value."""
    if side == "object_entity" and row["object_entity_id"] is None:
        return GraphNode(f"v:{row['id']}", (row["object_literal"] or "")[:500], "value")
    if row[f"{side}__merged_into_id"] is not None:
        survivor = survivors[row[f"{side}_id"]]
        return GraphNode(f"e:{survivor.pk}", survivor.canonical_name, survivor.entity_type)
    return GraphNode(
        f"e:{row[f'{side}_id']}", row[f"{side}__canonical_name"], row[f"{side}__entity_type"]
    )


def graph_edges(claim_ids: Sequence[int]) -> dict[int, tuple[str, GraphEdge]]:
    """The claims as graph edges between their entity nodes (after merges), with each
    claim's status, read as rows (a rebuild reads 100,000 of them).

    Merges only point an entity at its survivor, so the edge follows the pointers: a
    merge re-projects the claims it touches and their edges meet at the survivor.
    """
    rows = list(Claim.objects.filter(pk__in=list(claim_ids)).order_by().values(*_COLUMNS))
    merged = {
        row[f"{side}_id"]
        for row in rows
        for side in ("subject", "object_entity")
        if row[f"{side}__merged_into_id"] is not None
    }
    survivors = {entity.pk: canonical(entity) for entity in Entity.objects.filter(pk__in=merged)}
    episodes: dict[int, list[int]] = {row["id"]: [] for row in rows}
    evidence = Evidence.objects.filter(claim_id__in=list(episodes)).values_list(
        "claim_id", "episode_id"
    )
    for claim_id, episode_id in evidence:
        episodes[claim_id].append(episode_id)
    return {
        row["id"]: (
            row["status"],
            GraphEdge(
                claim_id=row["id"],
                group_id=row["group_id"],
                subject=_node(row, "subject", survivors),
                object=_node(row, "object_entity", survivors),
                predicate=row["predicate"],
                fact=row["fact_text"][:2000],
                valid_from=epoch_ms(row["valid_from"]),
                valid_to=epoch_ms(row["valid_to"]) if row["valid_to"] is not None else None,
                status=row["status"],
                tier=row["tier"],
                episode_ids=tuple(sorted(set(episodes[row["id"]]))),
            ),
        )
        for row in rows
    }


def project_claims(
    claim_ids: Sequence[int], *, graph: GraphProjection, fresh: bool = False
) -> None:
    """Project these claims as the record says now: upserted edges, or none.

    `fresh`: their group's graph was just cleared (a rebuild), so no edge of theirs
    exists to move or remove.
    """
    ids = sorted(set(claim_ids))
    edges = graph_edges(ids)
    keep = [edges[i][1] for i in ids if i in edges and edges[i][0] in PROJECTED]
    if fresh:
        graph.insert_claims(keep)
        return
    kept = {edge.claim_id for edge in keep}
    graph.remove_claims([i for i in ids if i not in kept])
    graph.upsert_claims(keep)


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
        project_claims(chunk, graph=graph, fresh=True)
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
