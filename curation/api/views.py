"""REST endpoints: sources (admins), episodes, claims with filters, a claim's history, the
ontology of a workspace (admins edit it), facts agents propose (contributors), sources read
again through today's extractors (admins)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common import api_parameters as parameters
from common.errors import NotFound, PermissionDenied
from curation import selectors, usecases
from curation.api.serializers import (
    ClaimSerializer,
    EntityRefSerializer,
    EntitySerializer,
    EpisodeSerializer,
    OntologySerializer,
    PredicateSenseInputSerializer,
    ProposalInputSerializer,
    ProposedSerializer,
    ReinstatementSerializer,
    RelatedSerializer,
    ReprocessingSerializer,
    ReprocessSerializer,
    RetractionSerializer,
    RetractSerializer,
    SourceCreateSerializer,
    SourceRunSerializer,
    SourceSerializer,
    claims_data,
    ontology_data,
)
from curation.domain.ontology import Ontology, PredicateSense
from curation.domain.ontology_records import MAX_NAME
from curation.domain.params import (
    HOPS_RANGE,
    PATHS_RANGE,
    TIER_RANGE,
    parse_claim_filters,
    parse_related,
)
from curation.domain.records import PREDICATE_PATTERN
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, EpisodeStatus, Reprocessing, Source
from curation.tasks import ingest_enqueue, reprocess_enqueue
from curation.usecases import (
    PROPOSERS_ONLY,
    SOURCE_ADMINS_ONLY,
    ProposalRefused,
    ReprocessRefused,
    Retraction,
    RetractionRefused,
    RunRefused,
    claim_reinstate,
    claim_retract,
    episode_retract,
    ontology_predicate_reset,
    ontology_predicate_set,
    source_create,
    source_retract,
)
from kernel.params import MAX_ID, InvalidQuery, ParamReader
from tenants.domain.scopes import Role
from tenants.principals import principal_of
from tenants.scoping import NOT_VISIBLE, SCOPE_PARAMETER, ScopeNarrowedList, scoped_list_schema


def _parsed[T](parse: Callable[[dict[str, str]], T], request: Request) -> T:
    """The query string through a domain parser; a bad one is a 400 with a message per field."""
    try:
        return parse(request.query_params.dict())
    except InvalidQuery as error:
        raise exceptions.ValidationError(error.errors) from None


@scoped_list_schema
class SourceListView(ScopeNarrowedList, generics.ListAPIView[Source]):
    """Sources of the scopes the caller administers; POST creates one."""

    serializer_class = SourceSerializer

    def get_queryset(self) -> QuerySet[Source]:
        administered = principal_of(self.request).groups_at_least(Role.ADMIN)
        return Source.objects.filter(group_id__in=administered).order_by("name")

    @extend_schema(request=SourceCreateSerializer, responses={201: SourceSerializer})
    def post(self, request: Request) -> Response:
        actor = principal_of(request)
        # A caller who administers no scope is refused before its body is read: what is
        # wrong with a body it could never send is no business of theirs.
        if not actor.groups_at_least(Role.ADMIN):
            raise exceptions.PermissionDenied(SOURCE_ADMINS_ONLY)
        form = SourceCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            source = source_create(actor=actor, **form.validated_data)
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except ValueError as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)


class EpisodeListView(ScopeNarrowedList, generics.ListAPIView[Episode]):
    """Episodes (fetched artifacts), newest first; filter by source and status."""

    serializer_class = EpisodeSerializer

    @extend_schema(
        parameters=[
            parameters.record_id("source", description="only episodes of this source"),
            parameters.choice("status", EpisodeStatus.values, description="only this status"),
            SCOPE_PARAMETER,
        ],
        responses={200: EpisodeSerializer(many=True), 404: NOT_VISIBLE},
    )
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Episode]:
        source, episode_status = _parsed(_episode_filters, self.request)
        queryset = Episode.objects.order_by("-fetched_at", "-pk")
        if source is not None:
            queryset = queryset.filter(source_id=source)
        if episode_status is not None:
            queryset = queryset.filter(status=episode_status)
        return queryset


def _episode_filters(params: dict[str, str]) -> tuple[int | None, str | None]:
    """(source id, status); other parameters are left to the paginator."""
    reader = ParamReader(params)
    source = reader.integer("source", low=1, high=MAX_ID)
    episode_status = reader.choice("status", EpisodeStatus.values)
    reader.check()
    return source, episode_status


class ClaimListView(ScopeNarrowedList, generics.ListAPIView[Claim]):
    """Claims, published now by default; `as_of` returns what was valid then."""

    serializer_class = ClaimSerializer

    @extend_schema(
        parameters=[
            parameters.choice(
                "status", [s.value for s in ClaimStatus], description="only this status"
            ),
            parameters.text("predicate", description="only this PREDICATE"),
            parameters.text("subject", description="only claims about this subject"),
            parameters.record_id("source", description="only claims from this source"),
            parameters.integer(
                "tier", low=TIER_RANGE[0], high=TIER_RANGE[1], description="only this trust tier"
            ),
            parameters.instant(description="what was valid then, instead of what is published now"),
            SCOPE_PARAMETER,
        ],
        responses={200: ClaimSerializer(many=True), 404: NOT_VISIBLE},
    )
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Claim]:
        return selectors.claims_filtered(filters=_parsed(parse_claim_filters, self.request))


class ClaimHistoryView(generics.GenericAPIView[Claim]):
    """Every value the claim's subject and predicate have had, oldest first."""

    serializer_class = ClaimSerializer

    def get(self, request: Request, claim_id: int) -> Response:
        history = selectors.claim_history(claim_id=claim_id)
        if not history:
            raise exceptions.NotFound("No such claim.")
        return Response(ClaimSerializer(history, many=True).data)


def _entity(entity_id: int) -> selectors.EntityView:
    """The visible entity (through RLS), or a 404; an id past any key is none either."""
    view = selectors.entity_view(entity_id=entity_id) if entity_id <= MAX_ID else None
    if view is None:
        raise exceptions.NotFound("No such entity.")
    return view


class EntityDetailView(generics.GenericAPIView[Claim]):
    """An entity: its name and aliases, facts about it now and before, what merged into it.

    An id merged into another entity answers with the survivor.
    """

    serializer_class = EntitySerializer

    def get(self, request: Request, entity_id: int) -> Response:
        return Response(EntitySerializer(_entity(entity_id)).data)


class EntityRelatedView(generics.GenericAPIView[Claim]):
    """Entities and values within `hops` (1-3) of the entity, valid now or `as_of`, through
    the given predicates (comma-separated) only if any; each with the claims on its path.

    Read from the graph, then every claim re-read in Postgres under the caller's tenancy:
    a path with a claim the caller may not see, or no longer valid, is left out.
    """

    serializer_class = RelatedSerializer

    @extend_schema(
        parameters=[
            parameters.integer(
                "hops", low=HOPS_RANGE[0], high=HOPS_RANGE[1], description="default 1"
            ),
            parameters.instant(description="valid then, instead of now"),
            parameters.text("predicate", description="comma-separated, e.g. RUNS_ON"),
            parameters.integer(
                "limit", low=PATHS_RANGE[0], high=PATHS_RANGE[1], description="paths (default 100)"
            ),
        ],
        responses={200: RelatedSerializer},
    )
    def get(self, request: Request, entity_id: int) -> Response:
        query = _parsed(parse_related, request)
        entity = selectors.entity_visible(entity_id=entity_id) if entity_id <= MAX_ID else None
        if entity is None:
            raise exceptions.NotFound("No such entity.")
        paths = usecases.entity_related(
            entity=entity, principal=principal_of(request), query=query, read=claims_data
        )
        found = selectors.Neighbourhood.of(entity, paths)
        return Response({  # RelatedSerializer's shape; the claims are serialised already
            "entity": EntityRefSerializer(entity).data,
            "neighbours": [
                {"entity_id": path.entity_id, "name": path.name, "type": path.kind,
                 "hops": path.hops, "claim_ids": path.claim_ids}
                for path in found.neighbours
            ],
            "claims": found.claims,
        })  # fmt: skip


class _RetractView(APIView):
    """Withdraw it, with a reason (reviewer or admin of its scope); see `retract` below."""

    model: type[Claim] | type[Episode] | type[Source] = Claim
    retract: Callable[..., Retraction]
    keyword = "claim_id"

    @extend_schema(request=RetractSerializer, responses={200: RetractionSerializer})
    def post(self, request: Request, pk: int) -> Response:
        form = RetractSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        if pk > MAX_ID or not self.model.objects.filter(pk=pk).exists():  # RLS: others' too
            raise exceptions.NotFound(f"No such {self.model._meta.verbose_name}.")
        try:
            done = type(self).retract(
                actor=principal_of(request), reason=form.validated_data["reason"],
                **{self.keyword: pk},
            )  # fmt: skip
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except RetractionRefused as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        return Response(
            RetractionSerializer(
                {"target": done.target, "retracted": list(done.retracted),
                 "restored": list(done.restored), "kept": done.kept, "message": done.message}
            ).data
        )  # fmt: skip


class ClaimRetractView(_RetractView):
    """Withdraw one claim: hidden now, still found `as_of` a time it was valid; what it
    superseded is current again unless replaced since."""

    model = Claim
    retract = staticmethod(claim_retract)
    keyword = "claim_id"


class EpisodeRetractView(_RetractView):
    """Withdraw one fetched document and the claims only it supports."""

    model = Episode
    retract = staticmethod(episode_retract)
    keyword = "episode_id"


class SourceRetractView(_RetractView):
    """Withdraw a source: its documents, the claims only they support; its schedule stops."""

    model = Source
    retract = staticmethod(source_retract)
    keyword = "source_id"


class ClaimReinstateView(APIView):
    """Undo a claim's retraction by a new decision: its value is published again from now
    (the retracted claim keeps its history); a reason is required."""

    @extend_schema(
        request=RetractSerializer,
        responses={
            200: ReinstatementSerializer,
            400: OpenApiResponse(description="no reason, or the claim is not retracted"),
            403: OpenApiResponse(description="not a reviewer or admin of its scope"),
            404: OpenApiResponse(description="no such claim visible to the caller"),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        form = RetractSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        if pk > MAX_ID or not Claim.objects.filter(pk=pk).exists():  # RLS: others' too
            raise exceptions.NotFound("No such claim.")
        try:
            done = claim_reinstate(
                actor=principal_of(request), claim_id=pk, reason=form.validated_data["reason"]
            )
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except RetractionRefused as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        return Response(
            ReinstatementSerializer(
                {"retracted": done.retracted, "current": done.current, "created": done.created,
                 "message": done.message}
            ).data
        )  # fmt: skip


# --- the ontology ----------------------------------------------------------------------

SCOPE = OpenApiParameter(
    "scope", {"type": "string", "minLength": 1, "maxLength": 40}, required=True,
    description="the workspace's group id (one of the caller's: see /api/v1/me)",
)  # fmt: skip
PREDICATE_NAME = OpenApiParameter(
    "name", {"type": "string", "pattern": PREDICATE_PATTERN.pattern, "maxLength": MAX_NAME},
    location=OpenApiParameter.PATH, description="the PREDICATE, e.g. RUNS_ON",
)  # fmt: skip
ONTOLOGY_EDIT_RESPONSES = {
    200: OntologySerializer,
    400: OpenApiResponse(description="bad input: the message says which rule it breaks"),
    403: OpenApiResponse(description="not an admin of the workspace"),
    404: OpenApiResponse(description="no such scope visible to the caller"),
}


def _scope(request: Request) -> str:
    """The `scope` the caller names: one of its own group ids, else a 404 (never trusted)."""
    scope = request.query_params.get("scope", "")
    if not scope:
        raise exceptions.ValidationError({"scope": "name the workspace by its group id"})
    if scope not in principal_of(request).group_ids:
        raise exceptions.NotFound("No such scope.")
    return scope


def _edited(edit: Callable[[], Ontology], scope: str) -> Response:
    """The ontology after the edit; the service's refusals as 403 and 400."""
    try:
        ontology = edit()
    except PermissionDenied as error:
        raise exceptions.PermissionDenied(str(error)) from None
    except ValueError as error:
        raise exceptions.ValidationError({"detail": str(error)}) from None
    return Response(OntologySerializer(ontology_data(scope, ontology)).data)


class OntologyView(APIView):
    """A workspace's ontology: for each predicate its label, words, question forms, object
    type and whether it is functional; the defaults where the workspace set none."""

    @extend_schema(
        parameters=[SCOPE],
        responses={200: OntologySerializer,
                   404: OpenApiResponse(description="no such scope visible to the caller")},
    )  # fmt: skip
    def get(self, request: Request) -> Response:
        scope = _scope(request)
        ontology = selectors.ontology_for(scope)
        return Response(OntologySerializer(ontology_data(scope, ontology)).data)


class OntologyPredicateView(APIView):
    """One predicate's sense in a workspace: PUT sets it, DELETE resets it to the default
    (admins of the workspace; audited; each change moves the ontology's version)."""

    @extend_schema(
        parameters=[SCOPE, PREDICATE_NAME], request=PredicateSenseInputSerializer,
        responses=ONTOLOGY_EDIT_RESPONSES,
    )  # fmt: skip
    def put(self, request: Request, name: str) -> Response:
        # Parsed first: a body that is no JSON (or nested too deep) is a 400 whatever else.
        form = PredicateSenseInputSerializer(data=request.data)
        scope = _scope(request)
        form.is_valid(raise_exception=True)
        data = form.validated_data

        def edit() -> Ontology:
            entries = {key: tuple(data[key]) for key in ("words", "questions")}
            sense = PredicateSense(name=name, **{**data, **entries})
            return ontology_predicate_set(actor=principal_of(request), group_id=scope, sense=sense)

        return _edited(edit, scope)

    @extend_schema(parameters=[SCOPE, PREDICATE_NAME], responses=ONTOLOGY_EDIT_RESPONSES)
    def delete(self, request: Request, name: str) -> Response:
        scope, actor = _scope(request), principal_of(request)
        return _edited(
            lambda: ontology_predicate_reset(actor=actor, group_id=scope, name=name), scope
        )


# --- proposals -------------------------------------------------------------------------


class ProposalView(APIView):
    """Propose a fact (contributors and above; agents use this): it waits in the reviewers'
    proposals queue, attributed to the caller, and is neither published nor searchable
    until a reviewer accepts it. The same proposal again returns the first (200)."""

    @extend_schema(
        request=ProposalInputSerializer,
        responses={
            201: ProposedSerializer,
            200: OpenApiResponse(ProposedSerializer, description="proposed before: that one"),
            403: OpenApiResponse(description="not a contributor, or proposals are turned off"),
            404: OpenApiResponse(description="no such scope visible to the caller"),
        },
    )
    def post(self, request: Request) -> Response:
        actor = principal_of(request)
        # A caller who may propose to no scope is refused before its body is read.
        if not actor.groups_at_least(Role.CONTRIBUTOR):
            raise exceptions.PermissionDenied(PROPOSERS_ONLY)
        form = ProposalInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            done = usecases.proposal_record(
                actor=actor, group_id=data.get("scope"), subject=data["subject"],
                predicate=data["predicate"], object=data["object"],
                evidence=data["evidence"], source_url=data["source_url"],
            )  # fmt: skip
        except NotFound as error:
            raise exceptions.NotFound(str(error)) from None
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except ProposalRefused as error:
            raise exceptions.ValidationError(error.errors) from None
        claim = done.claim
        body = {"claim_id": claim.pk, "status": claim.status, "group_id": claim.group_id,
                "created": done.created, "message": done.message}  # fmt: skip
        code = status.HTTP_201_CREATED if done.created else status.HTTP_200_OK
        return Response(ProposedSerializer(body).data, status=code)


# --- running a source now ----------------------------------------------------------------


class SourceRunView(APIView):
    """Run a source now, from its cursor (admins of its scope): the run is sent to a
    worker (202); follow it in the source's `progress` and `last_run_*` under
    /api/v1/sources. A run asked for earlier that has not started or ended yet is
    answered instead (200), so a retry sends nothing twice. Refused with why: a run of
    the source is going (409), the source is disabled or is the agents' (400)."""

    @extend_schema(
        request=None,
        responses={
            202: OpenApiResponse(SourceRunSerializer, description="asked for, and sent"),
            200: OpenApiResponse(SourceRunSerializer, description="a run asked for still waits"),
            400: OpenApiResponse(description="a disabled source, or one with nothing to fetch"),
            403: OpenApiResponse(description="not an admin of the source's scope"),
            404: OpenApiResponse(description="nothing with this id visible to the caller"),
            409: OpenApiResponse(description="a run of the source is going"),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        if request.data:
            raise exceptions.ValidationError({"detail": "this action takes no body"})
        if pk > MAX_ID or not Source.objects.filter(pk=pk).exists():  # RLS: others' too
            raise exceptions.NotFound("No such source.")
        try:
            asked = ingest_enqueue(actor=principal_of(request), source_id=pk)
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except RunRefused as error:
            if error.going:
                return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
            raise exceptions.ValidationError({"detail": str(error)}) from None
        message = (
            "run sent to a worker" if asked.sent
            else "a run asked for at this time has not ended yet: nothing sent again"
        )  # fmt: skip
        body = {"sent": asked.sent, "requested_at": asked.requested_at, "message": message,
                "source": asked.source}  # fmt: skip
        code = status.HTTP_202_ACCEPTED if asked.sent else status.HTTP_200_OK
        return Response(SourceRunSerializer(body).data, status=code)


# --- reprocessing ----------------------------------------------------------------------

REPROCESSING_RESPONSES = {
    403: OpenApiResponse(description="not an admin of the source's scope"),
    404: OpenApiResponse(description="nothing with this id visible to the caller"),
}


def _run_body(request: Request, run: Reprocessing) -> dict[str, Any]:
    return dict(ReprocessingSerializer(run, context={"request": request}).data)


class SourceReprocessView(APIView):
    """Read a source's stored documents again through today's extractors (admins of its
    scope): only those an older extraction version read, or all with `everything`. The
    run works in the background; follow it at its `url`. A run of the source already
    going is answered instead (200): one runs at a time."""

    @extend_schema(
        request=ReprocessSerializer,
        responses={
            202: OpenApiResponse(ReprocessingSerializer, description="started, and queued"),
            200: OpenApiResponse(ReprocessingSerializer, description="the run already going"),
            400: OpenApiResponse(description="bad input, or a source that cannot be read again"),
            **REPROCESSING_RESPONSES,
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        form = ReprocessSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        source = Source.objects.filter(pk=pk).first() if pk <= MAX_ID else None  # RLS: others'
        if source is None:
            raise exceptions.NotFound("No such source.")
        try:
            run, started = reprocess_enqueue(
                actor=principal_of(request), source=source, **form.validated_data
            )
        except PermissionDenied as error:  # an organisation's, read through its claims, too
            raise exceptions.PermissionDenied(str(error)) from None
        except ReprocessRefused as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        code = status.HTTP_202_ACCEPTED if started else status.HTTP_200_OK
        return Response(_run_body(request, run), status=code)


class ReprocessingView(APIView):
    """A reprocessing run: how many documents it has read of its total, what they came to
    (claims kept, new, withdrawn, to re-check), and whether it finished or failed (why)."""

    @extend_schema(responses={200: ReprocessingSerializer, **REPROCESSING_RESPONSES})
    def get(self, request: Request, pk: int) -> Response:
        run = Reprocessing.objects.filter(pk=pk).first() if pk <= MAX_ID else None  # RLS
        if run is None:
            raise exceptions.NotFound("No such reprocessing.")
        if not principal_of(request).can(Role.ADMIN, run.group_id):
            raise exceptions.PermissionDenied("a reprocessing is followed by its scope's admins")
        return Response(_run_body(request, run))
