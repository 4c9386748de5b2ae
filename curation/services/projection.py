"""Outbox handlers that keep the graph a projection of published claims."""

from __future__ import annotations

from curation.domain.graph import GraphEdge, GraphNode
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, OutboxJob
from curation.ports import GraphProjection
from curation.services.entities import canonical


def graph_edge(claim: Claim) -> GraphEdge:
    """A published claim as a graph edge between its entity nodes (after merges).

    Merges only point an entity at its survivor, so the edge follows the pointers: a
    merge re-projects the claims it touches and their edges meet at the survivor.
    """
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
