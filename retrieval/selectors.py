"""Read-side of retrieval: a search's hits with their claims and citations.

One hydration for every entrypoint: the REST API shapes it with
`retrieval.api.serializers.SearchResultSerializer`, the portal renders it as is, and a
later MCP server reads the same objects.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery

from common.reads import read_connection
from curation.models import Claim, Evidence
from retrieval.domain.ranking import DEFAULT_WEIGHTS, SIGNALS, WeightChoice, Weights
from retrieval.domain.results import Hit, Result
from retrieval.domain.understanding import Understanding
from retrieval.models import EvaluationResult, EvaluationRun, WeightActivation, WeightSet
from tenants.domain.access import Principal
from tenants.domain.scopes import Role, ScopeKind
from tenants.models import Scope

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
    subject_id: int  # the entity: GET /api/v1/entities/{id} (merges are followed there)
    object_id: int | None  # None when the object is a literal value
    signals: dict[str, float]
    rerank: float | None  # the cross-encoder's score, when stage 3 read this hit
    status: str
    valid_from: dt.datetime
    valid_to: dt.datetime | None
    tier: int
    source_name: str
    citations: tuple[Citation, ...]
    weight_version: int = 0  # the weight set that blended it (0: the built-in default)
    group_id: str = ""
    # The same fact published in other scopes the caller reads (same subject, predicate,
    # object and validity): merged into this hit, their citations added to its own.
    also_claim_ids: tuple[int, ...] = ()


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
    understood: Understanding = field(default_factory=Understanding)

    @property
    def count(self) -> int:
        return len(self.hits)


# A hit's claim and its citations in one statement (under the caller's RLS, as any read):
# only the columns a cited hit shows, the evidence aggregated per claim in its order.
_CITED_SQL = """
    SELECT c.id, c.group_id, c.fact_text, c.predicate, c.subject_id, c.object_entity_id,
           c.object_literal, c.status, c.valid_from, c.valid_to, c.tier,
           subject.canonical_name, object.canonical_name, source.name,
           coalesce((
               SELECT json_agg(json_build_array(
                          es.name, ep.external_id, ep.url, e.start, e."end",
                          left(e.snippet, %s)
                      ) ORDER BY e.id)
               FROM curation_evidence e
               JOIN curation_episode ep ON ep.id = e.episode_id
               JOIN curation_source es ON es.id = ep.source_id
               WHERE e.claim_id = c.id
           ), '[]')
    FROM curation_claim c
    JOIN curation_entity subject ON subject.id = c.subject_id
    LEFT JOIN curation_entity object ON object.id = c.object_entity_id
    JOIN curation_source source ON source.id = c.source_id
    WHERE c.id = ANY(%s)
"""


def search_result_cited(*, result: Result) -> CitedResult:
    """The search's hits with their claims and citations, in one statement for any k.

    Raw SQL rather than the ORM: every search pays for this, and model instances of the
    claims, their evidence, episodes and sources cost more than the read itself."""
    with read_connection().cursor() as cursor:
        cursor.execute(_CITED_SQL, [SNIPPET_CHARS, [hit.claim_id for hit in result.hits]])
        claims = {row[0]: row for row in cursor.fetchall()}
    hits = tuple(
        _cited_hit(hit, claims[hit.claim_id])
        for hit in result.hits
        # A claim deleted since the search logged its hit has nothing left to cite.
        if hit.claim_id in claims
    )
    return cited_result(result, same_facts_merged(hits))


def _cited_hit(hit: Hit, row: tuple[Any, ...]) -> CitedHit:
    (claim_id, group_id, fact, predicate, subject_id, object_id, literal, status,
     valid_from, valid_to, tier, subject, object_name, source, evidence) = row  # fmt: skip
    return CitedHit(
        hit_id=hit.hit_id,
        claim_id=claim_id,
        fact=fact,
        subject=subject,
        predicate=predicate,
        object_text=object_name if object_id is not None else literal or "",
        score=round(hit.score, 6),
        subject_id=subject_id,
        object_id=object_id,
        signals=hit.signals,
        rerank=hit.rerank,
        status=status,
        valid_from=valid_from,
        valid_to=valid_to,
        tier=tier,
        source_name=source,
        citations=tuple(
            Citation(
                source=name,
                episode=episode,
                url=url,
                span=(start, end) if start is not None else None,
                snippet=snippet,
            )
            for name, episode, url, start, end, snippet in evidence
        ),
        weight_version=hit.weight_version,
        group_id=group_id,
    )


def _fact_key(hit: CitedHit) -> tuple[object, ...]:
    return (
        hit.subject.casefold(), hit.predicate, hit.object_text.casefold(),
        hit.valid_from, hit.valid_to, hit.status,
    )  # fmt: skip


def same_facts_merged(hits: tuple[CitedHit, ...]) -> tuple[CitedHit, ...]:
    """Each fact once: a hit whose fact (subject, predicate, object, validity and status)
    an earlier hit from another scope states is folded into that one, which keeps its
    rank and cites both. Within one scope two claims stay two (identity decides there)."""
    kept: list[CitedHit] = []
    where: dict[tuple[object, ...], int] = {}
    for hit in hits:
        at = where.get(_fact_key(hit))
        if at is None or kept[at].group_id == hit.group_id:
            where.setdefault(_fact_key(hit), len(kept))
            kept.append(hit)
            continue
        first = kept[at]
        known = set(first.citations)
        kept[at] = replace(
            first,
            citations=first.citations + tuple(c for c in hit.citations if c not in known),
            also_claim_ids=(*first.also_claim_ids, hit.claim_id),
        )
    return tuple(kept)


def cited_result(result: Result, hits: tuple[CitedHit, ...]) -> CitedResult:
    """A search's result with its hits cited (from the live claims, or a snapshot's cards)."""
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
        understood=result.understood,
    )


def object_text(claim: Claim) -> str:
    """The object as a hit shows it: the entity's canonical name, or the literal value."""
    if claim.object_entity is not None:
        return claim.object_entity.canonical_name
    return claim.object_literal or ""


def citation_of(evidence: Evidence) -> Citation:
    """One piece of evidence as a hit cites it (its snippet cut to SNIPPET_CHARS)."""
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
        "group_id", "pk", "version", "understood", *SIGNALS
    )
    return {
        group_id: WeightChoice(
            weights=Weights.from_mapping(dict(zip(SIGNALS, values, strict=True))),
            version=version,
            set_id=pk,
            understood=understood,
        )
        for group_id, pk, version, understood, *values in rows
    }


# --- The Quality page: golden-set scores, weights over time, weight sets -------------------


def workspaces_reviewable(principal: Principal) -> list[Scope]:
    """Workspaces whose search quality the principal may see (reviewer or above), by name."""
    return list(
        Scope.objects.filter(
            group_id__in=principal.groups_at_least(Role.REVIEWER), kind=ScopeKind.WORKSPACE
        ).order_by("name", "pk")
    )


def _evaluations_scored(group_id: str) -> QuerySet[EvaluationRun]:
    """Finished runs that scored something (a run of an empty golden set has no scores)."""
    return EvaluationRun.objects.filter(group_id=group_id, finished_at__isnull=False).exclude(
        status=EvaluationRun.Status.EMPTY
    )


@dataclass(frozen=True)
class EvaluationPoint:
    """One scored golden-set run as the quality chart plots it."""

    run_id: int
    at: dt.datetime  # when the run started
    failed: bool  # a mean fell below its floor
    weight_version: int
    hit_at_10: float
    mrr: float
    ndcg_at_10: float


def evaluation_points(*, group_id: str, since: dt.datetime | None) -> list[EvaluationPoint]:
    """The workspace's scored runs started since `since` (None: all), oldest first."""
    runs = _evaluations_scored(group_id)
    if since is not None:
        runs = runs.filter(started_at__gte=since)
    rows = runs.order_by("started_at", "pk").values_list(
        "pk", "started_at", "status", "weight_version", "hit_at_10", "mrr", "ndcg_at_10"
    )
    return [
        EvaluationPoint(pk, at, status == EvaluationRun.Status.FAILED, version, hit, mrr, ndcg)
        for pk, at, status, version, hit, mrr, ndcg in rows
    ]


@dataclass(frozen=True)
class WeightsStep:
    """The weights a workspace ranked with from `at` on, until the next step."""

    at: dt.datetime | None  # None: from before anything was recorded
    version: int  # 0: the built-in default
    weights: dict[str, float]
    actor_label: str = ""
    reason: str = ""


def _step(activation: WeightActivation) -> WeightsStep:
    chosen = activation.weight_set
    weights = (
        {name: getattr(chosen, name) for name in SIGNALS} if chosen else DEFAULT_WEIGHTS.as_dict()
    )
    return WeightsStep(
        at=activation.created_at,
        version=chosen.version if chosen else 0,
        weights=weights,
        actor_label=activation.actor_label,
        reason=activation.reason,
    )


def weights_timeline(*, group_id: str, since: dt.datetime | None) -> list[WeightsStep]:
    """What ranked at `since` (None: at first, the default), then each activation after it."""
    activations = (
        WeightActivation.objects.filter(group_id=group_id)
        .select_related("weight_set")
        .order_by("created_at", "pk")
    )
    before = None
    if since is not None:
        before = activations.filter(created_at__lt=since).last()
        activations = activations.filter(created_at__gte=since)
    first = (
        _step(before)
        if before is not None
        else WeightsStep(at=None, version=0, weights=DEFAULT_WEIGHTS.as_dict())
    )
    return [first, *(_step(activation) for activation in activations)]


def evaluation_worst_queries(
    *, group_id: str, limit: int = 10
) -> tuple[EvaluationRun | None, list[EvaluationResult]]:
    """The latest scored run and its `limit` worst queries, lowest nDCG@10 first."""
    run = _evaluations_scored(group_id).order_by("-started_at", "-pk").first()
    if run is None:
        return None, []
    results = run.results.order_by("ndcg_at_10", "reciprocal_rank", "query_text", "pk")
    return run, list(results[:limit])


@dataclass(frozen=True)
class WeightSetRow:
    """One row of a workspace's weight sets, the built-in default (version 0) included."""

    weight_set_id: int | None  # None: the built-in default
    version: int
    origin: str
    helpful: int
    unhelpful: int
    active: bool
    weights: dict[str, float]
    activated_at: dt.datetime | None
    latest_ndcg_at_10: float | None  # its newest scored golden-set run, if any


def weight_sets_evaluated(*, group_id: str) -> list[WeightSetRow]:
    """The workspace's weight sets, newest first, then the default, each with its latest
    golden-set nDCG@10 (the run `weight_set_activate` compares against)."""
    latest = _evaluations_scored(group_id).order_by("-finished_at", "-pk").values("ndcg_at_10")
    sets = (
        WeightSet.objects.filter(group_id=group_id)
        .annotate(latest_ndcg=Subquery(latest.filter(weight_set=OuterRef("pk"))[:1]))
        .order_by("-version")
    )
    rows = [
        WeightSetRow(
            weight_set_id=weight_set.pk,
            version=weight_set.version,
            origin=weight_set.get_origin_display(),
            helpful=weight_set.helpful,
            unhelpful=weight_set.unhelpful,
            active=weight_set.active,
            weights={name: getattr(weight_set, name) for name in SIGNALS},
            activated_at=weight_set.activated_at,
            latest_ndcg_at_10=weight_set.latest_ndcg,
        )
        for weight_set in sets
    ]
    default = latest.filter(weight_set__isnull=True).first()
    rows.append(
        WeightSetRow(
            weight_set_id=None,
            version=0,
            origin="built-in default",
            helpful=0,
            unhelpful=0,
            active=not any(row.active for row in rows),
            weights=DEFAULT_WEIGHTS.as_dict(),
            activated_at=None,
            latest_ndcg_at_10=default["ndcg_at_10"] if default else None,
        )
    )
    return rows


def groups_with_votes(since: dt.datetime) -> list[str]:
    """Workspaces with votes on hits logged since then (the samples calibration reads),
    across every group through the system finder `vera_groups_with_votes`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT group_id FROM vera_groups_with_votes(%s)", [since])
        return [group_id for (group_id,) in cursor.fetchall()]


def groups_with_packs_before(before: dt.datetime) -> dict[str, int]:
    """Workspaces holding context packs served before then, with how many, across every
    group through the system finder `vera_groups_with_packs_before`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT group_id, packs FROM vera_groups_with_packs_before(%s)", [before])
        return {group_id: int(packs) for group_id, packs in cursor.fetchall()}


def groups_with_golden() -> list[str]:
    """Workspaces with enabled golden queries, through the system finder
    `vera_groups_with_golden`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT group_id FROM vera_groups_with_golden()")
        return [group_id for (group_id,) in cursor.fetchall()]
