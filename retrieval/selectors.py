"""Read-side of retrieval: a search's hits with their claims and citations.

One hydration for every entrypoint: the REST API shapes it with
`retrieval.api.serializers.SearchResultSerializer`, the portal renders it as is, and a
later MCP server reads the same objects.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Prefetch

from curation.models import Claim, Evidence
from retrieval.domain.ranking import SIGNALS, WeightChoice, Weights
from retrieval.domain.results import Result
from retrieval.models import WeightSet

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

    hit_id: int | None  # what a feedback vote names (None: an unrecorded evaluation search)
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
    weight_version: int = 0  # the weight set that blended it (0: the built-in default)


@dataclass(frozen=True)
class WeightsUsed:
    """The weight set one workspace's hits were blended with."""

    group_id: str
    version: int  # 0: the built-in default
    weight_set_id: int | None


@dataclass(frozen=True)
class CitedResult:
    """A search's cited hits, best first, and how its stages went."""

    query_id: uuid.UUID
    stage3: str
    degraded: tuple[str, ...]
    hits: tuple[CitedHit, ...]
    timings: dict[str, float]  # ms per step
    weights: tuple[WeightsUsed, ...] = ()

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
            weight_version=hit.weight_version,
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
        weights=tuple(
            WeightsUsed(group_id=group, version=version, weight_set_id=set_id)
            for group, (version, set_id) in result.weights.items()
        ),
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


def weights_active(group_ids: Iterable[str]) -> dict[str, WeightChoice]:
    """The active weight set of each visible workspace that has one (one indexed read).

    Read inside the caller's transaction, under its RLS setting, so what blends a search
    is whatever is active when it runs, in every process, with no cache to invalidate.
    A workspace absent from the answer ranks with the built-in default (version 0).
    """
    rows = WeightSet.objects.filter(active=True, group_id__in=set(group_ids)).values_list(
        "group_id", "pk", "version", *SIGNALS
    )
    return {
        group_id: WeightChoice(
            weights=Weights.from_mapping(dict(zip(SIGNALS, values, strict=True))),
            version=version,
            set_id=pk,
        )
        for group_id, pk, version, *values in rows
    }
