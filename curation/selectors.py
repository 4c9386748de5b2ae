"""Read-side queries of curation."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import (
    Count,
    Max,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)

from curation.domain.backpressure import OUTBOX_LANES, LaneLoad
from curation.domain.errors import ObjectStoreError
from curation.domain.highlight import Piece, card_order, highlight
from curation.domain.names import DEFAULT_FUNCTIONAL_PREDICATES
from curation.domain.ontology import DEFAULT_ONTOLOGY, Ontology, PredicateSense
from curation.domain.ontology_records import ontology_of, sense_of
from curation.domain.outbox import Consumer, Lane, Priority
from curation.domain.params import ClaimFilters, RelatedQuery
from curation.domain.picture import Edge, Node, Picture, layout
from curation.domain.tiers import ClaimStatus
from curation.domain.validity import EVER_VALID, VALID_NOW
from curation.models import (
    Claim,
    Entity,
    EntityAlias,
    Episode,
    Evidence,
    MergeCandidate,
    OntologyRevision,
    Source,
)
from curation.ports import GraphProjection, ObjectStore
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.models import Scope

logger = logging.getLogger(__name__)


def claim_history(*, claim_id: int) -> list[Claim]:
    """All revisions of the claim's subject and predicate, oldest first."""
    claim = Claim.objects.filter(pk=claim_id).first()
    if claim is None:
        return []
    return list(
        Claim.objects.filter(
            subject_id=claim.subject_id, predicate=claim.predicate, status__in=sorted(EVER_VALID)
        )
        .union(Claim.objects.filter(pk=claim_id))
        .order_by("valid_from", "pk")
    )


def _valid_at(as_of: dt.datetime | None) -> Q:
    """`curation.domain.validity.valid_at` as a filter on claims (None: now)."""
    if as_of is None:
        return Q(status=VALID_NOW)
    return Q(status__in=sorted(EVER_VALID), valid_from__lte=as_of) & (
        Q(valid_to__isnull=True) | Q(valid_to__gt=as_of)
    )


def claims_valid(*, as_of: dt.datetime | None = None) -> QuerySet[Claim]:
    """Published claims now, or the revisions that were valid at `as_of` (retracted too)."""
    return Claim.objects.filter(_valid_at(as_of))


def claims_filtered(*, filters: ClaimFilters) -> QuerySet[Claim]:
    """The claims list: one status, else what was valid at `as_of`; then the other filters."""
    if filters.status is not None:
        queryset = Claim.objects.filter(status=filters.status)
    else:
        queryset = claims_valid(as_of=filters.as_of)
    if filters.predicate is not None:
        queryset = queryset.filter(predicate=filters.predicate)
    if filters.subject is not None:
        queryset = queryset.filter(subject__canonical_name__iexact=filters.subject)
    if filters.source is not None:
        queryset = queryset.filter(source_id=filters.source)
    if filters.tier is not None:
        queryset = queryset.filter(tier=filters.tier)
    return (
        queryset.select_related("subject", "object_entity")
        .prefetch_related("evidence__episode__source")
        .order_by("-valid_from", "-pk")
    )


SORTS = {
    "newest": ("-recorded_at", "-pk"),
    "oldest": ("recorded_at", "pk"),
    "confidence": ("-confidence", "pk"),
    "low-confidence": ("confidence", "pk"),
}


def reviewable_groups(principal: Principal) -> list[str]:
    """Groups where the principal may decide (reviewer or above)."""
    return principal.groups_at_least(Role.REVIEWER)


# A re-check asks about a value that stands (published, or superseded since); a claim
# retracted meanwhile has nothing left to ask.
RECHECKABLE = (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)


def _rechecks(groups: list[str]) -> QuerySet[Claim]:
    """Claims of these groups that ask a reviewer to look again (`Claim.recheck`)."""
    return Claim.objects.filter(group_id__in=groups, status__in=RECHECKABLE).exclude(recheck="")


def _waiting(*, principal: Principal, status: str, filters: dict[str, str]) -> QuerySet[Claim]:
    """Claims waiting in one queue that the principal may decide, filtered."""
    queryset = Claim.objects.filter(group_id__in=reviewable_groups(principal), status=status)
    return _filtered(queryset, filters)


def _filtered(queryset: QuerySet[Claim], filters: dict[str, str]) -> QuerySet[Claim]:
    """A queue's claims through its filters (source, predicate, subject, tier)."""
    if filters.get("source"):
        queryset = queryset.filter(source_id=filters["source"])
    if filters.get("predicate"):
        queryset = queryset.filter(predicate=filters["predicate"])
    if filters.get("entity"):
        queryset = queryset.filter(subject__canonical_name__icontains=filters["entity"])
    if filters.get("tier"):
        queryset = queryset.filter(tier=filters["tier"])
    return queryset


def review_queue(
    *, principal: Principal, status: str, filters: dict[str, str], sort: str = "oldest"
) -> QuerySet[Claim]:
    """Claims waiting in one queue, with what a row shows loaded up front (bounded queries)."""
    return _rows(_waiting(principal=principal, status=status, filters=filters), sort)


def recheck_queue(
    *, principal: Principal, filters: dict[str, str], sort: str = "oldest"
) -> QuerySet[Claim]:
    """Reviewed claims that reprocessing no longer found in their document, each with why
    (`recheck`): a reviewer keeps or retracts each one."""
    return _rows(_filtered(_rechecks(reviewable_groups(principal)), filters), sort)


def _rows(claims: QuerySet[Claim], sort: str) -> QuerySet[Claim]:
    """A queue's claims with what a row shows loaded up front (bounded queries), sorted."""
    return (
        claims.select_related("subject", "object_entity", "source")
        .prefetch_related(
            Prefetch("evidence", queryset=Evidence.objects.select_related("episode").order_by("pk"))
        )
        .order_by(*SORTS.get(sort, SORTS["oldest"]))
    )


# --- The claims queue by document: one card per episode ------------------------------


def _document() -> Subquery:
    """A claim's document: the episode of its first evidence (a claim another document
    re-confirmed later still belongs to the one it was extracted from)."""
    first = Evidence.objects.filter(claim=OuterRef("pk")).order_by("pk").values("episode_id")
    return Subquery(first[:1])


def review_document_ids(*, principal: Principal, filters: dict[str, str], sort: str = "oldest"
                        ) -> QuerySet[Claim, int]:  # fmt: skip
    """The documents with claims waiting for review, in the order their oldest (or newest)
    waiting claim arrived; a claim without evidence belongs to no document (rows only)."""
    waiting = _waiting(principal=principal, status=ClaimStatus.PENDING_REVIEW, filters=filters)
    newest = sort == "newest"
    return (
        waiting.annotate(document=_document())
        .exclude(document=None)
        .order_by()
        .values("document")
        .annotate(arrived=Max("recorded_at") if newest else Min("recorded_at"))
        .order_by("-arrived" if newest else "arrived", "document")
        .values_list("document", flat=True)
    )


@dataclass(frozen=True)
class DocumentCard:
    """A document of the claims queue: its waiting claims (relations, then passages) and
    its text with every waiting claim's evidence span marked."""

    episode: Episode
    claims: list[Claim]
    pieces: list[Piece]  # empty when the text cannot be read (erased, never stored, store down)


def _text(store: ObjectStore, episode: Episode) -> str:
    if not episode.object_key:
        return ""
    try:
        return store.get(episode.object_key).decode("utf-8", errors="replace")
    except KeyError:  # erased: the card still lists the claims
        return ""
    except ObjectStoreError as error:  # the store is down: review goes on without the text
        logger.warning("episode %s text unavailable: %s", episode.pk, error)
        return ""


def _card(episode: Episode, claims: list[Claim], store: ObjectStore) -> DocumentCard:
    spans = {
        claim.pk: (evidence.start, evidence.end)
        for claim in claims
        for evidence in claim.evidence.all()
        if evidence.episode_id == episode.pk and evidence.start is not None
    }
    claims.sort(key=lambda c: card_order(c.predicate, spans.get(c.pk, (None, None))[0], c.pk))
    text = _text(store, episode)
    marked = [(start, end) for start, end in spans.values() if start is not None and end]
    return DocumentCard(episode, claims, highlight(text, marked) if text else [])


def review_documents(
    *, principal: Principal, episode_ids: list[int], filters: dict[str, str], store: ObjectStore
) -> list[DocumentCard]:
    """The cards of these documents, in their order, in a fixed number of queries (the
    claims, their evidence, the values they would supersede, the episodes and sources);
    each document's text is read from the object store."""
    waiting = _waiting(principal=principal, status=ClaimStatus.PENDING_REVIEW, filters=filters)
    claims = (
        waiting.annotate(document=_document())
        .filter(document__in=episode_ids)
        .select_related("subject", "object_entity", "source")
        .prefetch_related(Prefetch("evidence", queryset=Evidence.objects.order_by("pk")))
    )
    by_document: dict[int, list[Claim]] = defaultdict(list)
    for claim in attach_current_values(list(claims)):
        # `document` is the annotation above, not a field of Claim.
        by_document[claim.document].append(claim)  # type: ignore[attr-defined]
    episodes = Episode.objects.select_related("source").in_bulk(episode_ids)
    return [
        _card(episodes[pk], by_document[pk], store)
        for pk in episode_ids
        if pk in episodes and by_document[pk]
    ]


def functional_predicates() -> frozenset[str]:
    """Predicates with one value at a time: a new value supersedes the published one."""
    configured = getattr(settings, "VERA_ONTOLOGY__FUNCTIONAL_PREDICATES", None)
    return frozenset(configured) if configured else DEFAULT_FUNCTIONAL_PREDICATES


def attach_current_values(claims: list[Claim]) -> list[Claim]:
    """Set `current_fact` on each claim: the published value of its functional predicate
    that differs, if any, and `current_stays`: approving it leaves that value current (it
    ended, or began before that value: it joins the history instead of superseding).

    Only a functional predicate's different value supersedes: a multi-valued predicate
    keeps both, and the same value is a re-confirmation. The queue must not show a
    conflict that publishing would not act on. One query for the page (a per-row
    subquery would run for the whole queue before the page is cut).
    """
    functional = functional_predicates()
    keys = {
        (claim.subject_id, claim.predicate) for claim in claims if claim.predicate in functional
    }
    current: dict[tuple[int, str], tuple[str, str, dt.datetime]] = {}
    if keys:
        condition = Q()
        for subject_id, predicate in keys:
            condition |= Q(subject_id=subject_id, predicate=predicate)
        rows = (
            Claim.objects.filter(condition, status=ClaimStatus.PUBLISHED)
            .order_by("valid_from")
            .values_list("subject_id", "predicate", "object_key", "fact_text", "valid_from")
        )
        current = {(subject, pred): (key, fact, since) for subject, pred, key, fact, since in rows}
    for claim in claims:
        now = current.get((claim.subject_id, claim.predicate))
        # A claim that ended (a history version's) or began before the current value goes
        # into the history when published: it supersedes nothing, the current value stays.
        replaces = (
            now is not None
            and now[0] != claim.object_key
            and claim.valid_to is None
            and claim.valid_from >= now[2]
        )
        # Attributes for the queue template only, not fields of Claim: the published value
        # that differs, and whether it stays current when this one is approved.
        differs = now is not None and now[0] != claim.object_key
        claim.current_fact = now[1] if differs and now else None  # type: ignore[attr-defined]
        claim.current_stays = differs and not replaces  # type: ignore[attr-defined]
    return claims


def queue_counts(principal: Principal) -> dict[str, int]:
    """How many items wait in each queue the principal can work."""
    groups = reviewable_groups(principal)
    claims = Claim.objects.filter(group_id__in=groups).aggregate(
        claims=Count("pk", filter=Q(status=ClaimStatus.PENDING_REVIEW)),
        proposals=Count("pk", filter=Q(status=ClaimStatus.PROPOSED)),
        rechecks=Count("pk", filter=Q(status__in=RECHECKABLE) & ~Q(recheck="")),
    )
    merges = MergeCandidate.objects.filter(
        group_id__in=groups, status=MergeCandidate.Status.OPEN
    ).count()
    return {"claims": claims["claims"], "proposals": claims["proposals"],
            "rechecks": claims["rechecks"], "merges": merges}  # fmt: skip


def merge_queue(*, principal: Principal) -> QuerySet[MergeCandidate]:
    return (
        MergeCandidate.objects.filter(
            group_id__in=reviewable_groups(principal), status=MergeCandidate.Status.OPEN
        )
        .select_related("entity", "candidate")
        .order_by("-score", "pk")
    )


def queue_filter_options(principal: Principal, *, queue: str = "claims") -> dict[str, list[object]]:
    """Sources and predicates present in the principal's queues (the re-checks' own for
    that queue), for the filter form."""
    groups = reviewable_groups(principal)
    waiting = (
        _rechecks(groups)
        if queue == "rechecks"
        else Claim.objects.filter(
            group_id__in=groups, status__in=[ClaimStatus.PENDING_REVIEW, ClaimStatus.PROPOSED]
        )
    )
    return {
        "sources": list(
            Source.objects.filter(group_id__in=groups).order_by("name").values_list("pk", "name")
        ),
        "predicates": list(waiting.order_by().values_list("predicate", flat=True).distinct()),
    }


def claim_related(claim: Claim, *, limit: int = 20) -> QuerySet[Claim]:
    """Other published claims about the same subject."""
    return (
        Claim.objects.filter(subject_id=claim.subject_id, status=ClaimStatus.PUBLISHED)
        .exclude(pk=claim.pk)
        .select_related("subject", "object_entity")
        .order_by("predicate")[:limit]
    )


# --- Entities: their page and their neighbourhood in the graph ------------------------


def entity_survivor(entity: Entity) -> Entity:
    """Follow merges to the surviving entity."""
    while entity.merged_into_id is not None:
        entity = Entity.objects.get(pk=entity.merged_into_id)
    return entity


def _merged_into(survivor: Entity) -> list[Entity]:
    """Every entity merged (directly or not) into the survivor, oldest merge first."""
    found: list[Entity] = []
    frontier = [survivor.pk]
    while frontier:
        rows = list(Entity.objects.filter(merged_into_id__in=frontier).order_by("pk"))
        found += rows
        frontier = [row.pk for row in rows]
    return found


@dataclass(frozen=True)
class EntityView:
    """An entity as its page shows it: names, facts about it now and before, merges."""

    entity: Entity  # the survivor of any merges
    aliases: list[str]
    current: list[Claim]
    past: list[Claim]  # superseded or retracted, newest first
    merged: list[Entity]  # the entities merged into it


def entity_view(*, entity_id: int) -> EntityView | None:
    """The entity (RLS: only a visible one), or None."""
    found = Entity.objects.filter(pk=entity_id).first()
    if found is None:
        return None
    survivor = entity_survivor(found)
    merged = _merged_into(survivor)
    members = [survivor.pk, *(entity.pk for entity in merged)]
    about = (
        Claim.objects.filter(Q(subject_id__in=members) | Q(object_entity_id__in=members))
        .select_related("subject", "object_entity")
        .prefetch_related("evidence__episode__source")
    )
    aliases = EntityAlias.objects.filter(entity_id__in=members).order_by("alias")
    return EntityView(
        entity=survivor,
        aliases=sorted({alias.alias for alias in aliases} - {survivor.canonical_name}),
        current=list(about.filter(status=VALID_NOW).order_by("predicate", "pk")),
        past=list(
            about.filter(status__in=[ClaimStatus.SUPERSEDED, ClaimStatus.RETRACTED]).order_by(
                "-valid_from", "-pk"
            )
        ),
        merged=merged,
    )


@dataclass(frozen=True)
class RelatedPath[C]:
    """A neighbour reached through the graph, with the claims on the path, re-read from
    Postgres under RLS (so the graph can never show what RLS hides): as models, or as
    whatever the caller's reader made of the rows."""

    key: str  # the graph node: "e:<entity id>" or "v:<claim id>" (a literal value)
    name: str
    kind: str
    hops: int
    claim_ids: list[int]  # in path order, from the entity outwards
    claims: list[C]

    @property
    def entity_id(self) -> int | None:
        return int(self.key[2:]) if self.key.startswith("e:") else None


@dataclass(frozen=True)
class Neighbourhood[C]:
    """`entity_related`'s paths, with every claim on them once, by id (for the API)."""

    entity: Entity
    neighbours: list[RelatedPath[C]]
    claims: list[C]

    @classmethod
    def of(cls, entity: Entity, paths: list[RelatedPath[C]]) -> Neighbourhood[C]:
        claims = {
            pk: claim
            for path in paths
            for pk, claim in zip(path.claim_ids, path.claims, strict=True)
        }
        return cls(entity, paths, [claims[pk] for pk in sorted(claims)])


def entity_visible(*, entity_id: int) -> Entity | None:
    """The entity's survivor, if the entity is visible (RLS); None otherwise."""
    found = Entity.objects.filter(pk=entity_id).first()
    return None if found is None else entity_survivor(found)


def claim_models(claims: QuerySet[Claim]) -> dict[int, Claim]:
    """The claims as models, with what a page or a serializer shows of them."""
    return {
        claim.pk: claim
        for claim in claims.select_related("subject", "object_entity").prefetch_related(
            "evidence__episode__source"
        )
    }


def entity_related[C](
    *,
    entity: Entity,
    graph: GraphProjection,
    principal: Principal,
    query: RelatedQuery,
    read: Callable[[QuerySet[Claim]], Mapping[int, C]],
) -> list[RelatedPath[C]]:
    """The entity's neighbourhood from the graph, each path's claims checked in Postgres.

    The graph is asked only for the principal's groups; then every claim id on a path is
    read back through RLS and the valid-time filter (by `read`, from the queryset of the
    visible ones), and a path with any claim that does not come back (another tenant's,
    retracted or superseded since the graph was written) is dropped.
    """
    found = graph.neighbours(
        f"e:{entity.pk}", group_ids=sorted(principal.group_ids), hops=query.hops,
        as_of=query.as_of, predicates=query.predicates or None, limit=query.limit,
    )  # fmt: skip
    ids = {claim_id for path in found for claim_id in path.claim_ids}
    visible = read(claims_valid(as_of=query.as_of).filter(pk__in=ids))
    paths = []
    for path in found:
        if all(claim_id in visible for claim_id in path.claim_ids):
            node, ids_ = path.node, list(path.claim_ids)
            claims = [visible[claim_id] for claim_id in ids_]
            paths.append(RelatedPath(node.key, node.name, node.kind, path.hops, ids_, claims))
    return paths


def _end(claim: Claim, side: str) -> str:
    """A claim's end as a graph node key (entities after merges; a literal is its own)."""
    if side == "subject":
        return f"e:{entity_survivor(claim.subject).pk}"
    if claim.object_entity is None:
        return f"v:{claim.pk}"
    return f"e:{entity_survivor(claim.object_entity).pk}"


def entity_picture(view: EntityView, paths: list[RelatedPath[Claim]]) -> Picture:
    """The neighbourhood as a radial picture: the entity in the middle, a ring per hop."""
    centre = f"e:{view.entity.pk}"
    nodes: dict[str, Node] = {
        centre: Node(centre, view.entity.canonical_name, view.entity.entity_type, 0, None)
    }
    edges: dict[int, Edge] = {}
    for path in sorted(paths, key=lambda p: p.hops):
        last = path.claims[-1]
        ends = {_end(last, "subject"), _end(last, "object")}
        parent = next(iter(ends - {path.key}), centre)
        if path.key not in nodes:
            nodes[path.key] = Node(path.key, path.name, path.kind, path.hops, parent)
        for claim in path.claims:
            edges[claim.pk] = Edge(
                claim_id=claim.pk, source=_end(claim, "subject"), target=_end(claim, "object"),
                predicate=claim.predicate, current=claim.status == VALID_NOW,
            )  # fmt: skip
    return layout(list(nodes.values()), list(edges.values()))


def outbox_lane_load(*, now: dt.datetime) -> dict[Lane, LaneLoad]:
    """Each outbox lane's pending due jobs of every group and the longest wait among them.

    One query over the pending jobs' partial index through the system finder
    `vera_outbox_lane_load` (counts only): it needs no tenant context.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_outbox_lane_load(%s, %s)", [now, Priority.INTERACTIVE])
        rows = cursor.fetchall()
    loads = {lane: LaneLoad(lane) for lane in OUTBOX_LANES}
    for urgent, backlog, due_since in rows:
        lane = Lane.INTERACTIVE if urgent else Lane.PROJECTION
        wait = (now - due_since).total_seconds()
        loads[lane] = LaneLoad(lane, backlog=backlog, oldest_age_s=wait)
    return loads


def outbox_due_groups(
    *, consumer: Consumer, max_priority: Priority, now: dt.datetime, limit: int
) -> list[str]:
    """The groups owning the `limit` jobs a claim of the consumer would take now (due,
    not paused, most urgent first), across every group: a tenant context of just these
    groups then claims exactly those jobs (system finder `vera_outbox_due_groups`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM vera_outbox_due_groups(%s, %s, %s, %s)",
            [consumer.value, int(max_priority), now, limit],
        )
        return sorted(group_id for (group_id,) in cursor.fetchall())


def sources_due(*, now: dt.datetime) -> list[tuple[int, str]]:
    """(id, group) of every enabled source whose schedule has come round, across every
    group (system finder `vera_sources_due`), except in archived scopes (read-only)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_sources_due(%s)", [now])
        due = [(source_id, group_id) for source_id, group_id in cursor.fetchall()]
    archived = set(
        Scope.objects.filter(
            group_id__in={group for _, group in due}, archived_at__isnull=False
        ).values_list("group_id", flat=True)
    )
    return [(source_id, group) for source_id, group in due if group not in archived]


def reprocessings_stale(*, before: dt.datetime) -> list[tuple[int, str]]:
    """(id, group) of every running reprocessing run last advanced before then, across
    every group (system finder `vera_reprocessings_stale`)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, group_id FROM vera_reprocessings_stale(%s)", [before])
        return [(run_id, group_id) for run_id, group_id in cursor.fetchall()]


def outbox_dead_letters() -> dict[Consumer, int]:
    """Each consumer's dead jobs (out of attempts) across every group: one count over
    their partial index through the system finder `vera_outbox_dead_letters`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM vera_outbox_dead_letters()")
        counts = dict(cursor.fetchall())
    return {consumer: counts.get(consumer.value, 0) for consumer in Consumer}


# --- the ontology ----------------------------------------------------------------------

_SENSE_COLUMNS = ("name", "label", "description", "words", "questions", "object_type",
                  "functional")  # fmt: skip


def ontology_for(group_id: str) -> Ontology:
    """The workspace's ontology: the defaults with its own senses in their place, at its
    version (0 when never edited). Read under the caller's RLS context: a workspace the
    caller cannot see reads as never edited."""
    return ontologies_for([group_id])[group_id]


def ontologies_for(group_ids: Iterable[str]) -> dict[str, Ontology]:
    """`ontology_for` of each group, in one query (a search spans several workspaces):
    each edited group's latest version, with its own senses gathered beside it."""
    wanted = sorted(set(group_ids))
    if not wanted:
        return {}
    # Raw SQL: every search reads it, and composing the ORM's subquery cost more than
    # running it. Row-level security applies to both tables as to any query.
    sense = ", ".join(f"'{column}', p.{column}" for column in _SENSE_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (r.group_id) r.group_id, r.version,
                (SELECT jsonb_agg(jsonb_build_object({sense})) FROM curation_predicate p
                 WHERE p.group_id = r.group_id)
            FROM curation_ontologyrevision r WHERE r.group_id = ANY(%s)
            ORDER BY r.group_id, r.version DESC
            """,  # noqa: S608 - fixed column names; the groups are a parameter
            [wanted],
        )
        latest = [
            (group_id, version, json.loads(own) if isinstance(own, str) else own)
            for group_id, version, own in cursor.fetchall()
        ]
    edited = {
        group_id: DEFAULT_ONTOLOGY.overridden(_senses(group_id, own or []), version=version)
        for group_id, version, own in latest
    }
    return {group_id: edited.get(group_id, DEFAULT_ONTOLOGY) for group_id in wanted}


def _senses(group_id: str, rows: list[dict[str, Any]]) -> list[PredicateSense]:
    """The rows' senses; one the rules no longer accept is left out (its default stands)
    and logged, rather than failing every search of the workspace."""
    senses = []
    for row in rows:
        try:
            senses.append(sense_of(row))
        except ValueError as error:
            logger.warning("ontology of %s: %s left out: %s", group_id, row.get("name"), error)
    return senses


def ontology_at(*, group_id: str, version: int) -> Ontology | None:
    """The workspace's ontology exactly as its `version`-th edit left it (what a snapshot
    pinned); version 0 is the defaults. None when the caller cannot see that version."""
    if version == 0:
        return DEFAULT_ONTOLOGY
    senses = (
        OntologyRevision.objects.filter(group_id=group_id, version=version)
        .values_list("senses", flat=True)
        .first()
    )
    return None if senses is None else ontology_of(senses, version=version)
