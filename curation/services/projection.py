"""Outbox handlers that keep the graph a projection of published claims."""

from __future__ import annotations

from curation.domain.graph import GraphEdge, GraphNode
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, OutboxJob
from curation.ports import GraphProjection


def graph_edge(claim: Claim) -> GraphEdge:
    """A published claim as a graph edge between its entity nodes."""
    subject = GraphNode(
        f"e:{claim.subject_id}", claim.subject.canonical_name, claim.subject.entity_type
    )
    if claim.object_entity is not None:
        obj = GraphNode(
            f"e:{claim.object_entity_id}",
            claim.object_entity.canonical_name,
            claim.object_entity.entity_type,
        )
    else:
        obj = GraphNode(f"v:{claim.pk}", (claim.object_literal or "")[:500], "value")
    return GraphEdge(
        claim_id=claim.pk,
        group_id=claim.group_id,
        subject=subject,
        object=obj,
        predicate=claim.predicate,
        fact=claim.fact_text[:2000],
        valid_from=claim.valid_from.isoformat(),
        episode_ids=tuple(claim.evidence.values_list("episode_id", flat=True)),
    )


def project_claim(job: OutboxJob, *, graph: GraphProjection) -> None:
    """Upsert a published claim; anything else is removed (it may have changed since)."""
    claim = (
        Claim.objects.select_related("subject", "object_entity")
        .filter(pk=job.payload["claim_id"])
        .first()
    )
    if claim is None or claim.status != ClaimStatus.PUBLISHED:
        graph.remove_claim(int(job.payload["claim_id"]))
        return
    graph.upsert_claim(graph_edge(claim))


def retire_claim(job: OutboxJob, *, graph: GraphProjection) -> None:
    graph.remove_claim(int(job.payload["claim_id"]))


def graph_rebuild(*, graph: GraphProjection, batch: int = 500) -> int:
    """Replay every published claim visible to the tenant context into an empty graph."""
    graph.clear()
    count = 0
    published = Claim.objects.filter(status=ClaimStatus.PUBLISHED).select_related(
        "subject", "object_entity"
    )
    for claim in published.order_by("pk").iterator(chunk_size=batch):
        graph.upsert_claim(graph_edge(claim))
        count += 1
    return count
