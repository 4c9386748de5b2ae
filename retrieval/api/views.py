"""Search (live or of a sealed snapshot), context packs, feedback, erasure and knowledge
snapshots."""

from __future__ import annotations

import time

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common import api_parameters as parameters
from common.errors import PermissionDenied
from curation.domain.params import TIER_RANGE
from curation.models import Episode, Source, Tombstone
from kernel.params import MAX_ID
from kernel.timing import before_view, view_done
from retrieval import usecases
from retrieval.api.serializers import (
    ContextPackSerializer,
    EraseSerializer,
    SearchResultSerializer,
    SnapshotCreateSerializer,
    SnapshotSerializer,
    TombstoneSerializer,
    WordSuggestionSerializer,
)
from retrieval.domain.context import (
    DEFAULT_BUDGET,
    MAX_BUDGET,
    MIN_BUDGET,
    ContextRequest,
    parse_context,
)
from retrieval.domain.query import (
    DEFAULT_K,
    GROUP_ID,
    MAX_K,
    MAX_QUERY_CHARS,
    InvalidQuery,
    Query,
    parse_query,
)
from retrieval.models import SearchHit, Snapshot, WordSuggestion
from retrieval.tasks import snapshots_build
from retrieval.usecases import (
    SNAPSHOT_ADMINS_ONLY,
    ErasureRefused,
    SnapshotRefused,
    SuggestionDecided,
    pack_payload,
    server_timing,
)
from tenants.domain.access import Principal
from tenants.domain.scopes import Role
from tenants.principals import principal_of
from tenants.scoping import NOT_VISIBLE, SCOPE_PARAMETER, request_narrowed

# What `parse_query` accepts as `q`: at most MAX_QUERY_CHARS, no NUL, and something
# besides what `str.strip` trims (regex \s, plus the separators \x1c-\x1f and \x85).
QUERY_TEXT = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_QUERY_CHARS,
    "pattern": r"^[^\x00]*[^\s\x00\x1c-\x1f\x85][^\x00]*$",
}


def _query(request: Request) -> Query:
    """The parsed query string; a bad one is a 400 with a message per parameter."""
    try:
        return parse_query(request.query_params.dict())
    except InvalidQuery as error:
        raise exceptions.ValidationError(error.errors) from None


class SearchView(APIView):
    """Ranked, cited, time-aware search over the caller's knowledge."""

    # Each search embeds its query and may call a reranker: it has a rate limit of its own.
    throttle_scope = "search"

    @extend_schema(
        parameters=[
            OpenApiParameter("q", QUERY_TEXT, required=True, description="the query"),
            parameters.integer("k", low=1, high=MAX_K, description=f"hits (default {DEFAULT_K})"),
            parameters.instant(description="facts valid then"),
            parameters.text("predicate", description="only this PREDICATE"),
            parameters.text("entity", description="only claims about this subject"),
            parameters.record_id("source", description="only claims from this source"),
            parameters.integer(
                "tier", low=TIER_RANGE[0], high=TIER_RANGE[1], description="only this trust tier"
            ),
            OpenApiParameter(
                "scope",
                {"type": "string", "pattern": GROUP_ID.pattern},
                description="only this scope (a group id the caller reads) and what is under it",
            ),
            parameters.record_id(
                "snapshot",
                description="search this sealed knowledge snapshot instead of the live index "
                "(its hits carry no hit id: votes are for live hits)",
            ),
        ],
        responses={
            200: SearchResultSerializer,
            400: OpenApiResponse(description="a bad parameter, with a message for each"),
            404: OpenApiResponse(description="no such snapshot or scope visible to the caller"),
            409: OpenApiResponse(
                description="the snapshot cannot be searched (not sealed, its content no "
                "longer matches its seal, or its pins cannot be honoured); says why"
            ),
        },
    )
    def get(self, request: Request) -> Response:
        entered = time.perf_counter()
        query = _query(request)
        cited = _searched(principal_of(request), query).result
        started = time.perf_counter()
        data = SearchResultSerializer(cited).data
        timings = {
            # Before the view: the middleware in, authentication, the tenant's transaction
            # and throttling (the middleware adds "post": rendering and the way out).
            **before_view(request._request, entered),
            **cited.timings,
            "serialize": (time.perf_counter() - started) * 1000,
        }
        response = Response(data)
        response["Server-Timing"] = server_timing(timings)
        view_done(request._request)
        return response


def _context_request(request: Request) -> ContextRequest:
    """The parsed context request; a bad one is a 400 with a message per parameter."""
    try:
        return parse_context(request.query_params.dict())
    except InvalidQuery as error:
        raise exceptions.ValidationError(error.errors) from None


class ContextView(APIView):
    """A budgeted block of the best cited facts for a question, for an agent's prompt."""

    throttle_scope = "search"  # it runs a search: the same rate limit

    @extend_schema(
        parameters=[
            OpenApiParameter("q", QUERY_TEXT, required=True, description="the question"),
            parameters.integer(
                "budget",
                low=MIN_BUDGET,
                high=MAX_BUDGET,
                description=f"tokens the pack's text may take (default {DEFAULT_BUDGET}), "
                "counted by the local MiniLM's WordPiece tokenizer",
            ),
            parameters.instant(description="facts current then (default: now)"),
            OpenApiParameter(
                "scope",
                {"type": "string", "pattern": GROUP_ID.pattern},
                description="only this scope (a group id the caller reads) and what is under it",
            ),
            parameters.record_id(
                "snapshot", description="pack from this sealed knowledge snapshot's search"
            ),
        ],
        responses={
            200: ContextPackSerializer,
            400: OpenApiResponse(description="a bad parameter, with a message for each"),
            404: OpenApiResponse(description="no such snapshot or scope visible to the caller"),
            409: OpenApiResponse(
                description="the snapshot cannot be packed (not sealed, its content no longer "
                "matches its seal, or its pins, the assembler's version among them, cannot be "
                "honoured); says why"
            ),
        },
    )
    def get(self, request: Request) -> Response:
        wanted = _context_request(request)
        try:
            served = usecases.context_pack(principal_of(request), wanted)
        except usecases.ScopeNotVisible as error:
            raise exceptions.NotFound(str(error)) from None
        except Snapshot.DoesNotExist:
            raise exceptions.NotFound("No such snapshot.") from None
        except SnapshotRefused as error:
            raise SnapshotConflict(str(error)) from None
        return Response(pack_payload(served))


def _searched(principal: Principal, query: Query) -> usecases.Searched:
    """The search use case's answer; 404 for a scope or snapshot out of reach, 409 for a
    snapshot that cannot be searched (says why)."""
    try:
        return usecases.search(principal, query)
    except usecases.ScopeNotVisible as error:
        raise exceptions.NotFound(str(error)) from None
    except Snapshot.DoesNotExist:
        raise exceptions.NotFound("No such snapshot.") from None
    except SnapshotRefused as error:
        raise SnapshotConflict(str(error)) from None


class SnapshotConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The snapshot cannot be searched."
    default_code = "snapshot_refused"


class FeedbackInput(serializers.Serializer[None]):
    hit_id = serializers.IntegerField(min_value=1)
    helpful = serializers.BooleanField()


class FeedbackVoteSerializer(serializers.Serializer[None]):
    """A recorded vote: the hit, the claim it returned, thumbs up or down."""

    hit_id = serializers.IntegerField()
    claim_id = serializers.IntegerField()
    helpful = serializers.BooleanField()


class FeedbackView(APIView):
    """Thumbs up or down on a returned hit (feeds calibration)."""

    @extend_schema(
        request=FeedbackInput,
        responses={
            201: FeedbackVoteSerializer,
            404: OpenApiResponse(description="no such hit visible to the caller"),
        },
    )
    def post(self, request: Request) -> Response:
        form = FeedbackInput(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            vote = usecases.feedback_record(
                hit_id=form.validated_data["hit_id"],
                helpful=form.validated_data["helpful"],
                user_id=principal_of(request).user_id,
            )
        except SearchHit.DoesNotExist:
            raise exceptions.NotFound("No such hit.") from None
        return Response(
            {"hit_id": vote.hit_id, "claim_id": vote.claim_id, "helpful": vote.helpful},
            status=status.HTTP_201_CREATED,
        )


class _EraseView(APIView):
    """Erase it (workspace admin): its content leaves every store; a tombstone stays."""

    kind = "source"

    @extend_schema(request=EraseSerializer, responses={200: TombstoneSerializer})
    def post(self, request: Request, pk: int) -> Response:
        form = EraseSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        model = Source if self.kind == "source" else Episode
        if pk > MAX_ID or not model.objects.filter(pk=pk).exists():  # RLS: others' too
            raise exceptions.NotFound(f"No such {self.kind}.")
        try:
            tombstone = usecases.erase(
                actor=principal_of(request), kind=self.kind, target_id=pk,
                reason=form.validated_data["reason"], confirm=form.validated_data["confirm"],
            )  # fmt: skip
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except ErasureRefused as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        # Postgres first: the erasure is committed before anything else is touched.
        transaction.on_commit(
            lambda: usecases.erasure_cleanup_at_once(tombstone.pk, tombstone.group_id)
        )
        return Response(TombstoneSerializer(tombstone).data)


class SourceEraseView(_EraseView):
    """Erase a source: every episode of it, the claims only they support, the source."""

    kind = "source"


class EpisodeEraseView(_EraseView):
    """Erase one episode (a fetched document) and the claims only it supports."""

    kind = "episode"


class TombstoneView(APIView):
    """What remains of an erasure: counts, status, no content."""

    @extend_schema(responses={200: TombstoneSerializer})
    def get(self, request: Request, pk: int) -> Response:
        tombstone = Tombstone.objects.filter(pk=pk).first() if pk <= MAX_ID else None
        if tombstone is None:
            raise exceptions.NotFound("No such tombstone.")
        return Response(TombstoneSerializer(tombstone).data)


class QuestionWordsView(APIView):
    """Question words learnt from votes, by predicate, newest first: which words the
    workspace's people use for a relation that its ontology does not list. Admins accept
    (the word joins the predicate's sense) or dismiss each; nothing is added otherwise."""

    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, description="only this workspace (one of the caller's)"),
            OpenApiParameter(
                "status", str, enum=[*WordSuggestion.Status.values, "all"],
                description="pending (default), accepted, dismissed, or all",
            ),
        ],
        responses={200: WordSuggestionSerializer(many=True),
                   400: OpenApiResponse(description="an unknown status"),
                   404: OpenApiResponse(description="no such scope visible to the caller")},
    )  # fmt: skip
    def get(self, request: Request) -> Response:
        wanted = request.query_params.get("status", WordSuggestion.Status.PENDING)
        if wanted not in {*WordSuggestion.Status.values, "all"}:
            choices = ", ".join([*WordSuggestion.Status.values, "all"])
            raise exceptions.ValidationError({"status": f"one of {choices}"})
        rows = WordSuggestion.objects.select_related("decided_by").order_by("-updated_at", "-pk")
        if wanted != "all":
            rows = rows.filter(status=wanted)
        if scope := request.query_params.get("scope"):
            if scope not in principal_of(request).group_ids:
                raise exceptions.NotFound("No such scope.")
            rows = rows.filter(group_id=scope)
        return Response(WordSuggestionSerializer(rows[:500], many=True).data)


class QuestionWordDecisionView(APIView):
    """Accept (the word is added to the predicate's sense: an audited ontology edit) or
    dismiss (never suggested again) a learnt question word; the workspace's admins."""

    decision = "accept"

    @extend_schema(
        request=None,
        responses={200: WordSuggestionSerializer,
                   400: OpenApiResponse(description="the sense cannot take another word"),
                   403: OpenApiResponse(description="not an admin of its workspace"),
                   404: OpenApiResponse(description="no such suggestion visible to the caller"),
                   409: OpenApiResponse(description="accepted or dismissed before")},
    )  # fmt: skip
    def post(self, request: Request, pk: int) -> Response:
        row = WordSuggestion.objects.filter(pk=pk).first() if pk <= MAX_ID else None
        if row is None:  # row-level security: another workspace's is not there
            raise exceptions.NotFound("No such suggestion.")
        decide = (
            usecases.word_suggestion_accept
            if self.decision == "accept"
            else usecases.word_suggestion_dismiss
        )
        try:
            decided = decide(actor=principal_of(request), group_id=row.group_id, pk=row.pk)
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except SuggestionDecided as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        except ValueError as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        return Response(WordSuggestionSerializer(decided).data)


class SnapshotListView(APIView):
    """Knowledge snapshots of the caller's workspaces, newest first; POST takes one."""

    @extend_schema(
        parameters=[SCOPE_PARAMETER],
        responses={200: SnapshotSerializer(many=True), 404: NOT_VISIBLE},
    )
    def get(self, request: Request) -> Response:
        with request_narrowed(request):
            snapshots = Snapshot.objects.order_by("-created_at", "-pk")[:200]
            return Response(SnapshotSerializer(snapshots, many=True).data)

    @extend_schema(
        request=SnapshotCreateSerializer,
        responses={
            202: SnapshotSerializer,
            400: OpenApiResponse(description="no name, or bad input"),
            403: OpenApiResponse(description="not an admin of the workspace"),
        },
    )
    def post(self, request: Request) -> Response:
        actor = principal_of(request)
        # A caller who administers no workspace is refused before its body is read.
        if not actor.groups_at_least(Role.ADMIN):
            raise exceptions.PermissionDenied(SNAPSHOT_ADMINS_ONLY)
        form = SnapshotCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            snapshot = usecases.snapshot_take(actor=actor, **form.validated_data)
        except PermissionDenied as error:
            raise exceptions.PermissionDenied(str(error)) from None
        except SnapshotRefused as error:
            raise exceptions.ValidationError({"detail": str(error)}) from None
        # Built by a maintenance worker once this commits (and by beat's sweep, should
        # this message be lost): 202, its status says when it is sealed.
        transaction.on_commit(lambda: snapshots_build.delay(snapshot.pk))
        return Response(SnapshotSerializer(snapshot).data, status=status.HTTP_202_ACCEPTED)


class SnapshotView(APIView):
    """One knowledge snapshot: pins, counts, seal status and notes."""

    @extend_schema(responses={200: SnapshotSerializer})
    def get(self, request: Request, pk: int) -> Response:
        snapshot = Snapshot.objects.filter(pk=pk).first() if pk <= MAX_ID else None
        if snapshot is None:
            raise exceptions.NotFound("No such snapshot.")
        return Response(SnapshotSerializer(snapshot).data)
