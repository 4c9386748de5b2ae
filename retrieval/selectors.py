"""Read-side of retrieval: a search's hits with their claims and citations.

One hydration for every entrypoint: the REST API shapes it with
`retrieval.api.serializers.SearchResultSerializer`, the portal renders it as is, and a
later MCP server reads the same objects.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from django.db.models import Prefetch

from curation.models import Claim, Evidence
from retrieval.domain.results import Result

SNIPPET_CHARS = 500


@dataclass(frozen=True)
class Citation:
    """Where a hit's fact was read: source, episode and the evidence span."""

    source: str
    episode: str  # the episode's external id
    url: str
    span: tuple[int, int | None] | None  # [start, end) characters, when known
    snippet: str


@dataclass(frozen=True)
class CitedHit:
    """One ranked hit with its claim, signals, stage-3 score and citations."""

    hit_id: int  # what a feedback vote names
    claim_id: int
    fact: str
    subject: str
    predicate: str
    object_text: str
    score: float
    signals: dict[str, float]
    rerank: float | None  # the cross-encoder's score, when stage 3 read this hit
    status: str
    valid_from: dt.datetime
    valid_to: dt.datetime | None
    tier: int
    source_name: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True)
class CitedResult:
    """A search's cited hits, best first, and how its stages went."""

    query_id: uuid.UUID
    stage3: str
    degraded: tuple[str, ...]
    hits: tuple[CitedHit, ...]
    timings: dict[str, float]  # ms per step

    @property
    def count(self) -> int:
        return len(self.hits)


def search_result_cited(*, result: Result) -> CitedResult:
    """The search's hits with their claims and citations, in the same queries for any k."""
    claims = (
        Claim.objects.select_related("subject", "object_entity", "source")
        .prefetch_related(
            Prefetch("evidence", Evidence.objects.select_related("episode__source").order_by("pk"))
        )
        .in_bulk([hit.claim_id for hit in result.hits])
    )
    hits = tuple(
        CitedHit(
            hit_id=hit.hit_id,
            claim_id=claim.pk,
            fact=claim.fact_text,
            subject=claim.subject.canonical_name,
            predicate=claim.predicate,
            object_text=_object_text(claim),
            score=round(hit.score, 6),
            signals=hit.signals,
            rerank=hit.rerank,
            status=claim.status,
            valid_from=claim.valid_from,
            valid_to=claim.valid_to,
            tier=claim.tier,
            source_name=claim.source.name,
            citations=tuple(_citation(evidence) for evidence in claim.evidence.all()),
        )
        for hit in result.hits
        # A claim deleted since the search logged its hit has nothing left to cite.
        if (claim := claims.get(hit.claim_id)) is not None
    )
    return CitedResult(
        query_id=result.query_id,
        stage3=result.stage3.value,
        degraded=result.degraded,
        hits=hits,
        timings=result.timings,
    )


def _object_text(claim: Claim) -> str:
    if claim.object_entity is not None:
        return claim.object_entity.canonical_name
    return claim.object_literal or ""


def _citation(evidence: Evidence) -> Citation:
    episode = evidence.episode
    return Citation(
        source=episode.source.name,
        episode=episode.external_id,
        url=episode.url,
        span=(evidence.start, evidence.end) if evidence.start is not None else None,
        snippet=evidence.snippet[:SNIPPET_CHARS],
    )
